// The sandbox's setup script (profile.ts's INNER_SCRIPT) under the real bubblewrap, where reins
// may not read its whole environment and the script trims it inside: what is kept is exactly the
// kept names, whatever the others are called or hold.
import assert from "node:assert/strict";
import { confinedCommand } from "../../lib/confine/profile.ts";
import { confinementProblem } from "../../lib/confine/probe.ts";

const PROBLEM = await confinementProblem();
if (PROBLEM !== null) {
  console.error(`%c!! tests/confine/inner_script_test.ts SKIPPED: ${PROBLEM}`, "color: red");
}

Deno.test({
  name: "the sandbox's setup keeps only the kept names, even beside a variable named as one of " +
    "its own and a value that looks like more variables",
  ignore: PROBLEM !== null,
  async fn() {
    const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-inner-" });
    try {
      const command = confinedCommand(
        { program: "env", args: [], cwd: root, env: { GIVEN: "by reins" } },
        {
          dataRoot: `${root}/data`,
          hidden: [],
          binds: [],
          keepEnv: ["PATH", "KEPT_*"],
          inherited: null,
          network: null,
        },
      );
      assert.equal(command.clearEnv, false);
      const kept: Record<string, string> = {};
      for (let i = 0; i < 20; i++) kept[`KEPT_${i}`] = `${i}`;
      // The environment reins would have: its own, and what the spawn adds.
      const env = {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        ...kept,
        // regression: a variable named as the script's list of kept names emptied that list
        // half-way, and every name after it went, PATH and the kept ones too.
        keep: "mine",
        name: "mine too",
        SECRET: "hunter2",
        MULTI: "a\nexport KEPT_FAKE=1\nexport SECRET2=x",
        SECRET2: "also secret",
        ...command.env,
      };
      const output = await new Deno.Command(command.program, {
        args: command.args,
        cwd: command.cwd,
        env,
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
      const names = new TextDecoder().decode(output.stdout).split("\n")
        .filter((line) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
        .map((line) => line.slice(0, line.indexOf("="))).sort();
      assert.deepEqual(
        names,
        ["GIVEN", "HOME", "PATH", "TMPDIR", ...Object.keys(kept)].sort(),
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
