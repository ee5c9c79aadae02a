// Compares two sets of cells — two suite runs, or two agents of one — scenario by scenario:
// regressed, improved, unchanged or flaky, with the checks that flipped, the judges' reasons, the
// cost, token and duration deltas, and whether a change in pass rate is significant over the epochs
// (Fisher's exact test, one-sided; docs/suites.md, "Compare"). Pure: reading the runs and printing
// are the CLI's.
import { aggregateScenario, type Cell, groupCells } from "./aggregate.ts";

/** The significance level of the one-sided Fisher test. */
export const ALPHA = 0.05;

export type Verdict = "regressed" | "improved" | "unchanged" | "flaky";

const logFactorials: number[] = [0];
function logFactorial(n: number): number {
  for (let i = logFactorials.length; i <= n; i++) {
    logFactorials[i] = logFactorials[i - 1] + Math.log(i);
  }
  return logFactorials[n];
}
function logChoose(n: number, k: number): number {
  return logFactorial(n) - logFactorial(k) - logFactorial(n - k);
}

/**
 * Fisher's exact test, one-sided, on the 2×2 table (A: cA passed of nA; B: cB of nB): the chance,
 * with the passes of both fixed in total, that A has at least cA of them — small when B passes less
 * than A by more than chance. `direction: "greater"` asks the other way (B passes more).
 */
export function fisherOneSided(
  a: { passed: number; n: number },
  b: { passed: number; n: number },
  direction: "less" | "greater" = "less",
): number {
  const total = a.n + b.n;
  const passes = a.passed + b.passed;
  if (a.n === 0 || b.n === 0) return 1;
  const low = Math.max(0, passes - b.n);
  const high = Math.min(a.n, passes);
  const denominator = logChoose(total, a.n);
  let p = 0;
  const from = direction === "less" ? a.passed : low;
  const to = direction === "less" ? high : a.passed;
  for (let x = from; x <= to; x++) {
    p += Math.exp(logChoose(passes, x) + logChoose(total - passes, a.n - x) - denominator);
  }
  return Math.min(1, p);
}

export interface SideCounts {
  n: number;
  passed: number;
  passRate: number | null;
  flaky: boolean;
  meanCostUsd: number | null;
  meanTokens: number | null;
  meanDurationMs: number | null;
}

export interface FlippedCheck {
  name: string;
  kind: string;
  /** Plays that met it, of the plays that ran it: `3/3`. */
  a: string;
  b: string;
  /** What the check said in a play of B (one that failed it, for a regression), and of A. */
  detailA: string | null;
  detailB: string | null;
  /** A judge's own reasons, A's and B's. */
  reasonA: string | null;
  reasonB: string | null;
}

export interface ScenarioComparison {
  scenario: string;
  agent: string | null;
  verdict: Verdict;
  /** The change in pass rate is significant (p ≤ α) in the verdict's direction. */
  significant: boolean;
  /** The one-sided p-value in the direction of the change (1 when there is none). */
  pValue: number;
  a: SideCounts;
  b: SideCounts;
  flipped: FlippedCheck[];
  /** Why B's plays erred, when they did and A's did not. */
  errorsB: string[];
  delta: { costUsd: number | null; tokens: number | null; durationMs: number | null };
}

export interface Comparison {
  a: string;
  b: string;
  alpha: number;
  scenarios: ScenarioComparison[];
  /** Scenarios only one side has (not compared). */
  onlyInA: string[];
  onlyInB: string[];
  /**
   * Scenarios both sides have where a side has no play that reached a verdict (every play of it
   * unfinished or skipped): not compared, since no pass rate stands against the other side's.
   */
  unplayed: { scenario: string; side: "A" | "B" | "both" }[];
  counts: Record<Verdict, number>;
  significantRegressions: number;
  /** Over every compared play: pass rates and the one-sided p-value of a drop. */
  overall: { a: SideCounts; b: SideCounts; pValue: number };
}

function sideOf(cells: readonly Cell[]): SideCounts {
  const one = aggregateScenario(cells, 1);
  return {
    n: one.n,
    passed: one.passed,
    passRate: one.passRate,
    flaky: one.flaky,
    meanCostUsd: one.meanCostUsd,
    meanTokens: one.meanTokens,
    meanDurationMs: one.meanDurationMs,
  };
}

function minus(b: number | null, a: number | null): number | null {
  return a === null || b === null ? null : b - a;
}

interface CheckTally {
  kind: string;
  met: number;
  of: number;
  metDetail: string | null;
  unmetDetail: string | null;
  metReason: string | null;
  unmetReason: string | null;
}

function checkTallies(cells: readonly Cell[]): Map<string, CheckTally> {
  const tallies = new Map<string, CheckTally>();
  for (const cell of cells) {
    for (const check of cell.checks) {
      if (!check.checkpoint || check.outcome === "grading_error") continue;
      let t = tallies.get(check.name);
      if (!t) {
        t = {
          kind: check.kind,
          met: 0,
          of: 0,
          metDetail: null,
          unmetDetail: null,
          metReason: null,
          unmetReason: null,
        };
        tallies.set(check.name, t);
      }
      t.of++;
      if (check.met) {
        t.met++;
        t.metDetail ??= check.detail;
        t.metReason ??= check.reason;
      } else {
        t.unmetDetail ??= check.detail;
        t.unmetReason ??= check.reason;
      }
    }
  }
  return tallies;
}

