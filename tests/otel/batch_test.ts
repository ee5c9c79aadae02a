// A large run's trace goes as several requests (lib/otel/batch.ts): at most 512 spans and 4 MiB
// each, in order, and an export that fails part way resumes from the outbox at the first request
// not acknowledged. Against the fake collector (a real HTTP server on port 0).
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { MAX_BATCH_BYTES, MAX_BATCH_SPANS, splitRequest } from "../../lib/otel/batch.ts";
import { buildTrace, exportNow, exportOnSettle } from "../../lib/otel/export.ts";
import { exportSettings } from "../../lib/otel/target.ts";
import { listOtlpEntryIds, readOtlpEntry, writeOtlpEntry } from "../../lib/otel/outbox.ts";
import type { ExportTraceServiceRequest, Span } from "../../lib/otel/wire.ts";
import type { EventInput, RunEvent } from "../../lib/store/contracts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { reins, tempDir } from "../support/reins.ts";
import { type OtlpSpan, type ReceivedExport, startFakeCollector } from "../fixtures/fake_otlp.ts";
import { recordedRun } from "./_runs.ts";

const encoder = new TextEncoder();
const bytesOf = (value: unknown) => encoder.encode(JSON.stringify(value)).length;
const spansOf = (request: { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] }) =>
  request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));

/** A loop run of `calls` model calls, each asking for a tool that then runs: 2 spans a call. */
function bigRun(calls: number) {
  const model = "openai:gpt-4o-mini";
  const events: EventInput[] = [{
    type: "message.completed",
    payload: { role: "user", text: "go" },
  }];
  for (let i = 0; i < calls; i++) {
    const callId = `c${i}`;
    events.push(
      { type: "model.requested", payload: { historyLength: 2 + 2 * i, toolCount: 4, model } },
      {
        type: "model.completed",
        payload: {
          text: null,
          toolCalls: [{ id: callId, name: "read_file", args: { path: `f${i}.txt` } }],
          stopReason: "tool_use",
          usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.1 },
          reasoning: null,
        },
      },
      { type: "tool.started", payload: { callId, tool: "read_file", args: { path: `f${i}.txt` } } },
      {
        type: "tool.completed",
        payload: {
          callId,
          ok: true,
          result: "x".repeat(200),
          startedAt: new Date().toISOString(),
          finishedAt: new Date().toISOString(),
        },
      },
    );
  }
  events.push({ type: "completed", payload: { reason: null, result: "done" } });
  return recordedRun({ events: events.map((e, i) => ({ ...e, atMs: i })) });
}

async function settleBig(home: string, url: string, calls: number) {
  await Deno.mkdir(home, { recursive: true });
  const run = bigRun(calls);
  const warnings: string[] = [];
  const outcomes = await exportOnSettle({
    root: new DataRoot(home),
    settings: loadSettings({
      REINS_HOME: home,
      HOME: home,
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "60000",
    }),
    runId: run.record.id,
    load: () => run,
    warn: (message) => warnings.push(message),
    budgetMs: 120_000,
  });
  return { run, outcomes, warnings };
}

/** Each request within the limits, and every parent id among the spans sent before or with it. */
function assertBatched(requests: readonly ReceivedExport[]): OtlpSpan[] {
  const seen = new Set<string>();
  const all: OtlpSpan[] = [];
  for (const [i, request] of requests.entries()) {
    assert.ok(request.body !== null, `request ${i} is JSON`);
    const spans = spansOf(request.body) as OtlpSpan[];
    assert.ok(spans.length > 0 && spans.length <= MAX_BATCH_SPANS, `request ${i}: ${spans.length}`);
    const bytes = encoder.encode(request.raw).length;
    assert.ok(bytes <= MAX_BATCH_BYTES, `request ${i}: ${bytes} bytes`);
    assert.equal(request.body.resourceSpans[0].resource.attributes.length > 0, true);
    for (const span of spans) seen.add(span.spanId);
    for (const span of spans) {
      if (span.parentSpanId) {
        assert.ok(seen.has(span.parentSpanId), `request ${i}: parent of ${span.name} not yet sent`);
      }
    }
    all.push(...spans);
  }
  return all;
}

