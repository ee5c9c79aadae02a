// A run's trace split into requests a collector takes: at most MAX_BATCH_SPANS spans and
// MAX_BATCH_BYTES of JSON a request (the OTLP/HTTP exporters' default batch is 512 spans; 4 MiB is
// gRPC's default message limit, which many collectors apply to HTTP too). Each request keeps the
// wrapper of the spans it carries: the resource and the scope, as the whole request had them.
// Spans stay in their order, so a request never holds a child before the spans sent ahead of it.
// A span that alone is over the byte limit goes alone. The split depends only on the request and
// these two limits, so an outbox entry can record how many requests were acknowledged and a later
// delivery resume from the next one.
import type { ExportTraceServiceRequest, ResourceSpans, ScopeSpans, Span } from "./wire.ts";

export const MAX_BATCH_SPANS = 512;
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

export interface BatchLimits {
  spans: number;
  bytes: number;
}

export const BATCH_LIMITS: BatchLimits = { spans: MAX_BATCH_SPANS, bytes: MAX_BATCH_BYTES };

const encoder = new TextEncoder();
const bytesOf = (value: unknown) => encoder.encode(JSON.stringify(value)).length;

/** Spans in the request, across its resources and scopes. */
export function countSpans(request: ExportTraceServiceRequest): number {
  return request.resourceSpans.reduce(
    (sum, rs) => sum + rs.scopeSpans.reduce((n, ss) => n + ss.spans.length, 0),
    0,
  );
}

/**
 * The request as the requests that carry it, in order, each within the limits (but for a span that
 * is over the byte limit by itself, which goes alone). A request without spans is itself.
 */
export function splitRequest(
  request: ExportTraceServiceRequest,
  limits: BatchLimits = BATCH_LIMITS,
): ExportTraceServiceRequest[] {
  const batches: ExportTraceServiceRequest[] = [];
  const empty = bytesOf({ resourceSpans: [] });
  let current: ResourceSpans[] = [];
  let spans = 0;
  let bytes = empty;
  const flush = () => {
    if (spans === 0) return;
    batches.push({ ...request, resourceSpans: current });
    current = [];
    spans = 0;
    bytes = empty;
  };
  let openRs: ResourceSpans | null = null;
  let openSs: ScopeSpans | null = null;
  for (const rs of request.resourceSpans) {
    // A resource's wrapper without its scopes, and each scope's without its spans: what a batch
    // holding any of their spans pays for them (a comma between siblings counted with each).
    const rsBytes = bytesOf({ ...rs, scopeSpans: [] }) + 1;
    openRs = null;
    for (const ss of rs.scopeSpans) {
      const ssBytes = bytesOf({ ...ss, spans: [] }) + 1;
      openSs = null;
      for (const span of ss.spans) {
        const size = bytesOf(span) + 1;
        const wrappers = (openRs === null ? rsBytes : 0) + (openSs === null ? ssBytes : 0);
        if (spans > 0 && (spans >= limits.spans || bytes + wrappers + size > limits.bytes)) {
          flush();
          openRs = null;
          openSs = null;
        }
        if (openRs === null) {
          openRs = { ...rs, scopeSpans: [] };
          current.push(openRs);
          bytes += rsBytes;
        }
        if (openSs === null) {
          openSs = { ...ss, spans: [] as Span[] };
          openRs.scopeSpans.push(openSs);
          bytes += ssBytes;
        }
        openSs.spans.push(span);
        spans++;
        bytes += size;
      }
    }
  }
  flush();
  return batches.length === 0 ? [request] : batches;
}

/**
 * splitRequest() as the spans come, for a request of one resource and one scope (what
 * traceRequest makes): `wrapper` is that request without its spans. add() returns a request
 * once the next span would not fit in it; end() the last (or, with no span at all, the wrapper
 * itself, as splitRequest returns an empty request). The same requests as splitRequest of the
 * whole request, in the same order: tests/otel/stream_test.ts compares them.
 */
export class SpanBatcher {
  readonly #wrapper: ExportTraceServiceRequest;
  readonly #rs: ResourceSpans;
  readonly #ss: ScopeSpans;
  readonly #limits: BatchLimits;
  readonly #empty = bytesOf({ resourceSpans: [] });
  readonly #wrapperBytes: number;
  #spans: Span[] = [];
  #bytes: number;
  #made = 0;

  constructor(wrapper: ExportTraceServiceRequest, limits: BatchLimits = BATCH_LIMITS) {
    const [rs] = wrapper.resourceSpans;
    if (wrapper.resourceSpans.length !== 1 || rs.scopeSpans.length !== 1) {
      throw new Error("SpanBatcher takes a request of one resource and one scope");
    }
    this.#wrapper = wrapper;
    this.#rs = rs;
    this.#ss = rs.scopeSpans[0];
    this.#limits = limits;
    this.#wrapperBytes = bytesOf({ ...rs, scopeSpans: [] }) + 1 +
      bytesOf({ ...this.#ss, spans: [] }) + 1;
    this.#bytes = this.#empty;
  }

  /** Takes the next span; returns the request it closed, if any. */
  add(span: Span): ExportTraceServiceRequest | null {
    const size = bytesOf(span) + 1;
    let full: ExportTraceServiceRequest | null = null;
    const count = this.#spans.length;
    if (
      count > 0 &&
      (count >= this.#limits.spans || this.#bytes + size > this.#limits.bytes)
    ) {
      full = this.#flush();
    }
    if (this.#spans.length === 0) this.#bytes += this.#wrapperBytes;
    this.#spans.push(span);
    this.#bytes += size;
    return full;
  }

  /** The last request (none left when every span went already, but for an empty trace). */
  *end(): Generator<ExportTraceServiceRequest> {
    if (this.#spans.length > 0) yield this.#flush();
    else if (this.#made === 0) yield this.#wrapper;
  }

  #flush(): ExportTraceServiceRequest {
    const request = {
      ...this.#wrapper,
      resourceSpans: [{ ...this.#rs, scopeSpans: [{ ...this.#ss, spans: this.#spans }] }],
    };
    this.#spans = [];
    this.#bytes = this.#empty;
    this.#made++;
    return request;
  }
}
