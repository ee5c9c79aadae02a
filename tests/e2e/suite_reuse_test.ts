// `reins suite run --reuse` end to end, under the binary's sandbox, on the example suite (the
// loop's demo and mock models and a command agent: none goes through the gateway, so nothing is
// reused and each plays as it would, its checks judged anew); an unknown suite run is a clear
// error that starts no suite run. The reuse of harness recordings: tests/interop/suite_reuse_test.ts.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

const EXAMPLE_DIR = new URL("../../examples/suite/", import.meta.url).pathname;
const SHOP_AGENT = `${EXAMPLE_DIR}agents/shop.sh`;

Deno.test("reins suite run --reuse of a suite without harness scenarios plays it anew and says 0 were reused", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const options = { home, cwd: EXAMPLE_DIR, allowRun: [SHOP_AGENT, "sh"] };
  const first = await reins(["suite", "run", "suite.yaml", "--json"], options);
  assert.equal(first.code, 0, first.stderr);
  const { suiteRunId } = JSON.parse(first.stdout);
  const again = await reins(
    ["suite", "run", "suite.yaml", "--json", "--reuse", suiteRunId],
    options,
  );
  assert.equal(again.code, 0, again.stderr);
  const run = JSON.parse(again.stdout);
  assert.notEqual(run.suiteRunId, suiteRunId);
  assert.deepEqual(run.reuse, { from: suiteRunId, matched: 0, passedOn: 0 });
  assert.equal(run.totals.passed, 4);
  assert.match(again.stderr, new RegExp(`reused 0 of 0 model calls from suite run ${suiteRunId}`));
});

Deno.test("reins suite run --reuse of an unknown suite run is exit 3 and starts no suite run", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const result = await reins(["suite", "run", "suite.yaml", "--reuse", "nope"], {
    home,
    cwd: EXAMPLE_DIR,
    allowRun: [SHOP_AGENT, "sh"],
  });
  assert.equal(result.code, 3, result.stderr);
  assert.match(result.stderr, /No suite run "nope"/);
  // Nothing was begun: no suite run under the data root.
  const suites = await Array.fromAsync(Deno.readDir(`${home}/suites`)).catch(() => []);
  assert.deepEqual(suites.filter((entry) => !entry.name.startsWith(".")), []);
});
