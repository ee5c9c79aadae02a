// compareCells(): the verdicts, their significance by Fisher's exact test, the evidence of a
// change (checks that flipped, judge reasons, new errors), the deltas and the exit code's gate.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Cell } from "../../lib/suite/aggregate.ts";
import { compareCells, compareExitCode, fisherOneSided } from "../../lib/suite/compare.ts";
import { compareMarkdown } from "../../lib/suite/compare_text.ts";
import type { CheckResult } from "../../lib/suite/results.ts";

function check(name: string, met: boolean, extra: Partial<CheckResult> = {}): CheckResult {
  return {
    name,
    kind: "regex",
    outcome: met ? "passed" : "failed",
    met,
    checkpoint: true,
    detail: `${name} ${met ? "matched" : "did not match"}`,
    score: null,
    by: null,
    reason: null,
    ...extra,
  };
}

function plays(scenario: string, outcomes: string, options: Partial<Cell> = {}): Cell[] {
  return [...outcomes].map((o, i) => ({
    scenario,
    agent: null,
    epoch: i + 1,
    outcome: o === "P" ? "passed" : o === "E" ? "error" : "failed",
    reason: o === "E" ? "turn 1 failed: exit 3" : null,
    checks: o === "E" ? [] : [check("says-ok", o === "P")],
    costUsd: 0.01,
    tokens: 100,
    durationMs: 1000,
    ...options,
  }));
}

Deno.test("fisherOneSided() matches the textbook tables", () => {
  // Fisher's lady tasting tea: 3 of 4 against 1 of 4, one-sided p = 17/70.
  assert.ok(Math.abs(fisherOneSided({ passed: 3, n: 4 }, { passed: 1, n: 4 }) - 17 / 70) < 1e-12);
  assert.ok(Math.abs(fisherOneSided({ passed: 4, n: 4 }, { passed: 0, n: 4 }) - 1 / 70) < 1e-12);
  assert.ok(Math.abs(fisherOneSided({ passed: 3, n: 3 }, { passed: 0, n: 3 }) - 1 / 20) < 1e-12);
  assert.equal(fisherOneSided({ passed: 1, n: 1 }, { passed: 0, n: 1 }), 0.5);
  assert.ok(
    Math.abs(fisherOneSided({ passed: 0, n: 4 }, { passed: 4, n: 4 }, "greater") - 1 / 70) < 1e-12,
  );
});

Deno.test("fisherOneSided() is a probability, and the two sides' tails overlap at the observed table", () => {
  const side = fc.integer({ min: 1, max: 40 }).chain((n) =>
    fc.record({ n: fc.constant(n), passed: fc.integer({ min: 0, max: n }) })
  );
  fc.assert(fc.property(side, side, (a, b) => {
    const less = fisherOneSided(a, b, "less");
    const greater = fisherOneSided(a, b, "greater");
    assert.ok(less > 0 && less <= 1 && greater > 0 && greater <= 1);
    // Both tails include the observed table: together they are at least 1.
    assert.ok(less + greater >= 1 - 1e-9);
  }));
});

