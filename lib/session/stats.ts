// Stats of recorded runs: events, model and tool calls, iterations, tokens, cost and duration per
// run, and their sums. Counted in one pass that can be fed events as they arrive (`show --follow`
// keeps no list). Tokens and cost come from the run's last `usage.updated` (running totals); a
// run that reported none falls back to the sum of its model calls' own usage. A run recorded
// through the model gateway counts the calls and tokens the gateway saw at the wire.
import type { RunEvent, RunRecord } from "../store/mod.ts";
import { formatCost, formatDuration, groupDigits, plural } from "./text.ts";

/** The counters stats sums; null means no run reported that counter. */
export interface StatsCounters {
  events: number;
  /** Null when nothing the run recorded tells (Codex and Gemini CLI report no count). */
  modelCalls: number | null;
  toolCalls: number;
  failedToolCalls: number;
  iterations: number;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  reasoningTokens: number | null;
  costUsd: number | null;
  /** Run time: endedAt − startedAt, or up to the last event while a run is still active. */
  durationMs: number;
}

/**
 * Where a run's model-call count comes from: `events`, the model calls it recorded
 * (`model.completed`, the built-in loop's); `gateway`, the calls the model gateway saw at the wire
 * (`model.call.started` that generate); `reported`, the request count its harness reported
 * (`usage.updated`'s `requests`); null when none says (the count is then null too).
 */
export type ModelCallsSource = "events" | "gateway" | "reported" | null;

export interface RunStats extends StatsCounters {
  runId: string;
  modelCallsSource: ModelCallsSource;
  /**
   * The model whose tokens the run counted but that nothing priced (no cost reported, none in
   * reins's table or the config file's `prices`): its cost is null for that reason. Null
   * otherwise, and for models that answer inside reins (demo, mock, replay).
   */
  unpricedModel: string | null;
  parentRunId: string | null;
  status: RunRecord["status"];
  harness: string;
  driver: string;
  startedAt: string;
  endedAt: string | null;
}

export interface StatsTotal extends StatsCounters {
  runs: number;
}

const TOKEN_COUNTERS = [
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "reasoningTokens",
  "costUsd",
] as const;
type TokenCounter = typeof TOKEN_COUNTERS[number];

