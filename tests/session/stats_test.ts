import assert from "node:assert/strict";
import type { RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { parseEventLog } from "../../lib/store/event_log.ts";
import {
  formatStatsTable,
  runStats,
  RunTally,
  statsSummary,
  sumStats,
} from "../../lib/session/stats.ts";

const FIXTURES = new URL("../fixtures/session/", import.meta.url).pathname;

function loadFixture(name: string): { record: RunRecord; events: RunEvent[] } {
  const record = JSON.parse(Deno.readTextFileSync(`${FIXTURES}${name}/run.json`)) as RunRecord;
  const read = parseEventLog(Deno.readTextFileSync(`${FIXTURES}${name}/events.jsonl`), record.id);
  return { record, events: read.events };
}

function lastUsage(events: RunEvent[]) {
  return events.findLast((event) => event.type === "usage.updated")!.payload as Record<
    string,
    number | null
  >;
}

Deno.test("runStats() counts a recorded loop run's calls and takes its last usage totals", () => {
  const { record, events } = loadFixture("loop_tools");
  assert.deepEqual(runStats(record, events), {
    runId: record.id,
    modelCallsSource: "events",
    unpricedModel: null,
    parentRunId: null,
    status: "completed",
    harness: "reins",
    driver: "loop",
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    events: 37,
    modelCalls: 5,
    toolCalls: 6,
    failedToolCalls: 2,
    iterations: 5,
    inputTokens: 8200,
    outputTokens: 510,
    cacheReadTokens: 1900,
    cacheWriteTokens: 0,
    reasoningTokens: 120,
    costUsd: lastUsage(events).costUsd,
    durationMs: Date.parse(record.endedAt!) - Date.parse(record.startedAt),
  });
});

Deno.test("runStats() keeps counters a harness did not report as null", () => {
  const { record, events } = loadFixture("command_agent");
  const stats = runStats(record, events);
  assert.equal(stats.modelCalls, 3, "no model.completed: the reported request count");
  assert.equal(stats.modelCallsSource, "reported");
  assert.equal(stats.inputTokens, 5000);
  assert.equal(stats.cacheReadTokens, null);
  assert.equal(stats.costUsd, null);
  assert.equal(stats.iterations, 0);
});

// regression: a harness that reports no count of its model calls (Codex, Gemini CLI) showed 0.
Deno.test("runStats() keeps the model calls of a run that recorded and reported none unknown", () => {
  const { record, events } = loadFixture("command_agent");
  const withoutCount = events.map((event) =>
    event.type === "usage.updated"
      ? { ...event, payload: { ...event.payload, requests: null } } as RunEvent
      : event
  );
  const stats = runStats({ ...record, driver: "codex", harness: "codex" }, withoutCount);
  assert.equal(stats.modelCalls, null);
  assert.equal(stats.modelCallsSource, null);
  assert.match(statsSummary(stats), /^model calls unknown · /);
  const total = sumStats([stats, stats]);
  assert.equal(total.modelCalls, null);
  const loop = runStats(loadFixture("loop_tools").record, loadFixture("loop_tools").events);
  assert.equal(sumStats([stats, loop]).modelCalls, 5, "the known counts add up");
});

Deno.test("runStats() measures an active run up to its last event", () => {
  const { record, events } = loadFixture("approval_waiting");
  const stats = runStats(record, events);
  assert.equal(stats.endedAt, null);
  assert.equal(
    stats.durationMs,
    Date.parse(events.at(-1)!.timestamp) - Date.parse(record.startedAt),
  );
});

Deno.test("RunTally.add() leaves out events that arrived after the run settled", () => {
  const { record, events } = loadFixture("loop_tools");
  const late = { ...events[4], sequence: 37, ignored: "run already completed" } as RunEvent;
  const tally = new RunTally();
  for (const event of [...events, late]) tally.add(event);
  const stats = tally.stats(record);
  assert.equal(stats.events, 38, "kept as evidence, so counted as an event");
  assert.equal(stats.modelCalls, 5, "but not as a model call");
});

Deno.test("runStats() sums the model calls' own usage when the run reported no totals", () => {
  const { record, events } = loadFixture("loop_tools");
  const withoutTotals = events.filter((event) => event.type !== "usage.updated");
  const stats = runStats(record, withoutTotals);
  assert.equal(stats.inputTokens, 1200 + 1500 + 1700 + 1800 + 2000);
  assert.equal(stats.outputTokens, 40 + 60 + 90 + 20 + 300);
  assert.equal(stats.cacheReadTokens, 800 + 1100);
  assert.equal(stats.cacheWriteTokens, null);
  assert.equal(stats.reasoningTokens, 120);
});

Deno.test("sumStats() adds counts and leaves a counter null only when no run reported it", () => {
  const loop = runStats(loadFixture("loop_tools").record, loadFixture("loop_tools").events);
  const agent = runStats(loadFixture("command_agent").record, loadFixture("command_agent").events);
  const total = sumStats([loop, agent]);
  assert.deepEqual(total, {
    runs: 2,
    events: 37 + 15,
    modelCalls: 5 + 3,
    toolCalls: 6 + 1,
    failedToolCalls: 2 + 1,
    iterations: 5,
    inputTokens: 8200 + 5000,
    outputTokens: 510 + 700,
    cacheReadTokens: 1900,
    cacheWriteTokens: 0,
    reasoningTokens: 120,
    costUsd: 0.0258,
    durationMs: loop.durationMs + agent.durationMs,
  });
  assert.deepEqual(sumStats([]).inputTokens, null);
});

Deno.test("formatStatsTable() aligns runs and totals under their titles", () => {
  const { record, events } = loadFixture("loop_tools");
  const stats = { ...runStats(record, events), durationMs: 234 };
  assert.equal(
    formatStatsTable([
      { label: "a-run", status: "completed", stats },
      { label: "total (1 run)", status: "", stats: sumStats([stats]), rule: true },
    ]),
    [
      "run            status     events  model  tools  iter  input  output  cache r  cache w     cost  duration",
      "a-run          completed      37      5      6     5  8,200     510    1,900        0  $0.0258    234 ms",
      "─".repeat(104),
      "total (1 run)                 37      5      6     5  8,200     510    1,900        0  $0.0258    234 ms",
    ].join("\n"),
  );
  assert.equal(
    statsSummary(stats),
    "5 model calls · 6 tool calls (2 failed) · 8,200 in / 510 out tokens · $0.0258",
  );
});