Deno.test("splitRequest() keeps each request within the span and byte limits, in order, and a span over the byte limit alone", () => {
  const span = (i: number, size: number): Span => ({
    traceId: "t".repeat(32),
    spanId: String(i).padStart(16, "0"),
    name: `s${i}`,
    kind: 1,
    startTimeUnixNano: "1",
    endTimeUnixNano: "2",
    attributes: [{ key: "pad", value: { stringValue: "y".repeat(size) } }],
    events: [],
    links: [],
    status: {},
    flags: 0x101,
  } as unknown as Span);
  const sizes = [100, 300, 50, 5_000, 10, 10, 10, 10, 10, 10, 10, 900, 900, 900];
  const request = {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "reins" } }] },
        scopeSpans: [
          { scope: { name: "a" }, spans: sizes.slice(0, 7).map((n, i) => span(i, n)) },
          { scope: { name: "b" }, spans: sizes.slice(7).map((n, i) => span(i + 7, n)) },
        ],
      },
    ],
  } as unknown as ExportTraceServiceRequest;
  const limits = { spans: 4, bytes: 2_000 };
  const batches = splitRequest(request, limits);
  assert.deepEqual(
    batches.flatMap((b) => spansOf(b).map((s) => (s as Span).name)),
    spansOf(request).map((s) => (s as Span).name),
    "every span once, in order",
  );
  for (const batch of batches) {
    const spans = spansOf(batch) as Span[];
    assert.ok(spans.length <= limits.spans);
    if (spans.some((s) => s.name === "s3")) {
      assert.equal(spans.length, 1, "the span over the limit goes alone");
      assert.ok(bytesOf(batch) > limits.bytes);
    } else assert.ok(bytesOf(batch) <= limits.bytes, `${bytesOf(batch)} bytes`);
    for (const rs of batch.resourceSpans) {
      assert.deepEqual(rs.resource, request.resourceSpans[0].resource);
    }
  }
  assert.ok(batches.length >= 5, `${batches.length} requests`);
  // A scope's spans keep their scope when a request holds two scopes.
  const mixed = batches.find((b) => b.resourceSpans[0].scopeSpans.length === 2);
  assert.ok(mixed, "some request carries the end of scope a and the start of scope b");
  assert.deepEqual(mixed.resourceSpans[0].scopeSpans.map((ss) => ss.scope.name), ["a", "b"]);
});

Deno.test("a run of 10k+ spans goes to the collector as several requests of at most 512 spans and 4 MiB, in order", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const { run, outcomes, warnings } = await settleBig(`${dir.path}/home`, collector.url, 5_200);
  assert.deepEqual(warnings, []);
  assert.deepEqual(outcomes?.map((o) => o.state), ["exported"]);
  const spans = assertBatched(collector.received);
  assert.ok(spans.length > 10_000, `${spans.length} spans`);
  assert.equal(outcomes![0].spans, spans.length);
  assert.ok(collector.received.length >= Math.ceil(spans.length / MAX_BATCH_SPANS));
  assert.equal(new Set(spans.map((s) => s.spanId)).size, spans.length, "no span twice");
  assert.ok(spans.every((s) => s.traceId === run.record.id.replaceAll("-", "")));
  assert.equal(spans[0].parentSpanId ?? "", "", "the root goes first");
  assert.deepEqual(listOtlpEntryIds(new DataRoot(`${dir.path}/home`)), []);
});