Deno.test("compareCells() tells regressed, improved, unchanged and flaky, and which are significant", () => {
  const a = [
    ...plays("drop", "PPPP"),
    ...plays("rise", "FFFF"),
    ...plays("same", "PPPP"),
    ...plays("noisy", "PFPF"),
    ...plays("dip", "PPPF"),
    ...plays("gone", "P"),
  ];
  const b = [
    ...plays("drop", "FFFF", { costUsd: 0.03, durationMs: 500 }),
    ...plays("rise", "PPPP"),
    ...plays("same", "PPPP"),
    ...plays("noisy", "FPFP"),
    ...plays("dip", "PPFF"),
    ...plays("new", "P"),
  ];
  const result = compareCells(a, b, { a: "base", b: "head", byAgent: true });
  const verdicts = Object.fromEntries(
    result.scenarios.map((s) => [s.scenario, [s.verdict, s.significant]]),
  );
  assert.deepEqual(verdicts, {
    drop: ["regressed", true],
    rise: ["improved", true],
    same: ["unchanged", false],
    noisy: ["flaky", false],
    // 3/4 → 2/4 is no evidence of a change over four epochs: flaky, not a regression.
    dip: ["flaky", false],
  });
  assert.deepEqual(result.counts, { regressed: 1, improved: 1, unchanged: 1, flaky: 2 });
  assert.deepEqual([result.onlyInA, result.onlyInB], [["gone"], ["new"]]);
  const drop = result.scenarios[0];
  assert.ok(Math.abs(drop.pValue - 1 / 70) < 1e-12);
  assert.ok(Math.abs(drop.delta.costUsd! - 0.02) < 1e-12);
  assert.deepEqual([drop.delta.tokens, drop.delta.durationMs], [0, -500]);
  assert.deepEqual(drop.flipped, [{
    name: "says-ok",
    kind: "regex",
    a: "4/4",
    b: "0/4",
    detailA: "says-ok matched",
    detailB: "says-ok did not match",
    reasonA: null,
    reasonB: null,
  }]);
  assert.equal(compareExitCode(result, "regressed"), 1);
});

Deno.test("compareCells() does not gate on a regression the epochs cannot show, unless --fail-on any", () => {
  const result = compareCells(plays("one", "P"), plays("one", "F"), {
    a: "a",
    b: "b",
    byAgent: true,
  });
  assert.deepEqual(
    [result.scenarios[0].verdict, result.scenarios[0].significant, result.scenarios[0].pValue],
    ["regressed", false, 0.5],
  );
  assert.equal(compareExitCode(result, "regressed"), 0);
  assert.equal(compareExitCode(result, "any"), 1);
});

Deno.test("compareCells() gives a judge's reasons and B's new errors as the evidence", () => {
  const judged = (met: boolean, reason: string) =>
    check("polite", met, { kind: "judge", reason, score: met ? 0.9 : 0.2 });
  const a = plays("tone", "PPP").map((c) => ({ ...c, checks: [judged(true, "thanks the user")] }));
  const b = [
    ...plays("tone", "FF").map((c) => ({ ...c, checks: [judged(false, "curt, no greeting")] })),
    ...plays("tone", "E"),
  ];
  const result = compareCells(a, b, { a: "a", b: "b", byAgent: true });
  const tone = result.scenarios[0];
  assert.equal(tone.verdict, "regressed");
  assert.equal(tone.significant, true);
  assert.deepEqual(
    [tone.flipped[0].reasonA, tone.flipped[0].reasonB, tone.flipped[0].b],
    ["thanks the user", "curt, no greeting", "0/2"],
  );
  assert.deepEqual(tone.errorsB, ["turn 1 failed: exit 3"]);
  const markdown = compareMarkdown(result, { failed: true });
  assert.match(markdown, /^### ❌ reins suite compare: 1 regressed \(1 significant\)/);
  assert.match(markdown, /\| tone \| \*\*regressed\*\* \| 3\/3 \| 0\/3 \| 0\.050 \|/);
  assert.match(
    markdown,
    /- check "polite" \(judge\) met 3\/3 → 0\/2: B: curt, no greeting \(A: thanks the user\)/,
  );
  assert.match(markdown, /- B erred: turn 1 failed: exit 3/);
});

Deno.test("compareCells() by key alone compares two agents' cells", () => {
  const x = plays("s", "PPPP", { agent: "x" });
  const y = plays("s", "FFFF", { agent: "y" });
  const byAgent = compareCells(x, y, { a: "x", b: "y", byAgent: true });
  assert.equal(byAgent.scenarios.length, 0, "different agents do not match by agent");
  const byKey = compareCells(x, y, { a: "x", b: "y", byAgent: false });
  assert.deepEqual(byKey.scenarios.map((s) => [s.scenario, s.agent, s.verdict]), [
    ["s", null, "regressed"],
  ]);
});
