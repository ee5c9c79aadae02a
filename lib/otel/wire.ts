// The OTLP/JSON shapes reins sends (ExportTraceServiceRequest of opentelemetry-proto, in the JSON
// encoding of its specification: lowerCamelCase keys, hex ids, enums as integers, 64-bit times
// as decimal strings) and the one function that turns a plain value into an AnyValue. Only what
// a trace of a run needs; nothing here knows about runs.

/** SpanKind of trace.proto (0 is unspecified). */
export const SpanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
export type SpanKind = typeof SpanKind[keyof typeof SpanKind];

/** Status.StatusCode of trace.proto. */
export const StatusCode = { unset: 0, ok: 1, error: 2 } as const;
export type StatusCode = typeof StatusCode[keyof typeof StatusCode];

/**
 * SpanFlags: the W3C trace flags in the low byte (01 = sampled) and, since the spans reins makes
 * have no remote parent, HAS_IS_REMOTE set with IS_REMOTE clear (as the SDKs set them).
 */
export const SPAN_FLAGS = 0x01 | 0x100;

export type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: number }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } };

export interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface SpanEvent {
  timeUnixNano: string;
  name: string;
  attributes: KeyValue[];
  droppedAttributesCount: number;
}

export interface SpanLink {
  traceId: string;
  spanId: string;
  attributes: KeyValue[];
  droppedAttributesCount: number;
  flags: number;
}

export interface Span {
  traceId: string;
  spanId: string;
  /** Absent on a root span. */
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  droppedAttributesCount: number;
  events: SpanEvent[];
  droppedEventsCount: number;
  status: { code: StatusCode; message?: string };
  links: SpanLink[];
  droppedLinksCount: number;
  flags: number;
}

export interface ScopeSpans {
  scope: { name: string; version: string };
  spans: Span[];
  schemaUrl: string;
}

export interface ResourceSpans {
  resource: { attributes: KeyValue[]; droppedAttributesCount: number };
  scopeSpans: ScopeSpans[];
  schemaUrl: string;
}

export interface ExportTraceServiceRequest {
  resourceSpans: ResourceSpans[];
}

/** A plain attribute value: what `attributes()` takes. */
export type Plain = string | number | boolean | readonly string[];

/**
 * One attribute value. Whole numbers become `intValue` (a JSON number, as the JS SDK writes it;
 * receivers take numbers or decimal strings for int64) and others `doubleValue`: the caller says
 * which a number is by how it computes it, so a cost of exactly 2 dollars must be passed through
 * `double()`.
 */
export function anyValue(value: Plain | Double): AnyValue {
  if (value instanceof Double) return { doubleValue: value.value };
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") {
    return Number.isSafeInteger(value) ? { intValue: value } : { doubleValue: value };
  }
  return { arrayValue: { values: value.map((item) => ({ stringValue: item })) } };
}

/** A number that is exported as a double even when it happens to be whole (dollars, ratios). */
export class Double {
  constructor(readonly value: number) {}
}

export function double(value: number): Double {
  return new Double(value);
}

/** Attributes from an object, in its key order, leaving out null and undefined values. */
export function attributes(
  values: Record<string, Plain | Double | null | undefined>,
): KeyValue[] {
  const out: KeyValue[] = [];
  for (const [key, value] of Object.entries(values)) {
    if (value === null || value === undefined) continue;
    out.push({ key, value: anyValue(value) });
  }
  return out;
}

/** Epoch milliseconds as the decimal string of nanoseconds OTLP/JSON carries. */
export function unixNano(ms: number): string {
  return `${BigInt(Math.round(ms)) * 1_000_000n}`;
}
