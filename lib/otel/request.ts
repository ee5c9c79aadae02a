// Runs as one OTLP ExportTraceServiceRequest: the spans of each run under one resource (the
// service, `reins` unless OTEL_SERVICE_NAME says otherwise) and one instrumentation scope, both
// carrying the schema URL of the semantic conventions followed. Every string that leaves goes
// through the caller's redactor here, in one pass over the finished payload, so no attribute,
// event or status message can carry a secret whatever the spans put in them.
import type { RunEvent, RunRecord } from "../store/mod.ts";
import { BATCH_LIMITS, type BatchLimits, SpanBatcher, type TraceBody } from "./batch.ts";
import { type EventSource, runSpans, streamRunSpans } from "./spans.ts";
import {
  type AnyValue,
  attributes,
  type ExportTraceServiceRequest,
  type KeyValue,
  type Span,
} from "./wire.ts";

/** The semantic conventions reins follows: the last release that holds the GenAI conventions. */
export const SEMCONV_VERSION = "1.41.0";
export const SCHEMA_URL = `https://opentelemetry.io/schemas/${SEMCONV_VERSION}`;
export const SCOPE_NAME = "reins";

export interface TraceOptions {
  /** Prompt, answers, tool arguments and results: only when true. */
  content: boolean;
  /** `service.name`. */
  serviceName: string;
  /** `service.version` and the scope's version: reins's own. */
  serviceVersion: string;
  /** More resource attributes (OTEL_RESOURCE_ATTRIBUTES), strings all. */
  resourceAttributes?: Readonly<Record<string, string>>;
  /** Applied to every string of the payload: secrets out. */
  redact: (text: string) => string;
  /** Strings longer than this are cut (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT); none by default. */
  valueLengthLimit?: number | null;
}

export interface RecordedRun {
  record: RunRecord;
  events: readonly RunEvent[];
}

/**
 * A run to export without holding its events: `events` is read twice (see streamRunSpans), so it
 * must give the same events each time it is iterated (a reader of events.jsonl does).
 */
export interface StreamedRun {
  record: RunRecord;
  events: EventSource;
}

function scrubValue(value: AnyValue, scrub: (text: string) => string): AnyValue {
  if ("stringValue" in value) return { stringValue: scrub(value.stringValue) };
  if ("arrayValue" in value) {
    return { arrayValue: { values: value.arrayValue.values.map((v) => scrubValue(v, scrub)) } };
  }
  return value;
}

function scrubAttributes(list: KeyValue[], scrub: (text: string) => string): KeyValue[] {
  return list.map(({ key, value }) => ({ key, value: scrubValue(value, scrub) }));
}

function scrubSpan(
  span: Span,
  scrub: (text: string) => string,
  redact: (text: string) => string,
): Span {
  return {
    ...span,
    name: redact(span.name),
    attributes: scrubAttributes(span.attributes, scrub),
    events: span.events.map((event) => ({
      ...event,
      attributes: scrubAttributes(event.attributes, scrub),
    })),
    status: span.status.message === undefined
      ? span.status
      : { ...span.status, message: redact(span.status.message) },
  };
}

/** What every string of the payload goes through: the redactor, then the length limit. */
function scrubberOf(options: TraceOptions): (text: string) => string {
  const limit = options.valueLengthLimit ?? null;
  return (text: string) => {
    const clean = options.redact(text);
    return limit !== null && clean.length > limit ? clean.slice(0, limit) : clean;
  };
}

/** The export request for `runs`, in the order given. */
export function traceRequest(
  runs: readonly RecordedRun[],
  options: TraceOptions,
): ExportTraceServiceRequest {
  const scrub = scrubberOf(options);
  const spans = runs.flatMap(({ record, events }) =>
    runSpans(record, events, { content: options.content }).map((span) =>
      scrubSpan(span, scrub, options.redact)
    )
  );
  return requestOf(spans, options, scrub);
}

/**
 * The requests traceRequest(runs) is sent as (splitRequest of lib/otel/batch.ts), the same ones
 * in the same order, in JSON, made as they fill: each run's events are read as they are needed
 * (streamRunSpans), so what is held is one request and each run's open spans, never the trace.
 * Returns the number of spans.
 */
export function* streamTraceRequests(
  runs: readonly StreamedRun[],
  options: TraceOptions,
  limits: BatchLimits = BATCH_LIMITS,
): Generator<TraceBody, number> {
  const scrub = scrubberOf(options);
  const batcher = new SpanBatcher(requestOf([], options, scrub), limits);
  let spans = 0;
  for (const { record, events } of runs) {
    for (const span of streamRunSpans(record, events, { content: options.content })) {
      spans++;
      const full = batcher.add(scrubSpan(span, scrub, options.redact));
      if (full !== null) yield full;
    }
  }
  yield* batcher.end();
  return spans;
}

function requestOf(
  spans: Span[],
  options: TraceOptions,
  scrub: (text: string) => string,
): ExportTraceServiceRequest {
  const resource = {
    ...options.resourceAttributes,
    "service.name": options.serviceName,
    "service.version": options.resourceAttributes?.["service.version"] ?? options.serviceVersion,
  };
  return {
    resourceSpans: [{
      resource: {
        attributes: scrubAttributes(attributes(resource), scrub),
        droppedAttributesCount: 0,
      },
      scopeSpans: [{
        scope: { name: SCOPE_NAME, version: options.serviceVersion },
        spans,
        schemaUrl: SCHEMA_URL,
      }],
      schemaUrl: SCHEMA_URL,
    }],
  };
}
