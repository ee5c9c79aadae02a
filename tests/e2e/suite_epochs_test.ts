// Epochs end to end: `reins suite run --repeat 3` with an agent that passes one scenario always and
// another only on its first play ends its table with the agent's pass^k and interval; `suite show`
// prints the same, and --json carries the aggregate.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

// Answers "ok" to steady always; to wobbly only the first time (a count in the test's folder).
const AGENT = `#!/bin/sh
prompt=$(cat)
if [ "$prompt" = wobbly ]; then
  n=$(cat "$DIR/count" 2>/dev/null || echo 0)
  echo $((n + 1)) > "$DIR/count"
  [ "$n" = 0 ] && echo ok || echo no
else
  echo ok
fi
`;

Deno.test("reins suite run --repeat 3 prints the agent's pass^3 with its Wilson interval", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT.replaceAll("$DIR", dir.path));
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: epochs",
      "driver: command",
      `exec: ${dir.path}/agent.sh`,
      "scenarios:",
      "  - {key: steady, turns: [steady], checks: [{regex: '^ok'}]}",
      "  - {key: wobbly, turns: [wobbly], checks: [{regex: '^ok'}]}",
    ].join("\n"),
  );
  const ran = await reins(["suite", "run", "suite.yaml", "--repeat", "3", "--no-report"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`],
  });
  assert.equal(ran.code, 1, ran.stderr + ran.stdout);
  // steady 3/3 (pass^3 1), wobbly 1/3 (pass^3 0): the mean 0.5, Wilson of 1 in 2 scenarios.
  const expected =
    "agent: pass^3 0.50 [0.09, 0.91] · pass@3 1.00 · pass rate 0.67 (4/6) [0.30, 0.90] · 1 flaky of 2";
  assert.equal(ran.stdout.trimEnd().split("\n").at(-1), expected);
  const shown = await reins(["suite", "show"], { home });
  assert.equal(shown.stdout.trimEnd().split("\n").at(-1), expected);
  // The line docs/suites.md shows is this one.
  const doc = await Deno.readTextFile(new URL("../../docs/suites.md", import.meta.url));
  assert.ok(doc.includes(expected), "docs/suites.md shows the line this run prints");
  const json = JSON.parse((await reins(["suite", "show", "--json"], { home })).stdout);
  const wobbly = json.aggregate.scenarios.find((s: { scenario: string }) =>
    s.scenario === "wobbly"
  );
  assert.deepEqual([wobbly.n, wobbly.passed, wobbly.flaky, wobbly.passHatK], [3, 1, true, 0]);
  assert.equal(json.aggregate.k, 3);
});
