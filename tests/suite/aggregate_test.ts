// Aggregation over epochs: the estimators against hand-computed values and the worked example of
// docs/suites.md (read from the doc itself), their invariants as properties, and the adapter that
// reads today's `key.N` repeats as epochs.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  aggregate,
  aggregateLines,
  type Cell,
  cellsOf,
  passAtK,
  passHatK,
  wilson,
} from "../../lib/suite/aggregate.ts";
import { pendingScenario, type ScenarioState } from "../../lib/suite/state.ts";

function cell(
  scenario: string,
  epoch: number,
  outcome: Cell["outcome"],
  agent: string | null = null,
): Cell {
  return {
    scenario,
    agent,
    epoch,
    outcome,
    reason: null,
    checks: [],
    costUsd: epoch * 0.01,
    tokens: null,
    durationMs: 1000 * epoch,
  };
}

function binomial(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let value = 1;
  for (let i = 1; i <= k; i++) value = (value * (n - k + i)) / i;
  return value;
}

Deno.test("the worked example of docs/suites.md recomputes to the numbers it shows", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/suites.md", import.meta.url));
  const block = doc.match(/```aggregate-example\n([\s\S]*?)```/)?.[1];
  assert.ok(block, "docs/suites.md has an aggregate-example block");
  const line = (pattern: RegExp) => {
    const found = block.match(pattern);
    assert.ok(found, `the example has a line matching ${pattern}`);
    return found;
  };
  const plays = line(/^plays: (.+)$/m)[1].trim().split(/\s+/) as Cell["outcome"][];
  const cells = plays.map((outcome, i) => cell("example", i + 1, outcome));
  const [, n, c, k] = line(/^n = (\d+), c = (\d+), k = (\d+)$/m).map(Number);
  const result = aggregate(cells, { k });
  const one = result.scenarios[0];
  assert.equal(one.n, n);
  assert.equal(one.passed, c);
  const shown = (value: number) => value.toFixed(4);
  assert.equal(shown(one.passRate!), line(/^pass rate = ([\d.]+)$/m)[1]);
  const [, low, high] = line(/^wilson 95% = \[([\d.]+), ([\d.]+)\]$/m);
  assert.deepEqual([shown(one.interval.low), shown(one.interval.high)], [low, high]);
  assert.equal(shown(one.passAtK!), line(new RegExp(`^pass@${k} = .*= ([\\d.]+)$`, "m"))[1]);
  assert.equal(shown(one.passHatK!), line(new RegExp(`^pass\\^${k} = .*= ([\\d.]+)$`, "m"))[1]);
  // Every pass^j line, recomputed at its own j.
  for (const [, j, value] of block.matchAll(/^pass\^(\d+) = .*= ([\d.]+)$/gm)) {
    assert.equal(shown(passHatK(n, c, Number(j))), value);
  }
  assert.equal(one.flaky, line(/^flaky = (yes|no)$/m)[1] === "yes");
});

Deno.test("wilson() matches the textbook values", () => {
  const round = ({ low, high }: { low: number; high: number }) =>
    [low, high].map((x) => +x.toFixed(4));
  assert.deepEqual(round(wilson(3, 3)), [0.4385, 1]);
  assert.deepEqual(round(wilson(0, 3)), [0, 0.5615]);
  assert.deepEqual(round(wilson(8, 10)), [0.4902, 0.9433]);
  assert.deepEqual(wilson(0, 0), { low: 0, high: 1 });
});

Deno.test("passAtK() and passHatK() are the binomial ratios, and refuse k outside 1..n", () => {
  assert.ok(Math.abs(passAtK(10, 3, 1) - 0.3) < 1e-12);
  assert.ok(Math.abs(passAtK(10, 3, 5) - (1 - binomial(7, 5) / binomial(10, 5))) < 1e-12);
  assert.ok(Math.abs(passHatK(10, 7, 3) - binomial(7, 3) / binomial(10, 3)) < 1e-12);
  assert.equal(passHatK(4, 4, 4), 1);
  assert.equal(passHatK(4, 3, 4), 0);
  assert.throws(() => passAtK(3, 1, 4), /Cannot estimate pass@4 from 3 plays/);
  assert.throws(() => passHatK(3, 1, 0), /Cannot estimate pass\^0/);
});

const trials = fc.integer({ min: 1, max: 60 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    c: fc.integer({ min: 0, max: n }),
    k: fc.integer({ min: 1, max: n }),
  })
);