Deno.test("a collector failing after the 2nd request: the entry records 2 sent, and --pending sends only the rest", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await using collector = startFakeCollector();
  const unavailable = { kind: "status", status: 503, retryAfter: "0" } as const;
  collector.answer({ kind: "accept" }, { kind: "accept" }, unavailable, unavailable, unavailable, {
    kind: "accept",
  });
  const { outcomes, warnings } = await settleBig(home, collector.url, 2_600);
  assert.deepEqual(outcomes?.map((o) => o.state), ["pending"]);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /request 3 of \d+; 2 acknowledged/);
  assert.equal(collector.accepted().length, 2);
  const [id] = listOtlpEntryIds(new DataRoot(home));
  const kept = readOtlpEntry(new DataRoot(home), id);
  assert.ok(kept?.ok);
  assert.equal(kept.entry.sentBatches, 2);
  // An interrupted delivery (no later write of the entry) leaves the count in its progress file.
  const progress = `${new DataRoot(home).layout.otlpOutbox()}/${id}.progress`;
  assert.equal(Deno.readTextFileSync(progress).trim(), "2");
  const total = kept.entry.spans;
  const firstTwo = collector.spans().map((s) => s.spanId);

  const later = await reins(["export", "otel", "--pending"], {
    home,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  assert.equal(later.code, 0, later.stderr);
  assert.match(later.stdout, new RegExp(`exported 1 run \\(${total} spans\\)`));
  assert.deepEqual(listOtlpEntryIds(new DataRoot(home)), []);
  const left = [...Deno.readDirSync(new DataRoot(home).layout.otlpOutbox())].map((e) => e.name);
  assert.deepEqual(left, [], "no progress or lock file is left");
  const accepted = collector.accepted();
  assert.ok(accepted.length > 3, `${accepted.length} requests accepted`);
  const spans = assertBatched(accepted);
  assert.equal(spans.length, total, "nothing lost");
  assert.equal(new Set(spans.map((s) => s.spanId)).size, total, "nothing sent twice");
  assert.deepEqual(spans.slice(0, firstTwo.length).map((s) => s.spanId), firstTwo);
  // The first request after the failure is the one that failed: the 3rd.
  const failed = collector.received[2].raw;
  assert.equal(collector.received[5].raw, failed);
});

Deno.test("exportNow() (reins export otel) sends a 10k+-span run in batches too, and stops at the first refused", async () => {
  await using collector = startFakeCollector();
  const run = bigRun(5_200);
  const settings = loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  const exporting = exportSettings(settings.otel);
  const outcome = await exportNow([run], settings, exporting, exporting.target!);
  assert.equal(outcome.state, "exported");
  const spans = assertBatched(collector.received);
  assert.equal(spans.length, outcome.spans);
  assert.ok(collector.received.length > 1);

  await using refusing = startFakeCollector();
  refusing.answer({ kind: "accept" }, { kind: "status", status: 400 });
  const target = { ...exporting.target!, url: `${refusing.url}/v1/traces` };
  const refused = await exportNow([run], settings, exporting, target);
  assert.equal(refused.state, "refused");
  assert.match(refused.reason ?? "", /request 2 of \d+; 1 acknowledged/);
  assert.equal(refusing.received.length, 2, "nothing after the refused request");
});

/**
 * The run's events as a source read more than once (as the store's streamEvents is), telling
 * `look` at every 500th event of each reading: which reading (0 the first) and how many it gave.
 */
function watchedEvents(
  events: readonly RunEvent[],
  look: (reading: number, given: number) => void,
): Iterable<RunEvent> {
  let readings = 0;
  return {
    *[Symbol.iterator]() {
      const reading = readings++;
      for (const [i, event] of events.entries()) {
        if (i % 500 === 0) look(reading, i);
        yield event;
      }
    },
  };
}

/** The spans in the requests of an outbox entry's requests file being written (its temp file). */
function spansWritten(home: string): number {
  const folder = new DataRoot(home).layout.otlpOutbox();
  const temp = [...Deno.readDirSync(folder)].find((e) =>
    e.name.includes(".requests.jsonl.") && e.name.endsWith(".tmp")
  );
  if (temp === undefined) return 0;
  return Deno.readTextFileSync(`${folder}/${temp.name}`).split("\n").filter(Boolean)
    .reduce((sum, line) => sum + spansOf(JSON.parse(line)).length, 0);
}

