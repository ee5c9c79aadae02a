// Aggregation over epochs: a suite run's scenarios played several times (--repeat N today, the
// matrix's epochs later), reduced per scenario and per agent to a pass rate with a 95 % Wilson
// interval, pass@k, pass^k, flakiness and mean cost, tokens and duration (docs/suites.md,
// "Aggregation"). It reads cells, not state files: cellsOf() is the one adapter from a suite run's
// scenario states, so the statistics do not change when the states grow new fields.
import type { CheckResult } from "./results.ts";
import type { ScenarioState } from "./state.ts";

/** One play of one scenario by one agent: what aggregation and compare read. */
export interface Cell {
  /** The scenario's key in the suite file. */
  scenario: string;
  /** The agent's name; null for a suite run of one (unnamed) agent. */
  agent: string | null;
  /** 1-based. */
  epoch: number;
  outcome: "passed" | "failed" | "error" | "skipped" | "unfinished";
  /** Why it erred or was skipped. */
  reason: string | null;
  checks: readonly CheckResult[];
  costUsd: number | null;
  tokens: number | null;
  durationMs: number | null;
}

/** A field a newer state may carry (the matrix's agent and epoch, tokens), read without a schema. */
function optional<T>(value: unknown, is: (v: unknown) => v is T): T | null {
  return is(value) ? value : null;
}
const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/**
 * The cells of a suite run's scenario states. Today's `--repeat N` instances `key.1`, `key.2`
 * are epochs 1 and 2 of `key`; a state naming its agent and epoch (the matrix) is read as such.
 */
export function cellsOf(states: readonly ScenarioState[]): Cell[] {
  return states.map((state) => {
    const loose = state as unknown as Record<string, unknown>;
    const instance = state.instance as unknown as Record<string, unknown>;
    const status = state.status;
    return {
      scenario: state.instance.key,
      agent: optional(instance.agent ?? loose.agent, isString),
      epoch: optional(instance.epoch, isNumber) ?? state.instance.repeat,
      outcome: status === "pending" || status === "running" ? "unfinished" : status,
      reason: state.reason,
      checks: state.checks,
      costUsd: state.costUsd,
      tokens: state.tokens ?? null,
      durationMs: state.durationMs,
    };
  });
}

/** z for a two-sided 95 % interval. */
export const Z95 = 1.959963984540054;

/** The Wilson score interval for c successes in n trials; [0, 1] when n is 0. */
export function wilson(c: number, n: number, z = Z95): { low: number; high: number } {
  if (n === 0) return { low: 0, high: 1 };
  const p = c / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // Clamped: rounding must not put p outside its own interval at c = 0 or c = n.
  return {
    low: Math.max(0, Math.min(p, centre - half)),
    high: Math.min(1, Math.max(p, centre + half)),
  };
}

/**
 * pass@k, the unbiased estimator of the chance that at least one of k plays passes, from c passes
 * in n plays: 1 − C(n−c, k)/C(n, k) (Chen et al. 2021), as a product so it does not overflow.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new RangeError(`Cannot estimate pass@${k} from ${n} plays`);
  if (n - c < k) return 1;
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

/**
 * pass^k, the chance that all of k plays pass, from c passes in n plays: C(c, k)/C(n, k)
 * (tau-bench).
 */
export function passHatK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new RangeError(`Cannot estimate pass^${k} from ${n} plays`);
  let all = 1;
  for (let i = 0; i < k; i++) all *= Math.max(0, c - i) / (n - i);
  return all;
}

function mean(values: readonly (number | null)[]): number | null {
  let sum = 0;
  let count = 0;
  for (const value of values) {
    if (value === null) continue;
    sum += value;
    count++;
  }
  return count === 0 ? null : sum / count;
}

export interface ScenarioAggregate {
  scenario: string;
  agent: string | null;
  /** Plays that ran to a verdict (passed, failed or error: an error counts as not passed). */
  n: number;
  passed: number;
  /** Plays skipped or unfinished, not counted in n. */
  uncounted: number;
  passRate: number | null;
  interval: { low: number; high: number };
  /** At k = the summary's k; null when n < k. */
  passAtK: number | null;
  passHatK: number | null;
  /** Both passed and failed (or erred). */
  flaky: boolean;
  meanCostUsd: number | null;
  meanTokens: number | null;
  meanDurationMs: number | null;
}

export interface AgentAggregate {
  agent: string | null;
  k: number;
  scenarios: number;
  /** Scenarios with at least k counted plays, over which pass@k and pass^k are averaged. */
  scored: number;
  n: number;
  passed: number;
  /** Pooled over every counted play, with its Wilson interval. */
  passRate: number | null;
  interval: { low: number; high: number };
  passAtK: number | null;
  passHatK: number | null;
  /** Wilson over scenarios: passHatK × scored "successes" of scored (see docs). */
  passHatKInterval: { low: number; high: number };
  flaky: number;
  meanCostUsd: number | null;
  meanTokens: number | null;
  meanDurationMs: number | null;
}

