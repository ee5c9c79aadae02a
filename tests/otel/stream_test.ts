// A run's trace made as it is read (lib/otel/spans.ts streamRunSpans, lib/otel/request.ts
// streamTraceRequests, lib/store/event_log.ts streamEvents): the same spans in the same order as
// runSpans() makes from the whole log, the same requests as splitRequest() makes of the whole
// trace, and spans handed over while the log is still being read, not after it.
import assert from "node:assert/strict";
import fc from "fast-check";
import { splitRequest, utf8Length } from "../../lib/otel/batch.ts";
import { streamTraceRequests, type TraceOptions, traceRequest } from "../../lib/otel/request.ts";
import { runSpans, streamRunSpans } from "../../lib/otel/spans.ts";
import type { EventInput, RunEvent } from "../../lib/store/contracts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { parseEventLog, readEvents, streamEvents } from "../../lib/store/event_log.ts";
import { tempDir } from "../support/reins.ts";
import { recordedRun, START_MS } from "./_runs.ts";

const iso = (ms: number) => new Date(START_MS + ms).toISOString();

type Step = EventInput & { atMs?: number };

/** One random step of a run, drawn from every event the spans read, in any order. */
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ model: fc.constantFrom("gpt-4o", "claude-x") }).map(({ model }) => ({
    type: "model.requested" as const,
    payload: { historyLength: 1, toolCount: 2, model },
  })),
  fc.record({ tokens: fc.nat(500), stop: fc.constantFrom("tool_use", "end_turn", null) }).map((
    { tokens, stop },
  ) => ({
    type: "model.completed" as const,
    payload: {
      text: "thinking",
      toolCalls: [],
      stopReason: stop,
      usage: { inputTokens: tokens, outputTokens: 3 },
      reasoning: null,
    },
  })),
  fc.record({ call: fc.constantFrom("w1", "w2", "w3"), generates: fc.boolean() }).map((
    { call, generates },
  ) => ({
    type: "model.call.started" as const,
    payload: {
      callId: call,
      wire: "openai.chat" as const,
      generates,
      route: "openai",
      method: "POST",
      path: "/v1/chat/completions",
      model: "gpt-4o",
      stream: false,
      headers: {},
      body: null,
    },
  })),
  fc.record({
    call: fc.constantFrom("w1", "w2", "w3"),
    outcome: fc.constantFrom("ok", "error", "aborted"),
  }).map(({ call, outcome }) => ({
    type: "model.call.completed" as const,
    payload: {
      callId: call,
      outcome: outcome as "ok",
      status: outcome === "ok" ? 200 : 500,
      headers: {},
      body: null,
      chunks: [],
      model: "gpt-4o",
      stopReason: "stop",
      usage: { inputTokens: 5, outputTokens: 2 },
      firstByteMs: 3,
      durationMs: 9,
    },
  })),
  fc.record({ ref: fc.constantFrom("m1", "m2", "m3", null) }).map(({ ref }) => ({
    type: "message.completed" as const,
    payload: {
      role: "assistant" as const,
      text: "said",
      ...(ref === null
        ? {}
        : { modelCall: { id: ref, model: "claude-x", stopReason: "end_turn" } }),
    },
  })),
  fc.record({
    call: fc.constantFrom("c1", "c2", "c3", "c4"),
    tool: fc.constantFrom("read", "write"),
    ref: fc.constantFrom("m1", "m2", null),
  }).map(({ call, tool, ref }) => ({
    type: "tool.started" as const,
    payload: {
      callId: call,
      tool,
      args: { path: "a" },
      ...(ref === null ? {} : { modelCall: { id: ref, model: "claude-x" } }),
    },
  })),
  fc.record({
    call: fc.constantFrom("c1", "c2", "c3", "c4"),
    ok: fc.boolean(),
    denied: fc.boolean(),
    startedAt: fc.option(fc.integer({ min: -50, max: 3000 })),
  }).map(({ call, ok, denied, startedAt }) => ({
    type: "tool.completed" as const,
    payload: {
      callId: call,
      ok,
      ...(ok ? { result: "done" } : { error: denied ? "denied by policy" : "boom" }),
      startedAt: startedAt === null ? null : iso(startedAt),
      finishedAt: null,
    },
  })),
  fc.record({
    id: fc.constantFrom("a1", "a2", "a3"),
    call: fc.constantFrom("c1", "c2", "c3", "c4", null),
    tool: fc.constantFrom("read", "write"),
  }).map(({ id, call, tool }) => ({
    type: "approval.requested" as const,
    payload: { approvalId: id, tool, args: {}, ...(call === null ? {} : { callId: call }) },
  })),
  fc.record({ id: fc.constantFrom("a1", "a2", "a3"), deny: fc.boolean() }).map(({ id, deny }) => ({
    type: "approval.resolved" as const,
    payload: { approvalId: id, decision: deny ? "deny" as const : "allow" as const, by: "cli" },
  })),
  fc.constantFrom<Step>(
    { type: "problem", payload: { source: "driver", reason: "something" } },
    { type: "question.requested", payload: { questionId: "q1", text: "ok?" } },
    { type: "budget.warning", payload: { ratio: 0.8 } },
    { type: "usage.updated", payload: { inputTokens: 9, outputTokens: 9 } } as Step,
    { type: "completed", payload: { reason: null, result: "all done" } } as Step,
    { type: "failed", payload: { reason: "timed out after 3 s", result: null } } as Step,
  ),
);

