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

/** The length of `text` in UTF-8 (TextEncoder's: a lone surrogate is U+FFFD), without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

const bytesOf = (value: unknown) => utf8Length(JSON.stringify(value));

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
 * A request already in JSON, encoded as it is sent: what SpanBatcher makes. Its bytes are the
 * batcher's own, good until the request after the next one is made: send or write it before.
 */
export interface TraceBody {
  body: Uint8Array;
  spans: number;
}

const encoder = new TextEncoder();

/**
 * splitRequest() as the spans come, for a request of one resource and one scope (what
 * traceRequest makes): `wrapper` is that request without its spans. add() returns a request
 * once the next span would not fit in it; end() the last (or, with no span at all, the wrapper
 * itself, as splitRequest returns an empty request). Each is JSON.stringify of the request
 * splitRequest makes of the whole trace, in the same order (tests/otel/stream_test.ts compares
 * them), in UTF-8. The spans it holds are held encoded, in two buffers it takes in turn and
 * reuses (a request is handed over as a view of one), outside V8's heap: a batch's span objects
 * or strings would outlive the young generation's collections, a request's JSON as one string
 * (hundreds of KiB, a large object) is freed only by a full collection, and a new buffer a
 * request only once V8's count of outside memory asks for one (64 MiB): each would pile up.
 */
export class SpanBatcher {
  readonly #limits: BatchLimits;
  readonly #empty = bytesOf({ resourceSpans: [] });
  readonly #wrapperBytes: number;
  /** The request's JSON before its spans and after them. */
  readonly #before: Uint8Array;
  readonly #after: Uint8Array;
  readonly #wrapperJson: Uint8Array;
  /**
   * The request filling, in UTF-8, its JSON before its spans already in place: `#length` bytes.
   * Two, taken in turn: a request handed over lies in one while the next fills the other.
   */
  #buffer: Uint8Array;
  #spare: Uint8Array;
  #length: number;
  /** The span being added, encoded. */
  #span = new Uint8Array(16 * 1024);
  #count = 0;
  #bytes: number;
  #made = 0;

  constructor(wrapper: ExportTraceServiceRequest, limits: BatchLimits = BATCH_LIMITS) {
    const [rs] = wrapper.resourceSpans;
    if (wrapper.resourceSpans.length !== 1 || rs.scopeSpans.length !== 1) {
      throw new Error("SpanBatcher takes a request of one resource and one scope");
    }
    const ss = rs.scopeSpans[0];
    this.#limits = limits;
    this.#wrapperBytes = bytesOf({ ...rs, scopeSpans: [] }) + 1 +
      bytesOf({ ...ss, spans: [] }) + 1;
    this.#bytes = this.#empty;
    this.#wrapperJson = encoder.encode(JSON.stringify(wrapper));
    // A key with its quotes unescaped comes only from the structure, never from inside a string.
    const marker = `"spans":[${JSON.stringify("\u0000reins spans\u0000")}]`;
    const template = JSON.stringify({
      ...wrapper,
      resourceSpans: [{ ...rs, scopeSpans: [{ ...ss, spans: ["\u0000reins spans\u0000"] }] }],
    });
    const at = template.indexOf(marker);
    this.#before = encoder.encode(template.slice(0, at) + `"spans":[`);
    this.#after = encoder.encode(template.slice(at + marker.length - 1));
    this.#buffer = this.#fresh(64 * 1024);
    this.#spare = this.#fresh(64 * 1024);
    this.#length = this.#before.length;
  }

  /** A buffer of at least `size` bytes, the request's JSON before its spans in place. */
  #fresh(size: number): Uint8Array {
    const buffer = new Uint8Array(Math.max(size, this.#before.length + 1));
    buffer.set(this.#before);
    return buffer;
  }

  /** The spans the request filling holds: never more than the limit. */
  get held(): number {
    return this.#count;
  }

  /** Takes the next span; returns the request it closed, if any. */
  add(span: Span): TraceBody | null {
    const json = JSON.stringify(span);
    // At most 3 bytes a UTF-16 unit (a surrogate pair is 4 bytes for 2).
    if (this.#span.length < json.length * 3) this.#span = new Uint8Array(json.length * 3);
    const written = encoder.encodeInto(json, this.#span).written;
    const size = written + 1;
    let full: TraceBody | null = null;
    const count = this.#count;
    if (
      count > 0 &&
      (count >= this.#limits.spans || this.#bytes + size > this.#limits.bytes)
    ) {
      full = this.#flush();
    }
    if (this.#count === 0) this.#bytes += this.#wrapperBytes;
    const needed = this.#length + size + this.#after.length;
    if (needed > this.#buffer.length) {
      const more = new Uint8Array(Math.max(needed, this.#buffer.length * 2));
      more.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = more;
    }
    if (this.#count > 0) this.#buffer[this.#length++] = 0x2c; // ","
    this.#buffer.set(this.#span.subarray(0, written), this.#length);
    this.#length += written;
    this.#count++;
    this.#bytes += size;
    return full;
  }

  /** The last request (none left when every span went already, but for an empty trace). */
  *end(): Generator<TraceBody> {
    if (this.#count > 0) yield this.#flush();
    else if (this.#made === 0) yield { body: this.#wrapperJson, spans: 0 };
  }

  #flush(): TraceBody {
    this.#buffer.set(this.#after, this.#length);
    const body = this.#buffer.subarray(0, this.#length + this.#after.length);
    [this.#buffer, this.#spare] = [this.#spare, this.#buffer];
    const spans = this.#count;
    this.#length = this.#before.length;
    this.#count = 0;
    this.#bytes = this.#empty;
    this.#made++;
    return { body, spans };
  }
}
