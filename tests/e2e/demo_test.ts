// `deno task demo`: the main job on the built-in model, as a person would run it.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;

Deno.test("deno task demo runs two turns on one context and shows the last run", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "demo"],
    cwd: REPO,
    env: { NO_COLOR: "1", PATH: withoutReins() },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  assert.match(stdout, /\$ reins run --context demo 'Look around this project/);
  assert.match(
    stdout,
    /Last time you asked “Look around this project and write down what you find\.”/,
  );
  assert.match(stdout, /\$ reins contexts\nCONTEXT +SESSION/);
  assert.match(stdout, /\$ reins show last\n/);
  const home = /The data root \(runs, events, contexts\): (\S+)/.exec(stdout)?.[1];
  assert.ok(home, stdout);
  const runs = [...Deno.readDirSync(`${home}/runs`)].filter((e) =>
    e.isDirectory && !e.name.startsWith(".")
  );
  assert.equal(runs.length, 2);
  const project = /The project the agent worked in: (\S+)/.exec(stdout)![1];
  assert.match(await Deno.readTextFile(`${project}/NOTES.md`), /^# Notes/);

  // regression: the demo ended without saying how to go on. Its last lines say what to type
  // next, with its data root; typed as they are (no reins on this PATH: `deno task reins`), they
  // show its runs.
  const lines = stdout.trimEnd().split("\n");
  const next = lines.findIndex((line) => line.startsWith("Next, look at these runs yourself:"));
  assert.ok(next > 0 && next >= lines.length - 4, stdout);
  const commands = lines.slice(next + 1, next + 3).map((line) => line.trim());
  assert.deepEqual(commands, [
    `deno task reins --home ${home} runs`,
    `deno task reins --home ${home} show last --verbose`,
  ]);
  assert.match(lines.at(-1)!, /deno task install/);
  const listed = await new Deno.Command("sh", {
    args: ["-c", commands[0]],
    cwd: REPO,
    env: { NO_COLOR: "1", PATH: withoutReins() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const table = new TextDecoder().decode(listed.stdout);
  assert.equal(listed.code, 0, new TextDecoder().decode(listed.stderr));
  assert.equal(table.trimEnd().split("\n").length, 3, table);
  assert.match(table, /completed +reins +demo/);
  await Deno.remove(home.replace(/\/home$/, ""), { recursive: true });
});

/** The PATH with no reins on it (the demo then says `deno task reins`). */
function withoutReins(): string {
  return (Deno.env.get("PATH") ?? "").split(":").filter((dir) => {
    try {
      Deno.statSync(`${dir}/reins`);
      return false;
    } catch {
      return true;
    }
  }).join(":");
}
