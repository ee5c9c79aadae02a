// `deno task demo`: the main job on the built-in model, with no key and no network. Two turns
// on one context in a temp copy of examples/demo/ (the second resumes the first), then the
// recording of the last run, where the data root is, and the commands to type next.
import { sandboxFromEnv, sourceRunFlags } from "./permissions.ts";

const repo = new URL("..", import.meta.url).pathname;
const main = `${repo}main.ts`;
const scratch = await Deno.makeTempDir({ prefix: "reins-demo-" });
const work = `${scratch}/project`;
const home = `${scratch}/home`;
await Deno.mkdir(work);
for (const entry of Deno.readDirSync(`${repo}examples/demo`)) {
  if (entry.isFile) {
    await Deno.copyFile(`${repo}examples/demo/${entry.name}`, `${work}/${entry.name}`);
  }
}

const env = { ...Deno.env.toObject(), REINS_HOME: home };
const flags = sourceRunFlags(sandboxFromEnv(env, work));

const bold = Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR")
  ? (text: string) => `\x1b[1m${text}\x1b[0m`
  : (text: string) => text;

async function reins(...args: string[]): Promise<void> {
  const shown = args.map((a) => (/\s/.test(a) ? `'${a}'` : a)).join(" ");
  console.log(`\n${bold(`$ reins ${shown}`)}`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--config", `${repo}deno.json`, ...flags, main, ...args],
    cwd: work,
    env,
  }).spawn().status;
  if (!status.success) {
    console.error(`demo: reins ${args[0]} exited with code ${status.code}`);
    Deno.exit(status.code);
  }
}

const started = performance.now();
await reins("run", "--context", "demo", "Look around this project and write down what you find.");
await reins("run", "--context", "demo", "What did I ask you last time, and what did you write?");
await reins("contexts");
await reins("show", "last");
console.log(`\nThe project the agent worked in: ${work}`);
console.log(`The data root (runs, events, contexts): ${home}`);
console.log(`Done in ${((performance.now() - started) / 1000).toFixed(1)} s.`);

// What to type next, literally: these runs live in the demo's own data root.
const installed = onPath("reins");
const reinsCommand = installed ? "reins" : "deno task reins";
console.log(`\n${bold("Next")}, look at these runs yourself:`);
console.log(`  ${reinsCommand} --home ${home} runs`);
console.log(`  ${reinsCommand} --home ${home} show last --verbose`);
console.log(
  installed
    ? "and start your own, in a project of yours: reins run 'list the files and summarise them'"
    : "`deno task install` puts a reins on your PATH, for those and for runs of your own: " +
      "reins run 'list the files and summarise them'",
);

/** Whether an executable `name` is on the PATH. */
function onPath(name: string): boolean {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    try {
      const info = Deno.statSync(`${dir}/${name}`);
      if (info.isFile && ((info.mode ?? 0) & 0o111) !== 0) return true;
    } catch {
      // not there
    }
  }
  return false;
}
