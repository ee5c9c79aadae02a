// The oracle: the official OpenTelemetry JS SDK (sdk-trace-base's tracer, otlp-transformer's JSON
// serializer, the code behind @opentelemetry/exporter-trace-otlp-http) builds the same spans, and
// its payload is compared with the one reins writes itself — field for field for the encoding,
// and span for span (names, kinds, parents, attribute names and types) for a run instrumented by
// hand as the GenAI conventions describe it.
import assert from "node:assert/strict";
import {
  type Attributes,
  context,
  type Link,
  type Span as ApiSpan,
  SpanKind as ApiKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { SCHEMA_URL, traceRequest } from "../../lib/otel/request.ts";
import type { AnyValue, ExportTraceServiceRequest, KeyValue, Span } from "../../lib/otel/wire.ts";
import { recordedRun, START_MS } from "./_runs.ts";

const OPTIONS = {
  content: true,
  serviceName: "reins",
  serviceVersion: "0.1.0",
  resourceAttributes: { "deployment.environment": "ci" },
  redact: (text: string) => text,
};

function plain(value: AnyValue): string | number | boolean | string[] {
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return value.intValue;
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  return value.arrayValue.values.map((v) => plain(v) as string);
}

function plainAttributes(list: readonly KeyValue[]): Attributes {
  return Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));
}

const KINDS: Record<number, ApiKind> = {
  1: ApiKind.INTERNAL,
  2: ApiKind.SERVER,
  3: ApiKind.CLIENT,
  4: ApiKind.PRODUCER,
  5: ApiKind.CONSUMER,
};

const nsToMs = (ns: string) => Number(BigInt(ns) / 1_000_000n);

/** What the SDK writes for `spans`, made through its own API with the same ids, times and data. */
function sdkPayload(spans: readonly Span[]): unknown {
  const ids = { traces: [] as string[], spans: [] as string[] };
  for (const span of spans) {
    if (span.parentSpanId === undefined) ids.traces.push(span.traceId);
    ids.spans.push(span.spanId);
  }
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      ...OPTIONS.resourceAttributes,
      "service.name": "reins",
      "service.version": "0.1.0",
    }, {
      schemaUrl: SCHEMA_URL,
    }),
    idGenerator: {
      generateTraceId: () => ids.traces.shift()!,
      generateSpanId: () => ids.spans.shift()!,
    },
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer("reins", "0.1.0", { schemaUrl: SCHEMA_URL });
  const open = new Map<string, ApiSpan>();
  for (const span of spans) {
    const parent = span.parentSpanId === undefined ? undefined : open.get(span.parentSpanId)!;
    const links: Link[] = span.links.map((link) => ({
      context: { traceId: link.traceId, spanId: link.spanId, traceFlags: 1 },
      attributes: plainAttributes(link.attributes),
    }));
    const made = tracer.startSpan(
      span.name,
      {
        kind: KINDS[span.kind],
        attributes: plainAttributes(span.attributes),
        startTime: nsToMs(span.startTimeUnixNano),
        links,
      },
      parent ? trace.setSpan(context.active(), parent) : context.active(),
    );
    for (const event of span.events) {
      made.addEvent(event.name, plainAttributes(event.attributes), nsToMs(event.timeUnixNano));
    }
    if (span.status.code === 2) {
      made.setStatus({ code: SpanStatusCode.ERROR, message: span.status.message });
    }
    open.set(span.spanId, made);
  }
  // Ended in the order reins lists them, which is the order the exporter then sees them.
  for (const span of spans) open.get(span.spanId)!.end(nsToMs(span.endTimeUnixNano));
  const bytes = JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans());
  const payload = JSON.parse(new TextDecoder().decode(bytes!));
  // The SDK also writes the schema URL inside `resource`, where opentelemetry-proto's Resource
  // has no such field (receivers ignore it); ResourceSpans.schemaUrl, which both write, is the
  // one the protocol defines.
  for (const resourceSpans of payload.resourceSpans) delete resourceSpans.resource.schemaUrl;
  return payload;
}

/**
 * reins's payload as the SDK can express it: JavaScript has one number type, so the SDK writes a
 * whole-valued double (a cost of exactly $2) as intValue, where reins keeps doubleValue.
 */
function asTheSdkCanSay(request: ExportTraceServiceRequest): unknown {
  return JSON.parse(JSON.stringify(request, (key, value) => {
    if (key === "value" && value && typeof value.doubleValue === "number") {
      return Number.isInteger(value.doubleValue) ? { intValue: value.doubleValue } : value;
    }
    return value;
  }));
}

function loopRun() {
  const model = "openai:gpt-4o-mini";
  return recordedRun({
    contextId: "ticket-7",
    events: [
      { type: "model.requested", payload: { historyLength: 2, toolCount: 4, model } },
      {
        type: "model.completed",
        payload: {
          text: null,
          toolCalls: [{ id: "c1", name: "write_file", args: { path: "a.txt" } }],
          stopReason: "tool_use",
          usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.1 },
          reasoning: null,
        },
      },
      {
        type: "approval.requested",
        payload: { approvalId: "approval-1", tool: "write_file", args: { path: "a.txt" } },
      },
      {
        type: "approval.resolved",
        payload: { approvalId: "approval-1", decision: "allow", by: "cli", reason: null },
      },
      {
        type: "tool.started",
        payload: { callId: "c1", tool: "write_file", args: { path: "a.txt" } },
      },
      {
        type: "tool.completed",
        payload: { callId: "c1", ok: false, error: "disk full", startedAt: null, finishedAt: null },
      },
      { type: "budget.warning", payload: { ratio: 0.8, limit: "turns" } },
      { type: "model.requested", payload: { historyLength: 4, toolCount: 4, model } },
      {
        type: "model.completed",
        payload: {
          text: "Could not write.",
          toolCalls: [],
          stopReason: "end_turn",
          usage: { inputTokens: 150, outputTokens: 10, costUsd: 0.15 },
          reasoning: null,
        },
      },
      {
        type: "usage.updated",
        payload: {
          inputTokens: 250,
          outputTokens: 30,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: null,
          costUsd: 2,
          requests: 2,
        },
      },
      { type: "failed", payload: { reason: "the tool failed", result: "Could not write." } },
    ],
  });
}