/** A run of random steps at random times: mostly forward, sometimes back, sometimes together. */
const randomRun = fc.array(
  fc.tuple(step, fc.integer({ min: -20, max: 40 })),
  { maxLength: 60 },
).map((steps) => {
  let atMs = 0;
  const events = steps.map(([s, delta]) => {
    atMs = Math.max(0, atMs + delta);
    return { ...s, atMs };
  });
  return recordedRun({ events });
});

Deno.test("streamRunSpans() makes the spans runSpans() makes, in the same order, for any run", () => {
  fc.assert(
    fc.property(randomRun, fc.boolean(), ({ record, events }, content) => {
      const whole = runSpans(record, events, { content });
      const streamed = [...streamRunSpans(record, events, { content })];
      assert.deepEqual(streamed, whole);
    }),
    { numRuns: 400 },
  );
});

Deno.test("streamRunSpans(): an approval naming a tool call that already finished lands on it", () => {
  // The first reading hands the tool call over before the approval names it: it must start again
  // holding that call, or the span would miss its approval.
  const { record, events } = recordedRun({
    events: [
      { type: "tool.started", payload: { callId: "c1", tool: "write", args: {} } },
      {
        type: "tool.completed",
        payload: { callId: "c1", ok: false, error: "no", startedAt: null, finishedAt: null },
      },
      { type: "model.requested", payload: { historyLength: 1, toolCount: 1 } },
      {
        type: "approval.requested",
        payload: { approvalId: "a1", tool: "write", args: {}, callId: "c1" },
      } as Step,
      { type: "approval.resolved", payload: { approvalId: "a1", decision: "deny", by: "cli" } },
      { type: "completed", payload: { reason: null, result: "ok" } } as Step,
    ],
  });
  const whole = runSpans(record, events, { content: false });
  const tool = whole.find((span) => span.name === "execute_tool write")!;
  assert.equal(tool.events.length, 2, "the approval is on the tool call");
  assert.deepEqual([...streamRunSpans(record, events, { content: false })], whole);
});

const TRACE_OPTIONS: TraceOptions = {
  content: true,
  serviceName: "reins",
  serviceVersion: "0.0.0",
  redact: (text) => text.replaceAll("secret", "[redacted]"),
  valueLengthLimit: 40,
};

Deno.test("utf8Length() is TextEncoder's length, lone surrogates included", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), (text) => {
      assert.equal(utf8Length(text), new TextEncoder().encode(text).length);
    }),
    { numRuns: 2000 },
  );
  for (const text of ["\ud800", "a\udc00b", "\ud83d\ude00", "\ud83d", "é€𝄞"]) {
    assert.equal(utf8Length(text), new TextEncoder().encode(text).length, JSON.stringify(text));
  }
});

Deno.test("streamTraceRequests() makes the requests splitRequest() makes of the whole trace", () => {
  fc.assert(
    fc.property(
      fc.array(randomRun, { maxLength: 3 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 300, max: 6000 }),
      (runs, spans, bytes) => {
        const limits = { spans, bytes };
        const whole = splitRequest(traceRequest(runs, TRACE_OPTIONS), limits);
        const stream = streamTraceRequests(runs, TRACE_OPTIONS, limits);
        const streamed = [];
        let next = stream.next();
        // Each request's bytes are the batcher's own, good until the next is made: read as taken.
        for (; !next.done; next = stream.next()) {
          streamed.push({
            json: new TextDecoder().decode(next.value.body),
            spans: next.value.spans,
          });
        }
        // Byte for byte what the whole trace's requests are as JSON, span counts told right.
        assert.deepEqual(
          streamed.map((request) => request.json),
          whole.map((r) => JSON.stringify(r)),
        );
        assert.deepEqual(
          streamed.map((body) => body.spans),
          whole.map((r) => r.resourceSpans[0].scopeSpans[0].spans.length),
        );
        const count = runs.reduce(
          (n, run) => n + runSpans(run.record, run.events, { content: true }).length,
          0,
        );
        assert.equal(next.value, count);
      },
    ),
    { numRuns: 200 },
  );
});

