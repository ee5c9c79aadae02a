// `deno task install [--dir DIR] [--force] [--uninstall]`: puts a `reins` on the PATH that runs
// this checkout's main.ts under the binary's sandbox (scripts/reins.sh) — a few lines of sh that
// name this checkout and this Deno. Where: --dir, else $DENO_INSTALL_ROOT/bin (where `deno
// install` puts programs), else ~/.local/bin. It fetches the locked dependencies first, so the
// first `reins` needs no network, and says what to add to PATH when that directory is not on it.
import { parseArgs } from "node:util";

const MARKER = "# reins launcher, written by `deno task install`";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    dir: { type: "string" },
    force: { type: "boolean", default: false },
    uninstall: { type: "boolean", default: false },
  },
});

const repo = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const env = Deno.env.toObject();
const home = env.HOME ?? "";
const dir = values.dir ??
  (env.DENO_INSTALL_ROOT
    ? `${env.DENO_INSTALL_ROOT.replace(/\/+$/, "")}/bin`
    : `${home}/.local/bin`);
const target = `${dir}/reins`;

function fail(message: string, hint: string): never {
  console.error(`deno task install: ${message}\nhint: ${hint}`);
  Deno.exit(1);
}

/** What is at `target` now: nothing, our launcher, or something else. */
function existing(): "none" | "ours" | "other" {
  try {
    return Deno.readTextFileSync(target).includes(MARKER) ? "ours" : "other";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "none";
    if (error instanceof Deno.errors.IsADirectory) return "other";
    throw error;
  }
}

const found = existing();
if (values.uninstall) {
  if (found === "other") fail(`${target} is not a reins launcher`, "remove it yourself");
  if (found === "ours") Deno.removeSync(target);
  console.log(found === "ours" ? `removed ${target}` : `nothing to remove: no ${target}`);
  Deno.exit(0);
}
if (found === "other" && !values.force) {
  fail(
    `${target} exists and is not a reins launcher`,
    "move it away, install elsewhere with --dir DIR, or replace it with --force",
  );
}

// The locked dependencies, fetched now rather than by the first `reins` (which may be offline).
const cached = await new Deno.Command(Deno.execPath(), {
  args: [
    "cache",
    "--quiet",
    "--config",
    `${repo}/deno.json`,
    `${repo}/main.ts`,
    `${repo}/scripts/sandbox_flags.ts`,
  ],
  stdout: "inherit",
  stderr: "inherit",
}).spawn().status;
if (!cached.success) {
  fail("cannot fetch reins's dependencies", "check that the npm registry can be reached");
}

const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`;
// reins.sh is read into this shell (`.`), not run by another: a shell fewer on every start.
const launcher = [
  "#!/bin/sh",
  MARKER,
  `# for the checkout ${repo}: run \`deno task install\` there again if it moves.`,
  `set -- --launcher ${quote(Deno.execPath())} ${quote(repo)} "$@"`,
  `. ${quote(`${repo}/scripts/reins.sh`)}`,
  "",
].join("\n");
Deno.mkdirSync(dir, { recursive: true });
// Written beside and renamed: a reins running meanwhile never reads half a file.
const temp = `${target}.${Deno.pid}.tmp`;
Deno.writeTextFileSync(temp, launcher, { mode: 0o755 });
Deno.chmodSync(temp, 0o755);
Deno.renameSync(temp, target);

const onPath = (env.PATH ?? "").split(":").some((entry) =>
  entry.replace(/\/+$/, "") === dir.replace(/\/+$/, "")
);
console.log(`installed ${target}: runs ${repo}/main.ts under the binary's sandbox`);
if (onPath) {
  console.log("next: reins run 'list the files and summarise them' (reins --help for the rest)");
} else {
  const shown = home !== "" && dir.startsWith(`${home}/`) ? `$HOME${dir.slice(home.length)}` : dir;
  console.log(
    [
      `${dir} is not on your PATH: add it, for this shell and in your shell's profile:`,
      `  export PATH="${shown}:$PATH"`,
      `(or run ${target} by its path), then: reins run 'list the files and summarise them'`,
    ].join("\n"),
  );
}
