// The results table of a suite run, for people: one row per scenario (status, checkpoints met of
// all, turns, cost, duration and the first failing check, or why it could not run) and a line of
// totals. Pure text; the CLI decides where it goes.
import type { ScenarioState } from "./state.ts";
import { type FinalStatus, tally } from "./results.ts";

export interface Totals {
  scenarios: number;
  passed: number;
  failed: number;
  error: number;
  skipped: number;
  /** Not finished: pending or running. */
  unfinished: number;
  gradingErrors: number;
  costUsd: number;
}

export function totalsOf(states: readonly ScenarioState[]): Totals {
  const totals: Totals = {
    scenarios: states.length,
    passed: 0,
    failed: 0,
    error: 0,
    skipped: 0,
    unfinished: 0,
    gradingErrors: 0,
    costUsd: 0,
  };
  for (const state of states) {
    switch (state.status) {
      case "passed":
      case "failed":
      case "error":
      case "skipped":
        totals[state.status satisfies FinalStatus]++;
        break;
      case "pending":
      case "running":
        totals.unfinished++;
        break;
    }
    totals.gradingErrors += state.checks.filter((c) => c.outcome === "grading_error").length;
    totals.costUsd += state.costUsd ?? 0;
  }
  return totals;
}

/** 0 when every scenario passed (or was skipped), 1 when any failed, erred or did not finish. */
export function exitCodeOf(totals: Totals): 0 | 1 {
  return totals.failed + totals.error + totals.unfinished === 0 ? 0 : 1;
}

function cut(text: string, width: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

export function formatCost(usd: number | null): string {
  return usd === null ? "-" : `$${usd.toFixed(4)}`;
}

export interface Row {
  scenario: string;
  status: string;
  checks: string;
  turns: string;
  cost: string;
  duration: string;
  note: string;
}

/** The row of one scenario: what the table shows, and what tests compare. */
export function rowOf(state: ScenarioState, options: { noteWidth?: number } = {}): Row {
  const { met, of, firstFailing } = tally(state.checks);
  const finished = state.status !== "pending" && state.status !== "running";
  let note = "";
  if (state.status === "error" || state.status === "skipped") note = state.reason ?? "";
  else if (firstFailing) note = `${firstFailing.name}: ${firstFailing.detail}`;
  else if (!finished) note = state.status === "running" ? "not finished" : "";
  const grading = state.checks.filter((c) => c.outcome === "grading_error");
  if (grading.length && state.status !== "error") {
    note = [note, `grading error: ${grading[0].name}`].filter(Boolean).join("; ");
  }
  const ran = state.status === "passed" || state.status === "failed";
  return {
    scenario: state.instance.id,
    status: state.status,
    checks: ran ? `${met}/${of}` : "-",
    turns: finished || state.turns ? String(state.turns) : "-",
    cost: formatCost(state.costUsd),
    duration: formatDuration(state.durationMs),
    note: cut(note, options.noteWidth ?? 70),
  };
}

const HEADINGS: Row = {
  scenario: "scenario",
  status: "status",
  checks: "checks",
  turns: "turns",
  cost: "cost",
  duration: "duration",
  note: "first failing check",
};

export function summaryLine(totals: Totals, elapsedMs: number | null): string {
  const parts = [
    `${totals.passed} passed`,
    `${totals.failed} failed`,
    `${totals.error} error${totals.error === 1 ? "" : "s"}`,
    `${totals.skipped} skipped`,
  ];
  if (totals.unfinished) parts.push(`${totals.unfinished} not finished`);
  const count = `${totals.scenarios} scenario${totals.scenarios === 1 ? "" : "s"}`;
  const time = elapsedMs === null ? "" : ` in ${formatDuration(elapsedMs)}`;
  const cost = totals.costUsd > 0 ? ` · ${formatCost(totals.costUsd)}` : "";
  return `${count}: ${parts.join(", ")}${time}${cost}`;
}

/**
 * A matrix's rows by agent, in the order the agents first come (the suite run's); null when no
 * row has an agent (a suite without agents).
 */
export function byAgent(
  states: readonly ScenarioState[],
): { agent: string; states: ScenarioState[] }[] | null {
  const groups = new Map<string, ScenarioState[]>();
  for (const state of states) {
    if (state.instance.agent === null) continue;
    const group = groups.get(state.instance.agent) ?? [];
    group.push(state);
    groups.set(state.instance.agent, group);
  }
  if (groups.size === 0) return null;
  return [...groups].map(([agent, states]) => ({ agent, states }));
}

/**
 * The table as lines: headings, a row per scenario, then the totals line. A matrix: a block per
 * agent (its name, its rows, its totals), then the totals of all.
 */
export function formatTable(
  states: readonly ScenarioState[],
  options: { elapsedMs?: number | null; noteWidth?: number } = {},
): string[] {
  const keys = Object.keys(HEADINGS) as (keyof Row)[];
  const all = [HEADINGS, ...states.map((state) => rowOf(state, options))];
  // One set of widths for every block, so the agents' columns line up.
  const widths = keys.map((key) => Math.max(...all.map((row) => row[key].length)));
  const line = (row: Row) =>
    keys.map((key, i) => i === keys.length - 1 ? row[key] : row[key].padEnd(widths[i])).join("  ")
      .trimEnd();
  const groups = byAgent(states);
  if (groups === null) {
    return [...all.map(line), "", summaryLine(totalsOf(states), options.elapsedMs ?? null)];
  }
  const lines: string[] = [];
  for (const { agent, states: mine } of groups) {
    lines.push(`agent ${agent}`, line(HEADINGS));
    for (const state of mine) lines.push(line(rowOf(state, options)));
    lines.push(`${agent}: ${summaryLine(totalsOf(mine), null)}`, "");
  }
  const whole = groups.length === 1 ? "1 agent" : `all ${groups.length} agents`;
  lines.push(`${whole}: ${summaryLine(totalsOf(states), options.elapsedMs ?? null)}`);
  return lines;
}

/** Notes about where to look: the working directories kept for scenarios that did not pass. */
export function followUps(suiteRunId: string, states: readonly ScenarioState[]): string[] {
  const kept = states.flatMap((state) => {
    const last = state.attempts[state.attempts.length - 1];
    return last?.workdir && state.status !== "passed"
      ? [`  ${state.instance.id}: ${last.workdir}`]
      : [];
  });
  const lines: string[] = [];
  if (kept.length) {
    lines.push("working directories kept for a look:", ...kept.slice(0, 20));
    if (kept.length > 20) {
      lines.push(`  … and ${kept.length - 20} more (reins suite show ${suiteRunId} --json)`);
    }
  }
  return lines;
}