// regression: a run that settled built its whole trace in memory (every event read, every span
// made) before its outbox entry, one file holding the whole request, was written.
Deno.test("exportOnSettle() of a 10k+-span run writes its requests while reading its events, holding at most one request of spans", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.mkdir(home, { recursive: true });
  await using collector = startFakeCollector();
  const run = bigRun(5_200);
  // In the second reading each call (4 events) makes its 2 spans: by the time the reading has
  // given `given` events, all but the request filling (at most 512 spans) and the spans still
  // open (the call's own) are written.
  let looks = 0;
  let mostHeld = 0;
  const events = watchedEvents(run.events, (reading, given) => {
    if (reading !== 1 || given === 0) return;
    looks++;
    const made = 1 + 2 * Math.floor((given - 2) / 4);
    mostHeld = Math.max(mostHeld, made - spansWritten(home));
  });
  const outcomes = await exportOnSettle({
    root: new DataRoot(home),
    settings: loadSettings({
      REINS_HOME: home,
      HOME: home,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "60000",
    }),
    runId: run.record.id,
    load: () => ({ record: run.record, events }),
    warn: (message) => assert.fail(message),
    budgetMs: 120_000,
  });
  assert.deepEqual(outcomes?.map((o) => o.state), ["exported"]);
  assert.ok(looks > 30, `${looks} looks`);
  assert.ok(mostHeld <= MAX_BATCH_SPANS + 2, `${mostHeld} spans made and not yet written`);
  const spans = assertBatched(collector.received);
  assert.equal(spans.length, outcomes![0].spans);
  assert.ok(spans.length > 10_000);
  const left = [...Deno.readDirSync(new DataRoot(home).layout.otlpOutbox())].map((e) => e.name);
  assert.deepEqual(left, [], "the entry, its requests and its lock are gone once sent");
});

Deno.test("exportNow() of a 10k+-span run sends each request before it reads on, holding at most one request of spans", async () => {
  await using collector = startFakeCollector();
  const run = bigRun(5_200);
  let looks = 0;
  let mostHeld = 0;
  const events = watchedEvents(run.events, (reading, given) => {
    if (reading !== 1 || given === 0) return;
    looks++;
    const made = 1 + 2 * Math.floor((given - 2) / 4);
    mostHeld = Math.max(mostHeld, made - collector.spans().length);
  });
  const settings = loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  const exporting = exportSettings(settings.otel);
  const outcome = await exportNow(
    [{ record: run.record, events }],
    settings,
    exporting,
    exporting.target!,
  );
  assert.equal(outcome.state, "exported");
  assert.ok(looks > 30, `${looks} looks`);
  assert.ok(mostHeld <= MAX_BATCH_SPANS + 2, `${mostHeld} spans made and not yet sent`);
  assert.equal(assertBatched(collector.received).length, outcome.spans);
});

Deno.test("an outbox entry an older reins wrote (its trace as one request) is still sent, in batches", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const run = bigRun(600);
  const settings = loadSettings({ REINS_HOME: home, HOME: home });
  const { request, spans } = buildTrace([run], settings, exportSettings(settings.otel));
  const root = new DataRoot(home);
  const id = "0195f000-0000-7000-8000-00000000aaaa";
  writeOtlpEntry(root, {
    type: "reins.otlp-export",
    version: 1,
    id,
    createdAt: "2026-03-01T10:00:00.000Z",
    updatedAt: "2026-03-01T10:00:00.000Z",
    runIds: [run.record.id],
    spans,
    content: false,
    endpoint: null,
    state: "pending",
    attempts: 0,
    sentBatches: 1,
    lastError: null,
    request: request as unknown as { resourceSpans: unknown[] },
  });
  await using collector = startFakeCollector();
  const later = await reins(["export", "otel", "--pending"], {
    home,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  assert.equal(later.code, 0, later.stderr);
  // The first of its three requests was acknowledged before: the other two go, as they were.
  const batches = splitRequest(request);
  assert.equal(batches.length, 3);
  assert.deepEqual(
    collector.received.map((r) => r.body),
    JSON.parse(JSON.stringify(batches.slice(1))),
  );
  assert.deepEqual(listOtlpEntryIds(root), []);
});
