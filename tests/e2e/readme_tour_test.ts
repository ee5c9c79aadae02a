// The README's tour, run as it is written: `deno task install` into a fresh HOME, then the tour's
// first sh block as one script (`sh -e`: any command that fails fails the test), with that HOME
// and the install directory on the PATH. A tour that drifts from what reins does fails here.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";

/** The first ```sh block after the `## Tour` heading. */
function tourScript(): string {
  const readme = Deno.readTextFileSync(`${REPO}README.md`);
  const tour = readme.slice(readme.indexOf("\n## Tour\n"));
  const block = /```sh\n([\s\S]*?)```/.exec(tour)?.[1];
  if (!block) throw new Error("README.md has no sh block under ## Tour");
  return block;
}

// regression: the tour used `reins …`, but after the set-up commands no `reins` existed.
Deno.test("the README tour runs as written after deno task install, in a fresh HOME", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-tour-" }));
  try {
    const home = `${root}/home`;
    await Deno.mkdir(home);
    await Deno.mkdir(`${root}/tmp`);
    const env = { HOME: home, PATH: SYSTEM_PATH, TMPDIR: `${root}/tmp`, DENO_DIR, NO_COLOR: "1" };
    const installed = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "install"],
      cwd: REPO,
      clearEnv: true,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(installed.code, 0, new TextDecoder().decode(installed.stderr));
    // The line the install printed, as a user adds it.
    const exportLine = new TextDecoder().decode(installed.stdout).split("\n")
      .find((line) => line.trim().startsWith("export PATH="))!.trim();
    const script = tourScript();
    const tour = await new Deno.Command("sh", {
      args: ["-e", "-c", `${exportLine}\n${script}`],
      cwd: home,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(tour.stdout);
    const stderr = new TextDecoder().decode(tour.stderr);
    assert.equal(tour.code, 0, `${stdout}\n${stderr}`);
    // What the tour says it does, it did.
    assert.match(stdout, /Last time you asked “remember the word kiwi”/);
    assert.match(stdout, /reproduced the recording/);
    assert.match(stderr, /reins: run \S+ waits for approval approval-1 \(write_file /);
    assert.equal(await Deno.readTextFile(`${home}/reins-tour/out.txt`), "hi");
    const runs = [...Deno.readDirSync(`${home}/.reins/runs`)].filter((e) => e.isDirectory);
    assert.ok(runs.length >= 6, `${runs.length} runs`);
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});