/** A loop run of `calls` model calls each asking for a tool that then runs: 4 events a call. */
function loopRun(calls: number) {
  const events: Step[] = [];
  for (let i = 0; i < calls; i++) {
    const callId = `c${i}`;
    events.push(
      { type: "model.requested", payload: { historyLength: i, toolCount: 1 } },
      {
        type: "model.completed",
        payload: {
          text: null,
          toolCalls: [{ id: callId, name: "read", args: {} }],
          stopReason: "tool_use",
          usage: { inputTokens: 10, outputTokens: 2 },
          reasoning: null,
        },
      },
      { type: "tool.started", payload: { callId, tool: "read", args: {} } },
      {
        type: "tool.completed",
        payload: { callId, ok: true, result: "x", startedAt: null, finishedAt: null },
      },
    );
  }
  events.push({ type: "completed", payload: { reason: null, result: "done" } } as Step);
  return recordedRun({ events });
}

Deno.test("streamRunSpans() hands each span over while the log is still being read", () => {
  const calls = 5_000;
  const { record, events } = loopRun(calls);
  // A source that counts what was read of it: each reading starts at 0.
  let read = 0;
  let readings = 0;
  const source = {
    *[Symbol.iterator]() {
      readings++;
      read = 0;
      for (const event of events) {
        read++;
        yield event;
      }
    },
  };
  const spans = streamRunSpans(record, source, { content: false });
  const root = spans.next();
  assert.equal(root.done, false);
  assert.equal((root.value as { name: string }).name, "invoke_agent reins");
  assert.equal(readings, 1, "the root span comes after one whole reading");
  // Each child is handed over within a few events of its own: never more than a call's worth of
  // the log (4 events) ahead, so what waits is bounded by the run's open spans, not its length.
  let children = 0;
  let worst = 0;
  for (let next = spans.next(); !next.done; next = spans.next()) {
    children++;
    // Child k (0-based) is call k/2's chat or tool span, whose last event is event 2 + 2k or so.
    const ownEvent = 1 + 2 * children;
    worst = Math.max(worst, read - ownEvent);
  }
  assert.equal(readings, 2);
  assert.equal(children, 2 * calls);
  assert.ok(worst <= 4, `a span was handed over ${worst} events after its own`);
});

Deno.test("streamEvents() reads what parseEventLog() reads, line by line, a torn tail and damage included", async () => {
  await using dir = await tempDir();
  const root = new DataRoot(dir.path);
  const { record, events } = loopRun(3_000);
  const runId = record.id;
  const path = root.layout.events(runId);
  root.ensureDir(path.slice(0, path.lastIndexOf("/")));
  // Lines longer than a read (256 KiB) and characters split across reads, garbage, a blank line,
  // another run's event and a torn last line.
  const lines: string[] = events.map((event: RunEvent, i) =>
    JSON.stringify(
      i === 7 ? { ...event, payload: { ...event.payload, pad: "é€𝄞".repeat(90_000) } } : event,
    )
  );
  lines.splice(20, 0, "not json at all", "", JSON.stringify({ ...events[3], runId: "other" }));
  const text = lines.join("\n") + "\n" + JSON.stringify(events[0]).slice(0, 30);
  await Deno.writeTextFile(path, text, { mode: 0o600 });
  const whole = parseEventLog(text, runId);
  const problems: { line: number; reason: string }[] = [];
  const streamed = [...streamEvents(root, runId, (problem) => problems.push(problem))];
  assert.equal(streamed.length, whole.events.length);
  assert.deepEqual(streamed, whole.events);
  assert.deepEqual(problems, whole.problems);
  // It reads the same again, and a run without a log reads as empty.
  assert.equal([...streamEvents(root, runId)].length, whole.events.length);
  assert.deepEqual([...streamEvents(root, "0195f000-0000-7000-8000-ffffffffffff")], []);
  root.close();
});

Deno.test("streamEvents() keeps a byte order mark where readEvents() does, at the file's start too", async () => {
  await using dir = await tempDir();
  const root = new DataRoot(dir.path);
  const { record, events } = loopRun(40);
  const path = root.layout.events(record.id);
  root.ensureDir(path.slice(0, path.lastIndexOf("/")));
  // readEvents() keeps a BOM (JSON.parse refuses the line); a decoder of the whole file that
  // drops a leading one (TextDecoder's default) would read line 1 where it does not.
  const lines = events.map((event: RunEvent) => JSON.stringify(event));
  lines[5] = "\uFEFF" + lines[5];
  await Deno.writeTextFile(path, "\uFEFF" + lines.join("\n") + "\n", { mode: 0o600 });
  const whole = readEvents(root, record.id);
  assert.deepEqual(whole.problems.map((problem) => problem.line), [1, 6]);
  const problems: { line: number; reason: string }[] = [];
  assert.deepEqual([...streamEvents(root, record.id, (p) => problems.push(p))], whole.events);
  assert.deepEqual(problems, whole.problems);
  root.close();
});