/** Counts one run's events, fed in order, one at a time. */
export class RunTally {
  events = 0;
  modelCalls = 0;
  toolCalls = 0;
  failedToolCalls = 0;
  iterations = 0;
  /** Whether the run records its model calls as events (it asked a model: model.requested). */
  #recordsCalls = false;
  /** What run.started and session.linked said of the agent's model (the later one wins). */
  #model: string | null = null;
  #inProcess = false;
  /** The last `usage.updated` (running totals), if any. */
  #reported: Record<string, unknown> | null = null;
  /** Sums of the model calls' own usage, for runs that report no running totals. */
  #calls: Record<TokenCounter, number | null> = {
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    costUsd: null,
  };
  #requests: number | null = null;
  /** The model calls the gateway recorded at the wire, and the sums of their usage. */
  #wireCalls = 0;
  #wire: Record<TokenCounter, number | null> = {
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    costUsd: null,
  };
  lastTimestamp: string | null = null;

  add(event: RunEvent): void {
    this.events++;
    this.lastTimestamp = event.timestamp;
    // What arrived after the run settled is evidence, not part of the run.
    if (event.ignored !== undefined) return;
    switch (event.type) {
      case "run.started":
      case "session.linked": {
        const agent = event.payload.agent;
        if (agent?.model !== undefined) this.#model = agent.model;
        if (agent?.inProcess !== undefined) this.#inProcess = agent.inProcess;
        break;
      }
      case "model.requested":
        this.#recordsCalls = true;
        break;
      case "model.completed": {
        this.modelCalls++;
        const usage = event.payload.usage;
        if (usage !== null) {
          // Field by field, not by a loop over the counters' names: one of every model call's
          // events, and a property looked up by a name that varies is a slow lookup.
          const calls = this.#calls;
          const { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens } = usage;
          const { reasoningTokens, costUsd } = usage;
          if (typeof inputTokens === "number") {
            calls.inputTokens = (calls.inputTokens ?? 0) + inputTokens;
          }
          if (typeof outputTokens === "number") {
            calls.outputTokens = (calls.outputTokens ?? 0) + outputTokens;
          }
          if (typeof cacheReadTokens === "number") {
            calls.cacheReadTokens = (calls.cacheReadTokens ?? 0) + cacheReadTokens;
          }
          if (typeof cacheWriteTokens === "number") {
            calls.cacheWriteTokens = (calls.cacheWriteTokens ?? 0) + cacheWriteTokens;
          }
          if (typeof reasoningTokens === "number") {
            calls.reasoningTokens = (calls.reasoningTokens ?? 0) + reasoningTokens;
          }
          if (typeof costUsd === "number") calls.costUsd = (calls.costUsd ?? 0) + costUsd;
        }
        break;
      }
      case "model.call.started":
        if (event.payload.generates) this.#wireCalls++;
        break;
      case "model.call.completed": {
        const usage = event.payload.usage;
        if (usage === null) break;
        const wire = this.#wire;
        for (const counter of TOKEN_COUNTERS) {
          const value = usage[counter];
          if (typeof value === "number") wire[counter] = (wire[counter] ?? 0) + value;
        }
        break;
      }
      case "tool.started":
        this.toolCalls++;
        break;
      case "tool.completed":
        if (!event.payload.ok) this.failedToolCalls++;
        break;
      case "heartbeat":
        this.iterations = Math.max(this.iterations, event.payload.iteration + 1);
        break;
      case "usage.updated":
        this.#reported = event.payload;
        this.#requests = event.payload.requests;
        break;
      default:
        break;
    }
  }

  /** The run's stats; `record` gives its identity and times. */
  stats(record: RunRecord): RunStats {
    const { modelCalls, modelCallsSource } = this.#modelCalls(record);
    const tokens = {} as Record<TokenCounter, number | null>;
    const wired = this.#wireCalls > 0;
    for (const counter of TOKEN_COUNTERS) {
      const reported = this.#reported?.[counter];
      const harness = this.#reported !== null
        ? (typeof reported === "number" ? reported : null)
        : this.#calls[counter];
      // Through the gateway, the calls' own usage at the wire; a cost it could not price (no
      // price for the model) is the harness's own figure.
      tokens[counter] = wired && (counter !== "costUsd" || this.#wire.costUsd !== null)
        ? this.#wire[counter]
        : harness;
    }
    return {
      runId: record.id,
      modelCallsSource,
      unpricedModel: tokens.costUsd === null && !this.#inProcess && this.#model !== null &&
          (tokens.inputTokens !== null || tokens.outputTokens !== null)
        ? this.#model
        : null,
      parentRunId: record.parentRunId,
      status: record.status,
      harness: record.harness,
      driver: record.driver,
      startedAt: record.startedAt,
      endedAt: record.endedAt,
      events: this.events,
      modelCalls,
      toolCalls: this.toolCalls,
      failedToolCalls: this.failedToolCalls,
      iterations: this.iterations,
      ...tokens,
      durationMs: durationOf(record, this.lastTimestamp),
    };
  }

  /** The run's model-call count and where it comes from (see ModelCallsSource). */
  #modelCalls(
    record: RunRecord,
  ): { modelCalls: number | null; modelCallsSource: ModelCallsSource } {
    // The loop records every call it makes, none too: its count is known even when it is 0.
    if (this.modelCalls > 0 || this.#recordsCalls || record.driver === "loop") {
      return { modelCalls: this.modelCalls, modelCallsSource: "events" };
    }
    // Harnesses that record no model.completed: the calls the gateway saw at the wire, else the
    // requests they reported.
    if (this.#wireCalls > 0) return { modelCalls: this.#wireCalls, modelCallsSource: "gateway" };
    if (this.#requests !== null) {
      return { modelCalls: this.#requests, modelCallsSource: "reported" };
    }
    return { modelCalls: null, modelCallsSource: null };
  }
}

function durationOf(record: RunRecord, lastTimestamp: string | null): number {
  const start = Date.parse(record.startedAt);
  const end = Date.parse(record.endedAt ?? lastTimestamp ?? record.startedAt);
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : 0;
}

/** The stats of one run from its record and all its events. */
export function runStats(record: RunRecord, events: readonly RunEvent[]): RunStats {
  const tally = new RunTally();
  for (const event of events) tally.add(event);
  return tally.stats(record);
}

/** Sums `runs`: counts add up; a token or cost counter is null only when no run reported it. */
export function sumStats(runs: readonly StatsCounters[]): StatsTotal {
  const total: StatsTotal = {
    runs: runs.length,
    events: 0,
    modelCalls: null,
    toolCalls: 0,
    failedToolCalls: 0,
    iterations: 0,
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    costUsd: null,
    durationMs: 0,
  };
  for (const run of runs) {
    total.events += run.events;
    if (run.modelCalls !== null) total.modelCalls = (total.modelCalls ?? 0) + run.modelCalls;
    total.toolCalls += run.toolCalls;
    total.failedToolCalls += run.failedToolCalls;
    total.iterations += run.iterations;
    total.durationMs += run.durationMs;
    for (const counter of TOKEN_COUNTERS) {
      const value = run[counter];
      if (value !== null) total[counter] = (total[counter] ?? 0) + value;
    }
  }
  // Sums of float dollars drift (0.1 + 0.2); no model bills below a millionth of a cent.
  if (total.costUsd !== null) total.costUsd = Math.round(total.costUsd * 1e8) / 1e8;
  return total;
}

/** One line for the end of a transcript: `4 model calls · 3 tool calls · 538 in / 138 out …`. */
export function statsSummary(stats: StatsCounters & { unpricedModel?: string | null }): string {
  const parts = [
    stats.modelCalls === null ? "model calls unknown" : plural(stats.modelCalls, "model call"),
    `${plural(stats.toolCalls, "tool call")}${
      stats.failedToolCalls > 0 ? ` (${groupDigits(stats.failedToolCalls)} failed)` : ""
    }`,
  ];
  if (stats.inputTokens !== null || stats.outputTokens !== null) {
    parts.push(`${tokens(stats.inputTokens)} in / ${tokens(stats.outputTokens)} out tokens`);
  }
  if (stats.costUsd !== null) parts.push(formatCost(stats.costUsd));
  else if (stats.unpricedModel) parts.push(`cost unknown (${unpricedNote(stats.unpricedModel)})`);
  return parts.join(" · ");
}

/** Why a run's cost is unknown, and what gives it one. */
export function unpricedNote(model: string): string {
  return `no price for ${model}: add it under "prices" in the config file`;
}

const tokens = (n: number | null) => n === null ? "-" : groupDigits(n);

const COLUMNS: { title: string; align: "left" | "right"; cell: (row: StatsRow) => string }[] = [
  { title: "run", align: "left", cell: (row) => row.label },
  { title: "status", align: "left", cell: (row) => row.status },
  { title: "events", align: "right", cell: (row) => groupDigits(row.stats.events) },
  { title: "model", align: "right", cell: (row) => tokens(row.stats.modelCalls) },
  { title: "tools", align: "right", cell: (row) => groupDigits(row.stats.toolCalls) },
  { title: "iter", align: "right", cell: (row) => groupDigits(row.stats.iterations) },
  { title: "input", align: "right", cell: (row) => tokens(row.stats.inputTokens) },
  { title: "output", align: "right", cell: (row) => tokens(row.stats.outputTokens) },
  { title: "cache r", align: "right", cell: (row) => tokens(row.stats.cacheReadTokens) },
  { title: "cache w", align: "right", cell: (row) => tokens(row.stats.cacheWriteTokens) },
  {
    title: "cost",
    align: "right",
    cell: (row) => row.stats.costUsd === null ? "-" : formatCost(row.stats.costUsd),
  },
  { title: "duration", align: "right", cell: (row) => formatDuration(row.stats.durationMs) },
];

/** A line of the stats table: a run, or a total (status empty). */
export interface StatsRow {
  label: string;
  status: string;
  stats: StatsCounters;
}

/** The rows as an aligned table with a title line; `rule` rows get a line drawn above them. */
export function formatStatsTable(rows: readonly (StatsRow & { rule?: boolean })[]): string {
  const cells = [
    COLUMNS.map((column) => column.title),
    ...rows.map((row) => COLUMNS.map((column) => column.cell(row))),
  ];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  const render = (line: string[]) =>
    line.map((cell, i) =>
      COLUMNS[i].align === "left" ? cell.padEnd(widths[i]) : cell.padStart(widths[i])
    ).join("  ").trimEnd();
  const rendered = cells.map(render);
  const ruleWidth = Math.max(...rendered.map((line) => line.length));
  const out = [rendered[0]];
  rows.forEach((row, i) => {
    if (row.rule) out.push("─".repeat(ruleWidth));
    out.push(rendered[i + 1]);
  });
  return out.join("\n");
}
