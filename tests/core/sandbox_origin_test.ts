// What a refusal says of a program or host, by what the sandbox was built from.
import assert from "node:assert/strict";
import { parseSandboxOrigin, sandboxRefusal, setSandboxOrigin } from "../../lib/core/sandbox.ts";

const refused = (what: string) =>
  sandboxRefusal(
    new Deno.errors.NotCapable(`Requires ${what}, run again with the --allow-run flag`),
  );

Deno.test("sandboxRefusal() tells a launcher's user how to grant a program or a host for the next start", () => {
  try {
    setSandboxOrigin({ by: "launcher", home: "/h", homeFrom: "--home", dirs: ["/w"] });
    const run = refused('run access to "/opt/agent"');
    assert.equal(run.exitCode, 4);
    assert.equal(
      run.message,
      'The sandbox refused to run "/opt/agent": grant it with REINS_ALLOW_RUN=/opt/agent (read ' +
        "each time reins starts), the config file's drivers.NAME.program, or name it with --exec",
    );
    assert.match(refused('net access to "models.example:443"').message, /--base-url/);
    setSandboxOrigin({ by: "compile", home: "/h", homeFrom: "HOME", dirs: [] });
    assert.match(
      refused('run access to "/opt/agent"').message,
      /this binary was built \(deno task compile\) without it: build it again with REINS_ALLOW_RUN=\/opt\/agent/,
    );
  } finally {
    setSandboxOrigin(null);
  }
  // Without an origin (reins run some other way), the general words.
  assert.match(refused('run access to "/opt/agent"').message, /deno task compile\) or start it/);
});

Deno.test("parseSandboxOrigin() takes only what the launcher writes", () => {
  const origin = { by: "launcher", home: "/h", homeFrom: "REINS_HOME", dirs: ["/w"] };
  assert.deepEqual(parseSandboxOrigin(JSON.stringify(origin)), origin);
  assert.equal(parseSandboxOrigin(undefined), null);
  assert.equal(parseSandboxOrigin("{not json"), null);
  assert.equal(parseSandboxOrigin(JSON.stringify({ ...origin, homeFrom: "elsewhere" })), null);
  assert.equal(parseSandboxOrigin(JSON.stringify({ ...origin, dirs: [1] })), null);
});