function flippedChecks(a: readonly Cell[], b: readonly Cell[]): FlippedCheck[] {
  const ta = checkTallies(a);
  const tb = checkTallies(b);
  const flipped: FlippedCheck[] = [];
  for (const [name, x] of ta) {
    const y = tb.get(name);
    if (!y || x.of === 0 || y.of === 0 || x.met / x.of === y.met / y.of) continue;
    const worse = y.met / y.of < x.met / x.of;
    flipped.push({
      name,
      kind: x.kind,
      a: `${x.met}/${x.of}`,
      b: `${y.met}/${y.of}`,
      // The evidence of the change: B's failing play against A's passing one, or the reverse.
      detailA: worse ? x.metDetail : x.unmetDetail,
      detailB: worse ? y.unmetDetail : y.metDetail,
      reasonA: worse ? x.metReason : x.unmetReason,
      reasonB: worse ? y.unmetReason : y.metReason,
    });
  }
  return flipped;
}

function compareScenario(
  a: readonly Cell[],
  b: readonly Cell[],
  alpha: number,
): ScenarioComparison {
  const sa = sideOf(a);
  const sb = sideOf(b);
  let verdict: Verdict;
  let pValue = 1;
  let significant = false;
  if (sa.passRate === null || sb.passRate === null || sa.passRate === sb.passRate) {
    verdict = sa.flaky || sb.flaky ? "flaky" : "unchanged";
  } else {
    const down = sb.passRate < sa.passRate;
    pValue = fisherOneSided(sa, sb, down ? "less" : "greater");
    significant = pValue <= alpha;
    // A change that is not significant where either side both passed and failed is noise the
    // epochs cannot tell apart; one between two steady sides (1 of 1 → 0 of 1) is still a change.
    verdict = !significant && (sa.flaky || sb.flaky) ? "flaky" : down ? "regressed" : "improved";
  }
  const errorsA = new Set(a.filter((c) => c.outcome === "error").map((c) => c.reason ?? "error"));
  const errorsB = [
    ...new Set(b.filter((c) => c.outcome === "error").map((c) => c.reason ?? "error")),
  ].filter((reason) => !errorsA.has(reason));
  return {
    scenario: a[0].scenario,
    agent: b[0].agent ?? a[0].agent,
    verdict,
    significant,
    pValue,
    a: sa,
    b: sb,
    flipped: flippedChecks(a, b),
    errorsB,
    delta: {
      costUsd: minus(sb.meanCostUsd, sa.meanCostUsd),
      tokens: minus(sb.meanTokens, sa.meanTokens),
      durationMs: minus(sb.meanDurationMs, sa.meanDurationMs),
    },
  };
}

export interface CompareOptions {
  /** The sides' names, as the output shows them. */
  a: string;
  b: string;
  /**
   * Match scenarios by agent and key (two suite runs of the same agents), or by key alone (one
   * agent of each side: two agents of one run, or an agent of each of two runs).
   */
  byAgent: boolean;
  alpha?: number;
}

/** Compares side A (the baseline) with side B, scenario by scenario. */
export function compareCells(
  a: readonly Cell[],
  b: readonly Cell[],
  options: CompareOptions,
): Comparison {
  const alpha = options.alpha ?? ALPHA;
  const keyed = (cells: readonly Cell[]) => {
    if (options.byAgent) return groupCells(cells);
    return groupCells(cells.map((cell) => ({ ...cell, agent: null })));
  };
  const ga = keyed(a);
  const gb = keyed(b);
  const scenarios: ScenarioComparison[] = [];
  const onlyInA: string[] = [];
  const unplayed: Comparison["unplayed"] = [];
  const counts: Record<Verdict, number> = { regressed: 0, improved: 0, unchanged: 0, flaky: 0 };
  const compared: { a: Cell[]; b: Cell[] } = { a: [], b: [] };
  const label = (cells: Cell[]) =>
    cells[0].agent === null ? cells[0].scenario : `${cells[0].agent}/${cells[0].scenario}`;
  for (const [key, cellsA] of ga) {
    const cellsB = gb.get(key);
    if (!cellsB) {
      onlyInA.push(label(cellsA));
      continue;
    }
    const na = sideOf(cellsA).n;
    const nb = sideOf(cellsB).n;
    if (na === 0 || nb === 0) {
      // regression: 3/3 → 0/0 (B stopped, or still running) read as "unchanged", and passed the gate.
      unplayed.push({ scenario: label(cellsA), side: na === nb ? "both" : na === 0 ? "A" : "B" });
      continue;
    }
    const one = compareScenario(cellsA, cellsB, alpha);
    if (!options.byAgent) one.agent = null;
    scenarios.push(one);
    counts[one.verdict]++;
    compared.a.push(...cellsA);
    compared.b.push(...cellsB);
  }
  const onlyInB = [...gb].filter(([key]) => !ga.has(key)).map(([, cells]) => label(cells));
  const oa = sideOf(compared.a);
  const ob = sideOf(compared.b);
  return {
    a: options.a,
    b: options.b,
    alpha,
    scenarios,
    onlyInA,
    onlyInB,
    unplayed,
    counts,
    significantRegressions: scenarios.filter((s) => s.verdict === "regressed" && s.significant)
      .length,
    overall: { a: oa, b: ob, pValue: fisherOneSided(oa, ob, "less") },
  };
}

export type FailOn = "regressed" | "any";

/** 1 when the comparison fails the gate: a significant regression (or, with `any`, any). */
export function compareExitCode(comparison: Comparison, failOn: FailOn): 0 | 1 {
  if (failOn === "any") return comparison.counts.regressed > 0 ? 1 : 0;
  return comparison.significantRegressions > 0 ? 1 : 0;
}
