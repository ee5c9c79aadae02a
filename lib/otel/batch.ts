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
