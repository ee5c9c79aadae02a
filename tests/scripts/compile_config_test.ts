// `deno task compile` bakes in the harness programs the data root's config.json names, as the
// launcher of a checkout allows them: docs/harnesses.md says `drivers.<name>.program` is what the
// binary may run. The build is pointed at a denort that does not exist, so it stops right after
// printing the command it would run (no runtime is downloaded, nothing is written to dist/).
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;

// regression: a program configured in config.json was not on the binary's run list: the run was
// refused at run time.
Deno.test("deno task compile puts config.json's drivers.*.program on the run list it bakes", async () => {
  const home = await Deno.makeTempDir({ prefix: "reins-compile-config-" });
  try {
    await Deno.writeTextFile(
      `${home}/config.json`,
      JSON.stringify({ drivers: { codex: { program: "/opt/tools/codex" } } }),
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "compile"],
      cwd: REPO,
      env: { REINS_HOME: home, DENORT_BIN: `${home}/no-such-denort` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.notEqual(output.code, 0, "no runtime, no binary");
    const allowRun = stderr.split(/\s+/).find((word) => word.startsWith("--allow-run="));
    assert.ok(allowRun, stderr);
    assert.ok(
      allowRun.slice("--allow-run=".length).split(",").includes("/opt/tools/codex"),
      allowRun,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