Deno.test("pass^k ≤ pass rate ≤ pass@k, all within [0, 1], and each the binomial ratio", () => {
  fc.assert(fc.property(trials, ({ n, c, k }) => {
    const hat = passHatK(n, c, k);
    const at = passAtK(n, c, k);
    const p = c / n;
    const eps = 1e-9;
    assert.ok(hat >= -eps && at <= 1 + eps);
    assert.ok(hat <= p + eps, `pass^${k} ${hat} > p ${p}`);
    assert.ok(p <= at + eps, `p ${p} > pass@${k} ${at}`);
    assert.ok(Math.abs(hat - binomial(c, k) / binomial(n, k)) < 1e-9);
    assert.ok(Math.abs(at - (1 - binomial(n - c, k) / binomial(n, k))) < 1e-9);
  }));
});

Deno.test("wilson() bounds lie within [0, 1], contain p and narrow as n grows", () => {
  fc.assert(fc.property(trials, ({ n, c }) => {
    const { low, high } = wilson(c, n);
    const p = c / n;
    assert.ok(0 <= low && low <= p && p <= high && high <= 1, `${low} ${p} ${high}`);
    const wider = wilson(c * 4, n * 4);
    assert.ok(wider.high - wider.low <= high - low + 1e-12);
  }));
});

Deno.test("aggregate() groups per agent and scenario, counts errors as not passed and marks flaky ones", () => {
  const cells = [
    cell("a", 1, "passed", "x"),
    cell("a", 2, "passed", "x"),
    cell("a", 3, "passed", "x"),
    cell("b", 1, "passed", "x"),
    cell("b", 2, "error", "x"),
    cell("b", 3, "failed", "x"),
    cell("a", 1, "failed", "y"),
    cell("a", 2, "failed", "y"),
    cell("a", 3, "skipped", "y"),
    cell("b", 1, "passed", "y"),
    cell("b", 2, "passed", "y"),
    cell("b", 3, "passed", "y"),
  ];
  const result = aggregate(cells);
  assert.equal(result.k, 2, "the fewest counted plays of a scenario");
  assert.equal(result.epochs, 3);
  const ya = result.scenarios.find((s) => s.agent === "y" && s.scenario === "a")!;
  assert.deepEqual([ya.n, ya.passed, ya.uncounted, ya.flaky], [2, 0, 1, false]);
  const xb = result.scenarios.find((s) => s.agent === "x" && s.scenario === "b")!;
  assert.deepEqual([xb.n, xb.passed, xb.flaky], [3, 1, true]);
  assert.equal(xb.meanCostUsd, 0.02);
  const x = result.agents.find((a) => a.agent === "x")!;
  assert.deepEqual([x.n, x.passed, x.flaky, x.scenarios], [6, 4, 1, 2]);
  // pass^2: a 1, b C(1,2)/C(3,2) = 0.
  assert.equal(x.passHatK, 0.5);
  assert.equal(aggregateLines(result).length, 2);
  assert.match(aggregateLines(result)[0], /^x: pass\^2 0\.50 \[0\.09, 0\.91\] · pass@2 /);
});

Deno.test("aggregateLines() is empty for one epoch", () => {
  assert.deepEqual(aggregateLines(aggregate([cell("a", 1, "passed"), cell("b", 1, "failed")])), []);
});

Deno.test("cellsOf() reads today's --repeat instances key.N as epochs of key, and one agent", () => {
  const states: ScenarioState[] = [1, 2].map((repeat) => ({
    ...pendingScenario(
      { id: `login.${repeat}`, key: "login", repeat, agent: null, index: 0 },
      "login",
    ),
    status: repeat === 1 ? "passed" : "running",
    costUsd: 0.5,
    durationMs: 20,
  }));
  assert.deepEqual(
    cellsOf(states).map(({ scenario, agent, epoch, outcome }) => ({
      scenario,
      agent,
      epoch,
      outcome,
    })),
    [
      { scenario: "login", agent: null, epoch: 1, outcome: "passed" },
      { scenario: "login", agent: null, epoch: 2, outcome: "unfinished" },
    ],
  );
  // A state that names its agent and epoch (the matrix) is read as such.
  const named = {
    ...states[0],
    instance: { ...states[0].instance, agent: "codex", epoch: 4 },
  } as ScenarioState;
  assert.deepEqual([cellsOf([named])[0].agent, cellsOf([named])[0].epoch], ["codex", 4]);
});