export interface Aggregate {
  /** The k of pass@k and pass^k: the fewest counted plays of any scenario (at least 1). */
  k: number;
  /** The most epochs of any scenario: aggregation is shown when it is over 1. */
  epochs: number;
  scenarios: ScenarioAggregate[];
  agents: AgentAggregate[];
}

function groupKey(agent: string | null, scenario: string): string {
  return JSON.stringify([agent, scenario]);
}

/** Cells grouped by agent and scenario, in the order they first appear. */
export function groupCells(cells: readonly Cell[]): Map<string, Cell[]> {
  const groups = new Map<string, Cell[]>();
  for (const cell of cells) {
    const key = groupKey(cell.agent, cell.scenario);
    const group = groups.get(key);
    if (group) group.push(cell);
    else groups.set(key, [cell]);
  }
  return groups;
}

function counted(cell: Cell): boolean {
  return cell.outcome === "passed" || cell.outcome === "failed" || cell.outcome === "error";
}

/** One scenario's plays by one agent, at k (clamped to what it has). */
export function aggregateScenario(cells: readonly Cell[], k: number): ScenarioAggregate {
  const plays = cells.filter(counted);
  const n = plays.length;
  const passed = plays.filter((cell) => cell.outcome === "passed").length;
  return {
    scenario: cells[0]?.scenario ?? "",
    agent: cells[0]?.agent ?? null,
    n,
    passed,
    uncounted: cells.length - n,
    passRate: n === 0 ? null : passed / n,
    interval: wilson(passed, n),
    passAtK: n >= k ? passAtK(n, passed, k) : null,
    passHatK: n >= k ? passHatK(n, passed, k) : null,
    flaky: passed > 0 && passed < n,
    meanCostUsd: mean(plays.map((cell) => cell.costUsd)),
    meanTokens: mean(plays.map((cell) => cell.tokens)),
    meanDurationMs: mean(plays.map((cell) => cell.durationMs)),
  };
}

/** Aggregates cells per scenario and per agent; `k` defaults to the fewest plays of a scenario. */
export function aggregate(cells: readonly Cell[], options: { k?: number } = {}): Aggregate {
  const groups = [...groupCells(cells).values()];
  const counts = groups.map((group) => group.filter(counted).length).filter((n) => n > 0);
  const k = Math.max(1, options.k ?? (counts.length ? Math.min(...counts) : 1));
  const epochs = cells.reduce((most, cell) => Math.max(most, cell.epoch), 0);
  const scenarios = groups.map((group) => aggregateScenario(group, k));
  const byAgent = new Map<string | null, ScenarioAggregate[]>();
  for (const one of scenarios) {
    const list = byAgent.get(one.agent);
    if (list) list.push(one);
    else byAgent.set(one.agent, [one]);
  }
  const agents = [...byAgent.entries()].map(([agent, list]): AgentAggregate => {
    const n = list.reduce((sum, one) => sum + one.n, 0);
    const passed = list.reduce((sum, one) => sum + one.passed, 0);
    const scored = list.filter((one) => one.passHatK !== null);
    const hat = mean(scored.map((one) => one.passHatK));
    const agentCells = cells.filter((cell) => cell.agent === agent && counted(cell));
    return {
      agent,
      k,
      scenarios: list.length,
      scored: scored.length,
      n,
      passed,
      passRate: n === 0 ? null : passed / n,
      interval: wilson(passed, n),
      passAtK: mean(scored.map((one) => one.passAtK)),
      passHatK: hat,
      passHatKInterval: wilson((hat ?? 0) * scored.length, scored.length),
      flaky: list.filter((one) => one.flaky).length,
      meanCostUsd: mean(agentCells.map((cell) => cell.costUsd)),
      meanTokens: mean(agentCells.map((cell) => cell.tokens)),
      meanDurationMs: mean(agentCells.map((cell) => cell.durationMs)),
    };
  });
  return { k, epochs, scenarios, agents };
}

function fixed(value: number | null, digits = 2): string {
  return value === null ? "-" : value.toFixed(digits);
}

/** The compact per-agent lines a suite run's output ends with when it has more than one epoch. */
export function aggregateLines(result: Aggregate): string[] {
  if (result.epochs <= 1) return [];
  return result.agents.map((one) => {
    const name = one.agent ?? "agent";
    const { low, high } = one.passHatKInterval;
    const rate = `pass rate ${fixed(one.passRate)} (${one.passed}/${one.n}) [${
      fixed(one.interval.low)
    }, ${fixed(one.interval.high)}]`;
    return `${name}: pass^${one.k} ${fixed(one.passHatK)} [${fixed(low)}, ${
      fixed(high)
    }] · pass@${one.k} ${fixed(one.passAtK)} · ${rate} · ${one.flaky} flaky of ${one.scenarios}`;
  });
}