Deno.test("traceRequest() writes the same OTLP/JSON as the OpenTelemetry SDK's serializer for the same spans", () => {
  const parent = recordedRun({
    events: [{ type: "completed", payload: { reason: null, result: "" } }],
  });
  const child = { ...loopRun() };
  child.record = { ...child.record, parentRunId: parent.record.id };
  const ours = traceRequest([parent, child], OPTIONS);
  const spans = ours.resourceSpans[0].scopeSpans[0].spans;
  assert.equal(spans.length, 5, "a run with children, events, a link and an error status");
  assert.deepEqual(asTheSdkCanSay(ours), sdkPayload(spans));
});

interface Shape {
  name: string;
  kind: number;
  parent: string | null;
  attributes: string[];
  events: string[];
  status: number;
}

/** Each span's name, kind, parent's name, attribute names with their OTLP type, event names. */
function shapeOf(payload: unknown): Shape[] {
  const spans = (payload as ExportTraceServiceRequest).resourceSpans[0].scopeSpans[0].spans;
  const names = new Map(spans.map((span) => [span.spanId, span.name]));
  return spans.map((span) => ({
    name: span.name,
    kind: span.kind,
    parent: span.parentSpanId ? names.get(span.parentSpanId) ?? "?" : null,
    attributes: span.attributes.map(({ key, value }) => `${key}:${Object.keys(value)[0]}`).sort(),
    events: span.events.map((event) => event.name),
    status: span.status.code ?? 0,
  }));
}

Deno.test("a loop run's trace has the structure of the same run instrumented by hand with the SDK", () => {
  const run = loopRun();
  const ours = traceRequest([run], { ...OPTIONS, content: false });

  // The run as an application would instrument it by hand, following the GenAI conventions.
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("by-hand");
  const at = (ms: number) => START_MS + ms;
  const root = tracer.startSpan("invoke_agent reins", {
    kind: ApiKind.INTERNAL,
    startTime: at(0),
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "openai",
      "gen_ai.agent.name": "reins",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.conversation.id": "ticket-7",
      "gen_ai.usage.input_tokens": 250,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_read.input_tokens": 0,
      "gen_ai.usage.cache_creation.input_tokens": 0,
      "reins.run.id": run.record.id,
      "reins.session.id": run.record.sessionId,
      "reins.harness": "reins",
      "reins.driver": "loop",
      "reins.trigger": "cli",
      "reins.status": "failed",
      "reins.cost_usd": 2.5, // a double (the run's $2 is one too; JS cannot say so)
      "reins.model.requests": 2,
      "error.type": "failed",
    },
  });
  const inRoot = trace.setSpan(context.active(), root);
  const chat = (start: number, end: number, attributes: Attributes) => {
    const span = tracer.startSpan("chat gpt-4o-mini", {
      kind: ApiKind.CLIENT,
      startTime: at(start),
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": "ticket-7",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 1,
        "gen_ai.usage.output_tokens": 1,
        "reins.cost_usd": 0.5,
        ...attributes,
      },
    }, inRoot);
    span.end(at(end));
  };
  chat(10, 20, {});
  const tool = tracer.startSpan("execute_tool write_file", {
    kind: ApiKind.INTERNAL,
    startTime: at(30),
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "write_file",
      "gen_ai.tool.call.id": "c1",
      "error.type": "tool_error",
    },
  }, inRoot);
  tool.addEvent("reins.approval.requested", {
    "reins.approval.id": "approval-1",
    "gen_ai.tool.name": "write_file",
  });
  tool.addEvent("reins.approval.resolved", {
    "reins.approval.id": "approval-1",
    "reins.approval.decision": "allow",
    "reins.approval.by": "cli",
  });
  tool.setStatus({ code: SpanStatusCode.ERROR });
  tool.end(at(60));
  chat(80, 90, {});
  root.addEvent("reins.budget.warning", {
    "reins.budget.ratio": 0.8,
    "reins.budget.limit": "turns",
  });
  root.setStatus({ code: SpanStatusCode.ERROR, message: "the tool failed" });
  root.end(at(110));
  const byHand = JSON.parse(
    new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())!),
  );

  // The SDK lists spans as they ended; compare in start order, as reins lists them.
  const order = (shapes: Shape[]) =>
    [...shapes].sort((a, b) => (a.parent === null ? -1 : b.parent === null ? 1 : 0));
  const sdkShapes = order(shapeOf(byHand));
  const ourShapes = shapeOf(ours);
  assert.deepEqual(ourShapes.map((s) => s.name), [
    "invoke_agent reins",
    "chat gpt-4o-mini",
    "execute_tool write_file",
    "chat gpt-4o-mini",
  ]);
  assert.deepEqual(ourShapes, sdkShapes);
});
