// One OTLP/HTTP JSON request to a collector, and what its answer means under the protocol's
// rules (opentelemetry-proto docs/specification.md, "OTLP/HTTP Response"): 200 is accepted, maybe
// partly (`partialSuccess.rejectedSpans`); 429, 502, 503 and 504 and a connection that fails or
// times out may be retried now; other failures may not, though a 5xx may pass later; a 4xx is a
// refusal. Redirects are not followed: the headers may carry credentials for this host only.
import { outboundFetch } from "../net/outbound.ts";
import type { ProxySettings } from "../net/mod.ts";
import type { OtlpTarget } from "./target.ts";

const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** The protocol's recommended client limit: a larger request must not be sent. */
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

export type SendOutcome =
  | { kind: "accepted"; rejectedSpans: number; message: string | null }
  /** `retry`: worth another try now; `later`: keep it and try another time; `refused`: no. */
  | {
    kind: "retry" | "later" | "refused";
    status: number | null;
    reason: string;
    retryAfterMs: number | null;
  };

function retryAfterMsOf(value: string | null): number | null {
  if (value === null) return null;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}

async function readLimited(response: Response): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size <= MAX_RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(Math.min(size, MAX_RESPONSE_BYTES));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, all.length - at);
    all.set(part, at);
    at += part.length;
    if (at >= all.length) break;
  }
  return new TextDecoder().decode(all);
}

/** The collector's message in a failure body (a google.rpc.Status as JSON), else its start. */
function messageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === "string" && parsed.message !== "") return parsed.message;
  } catch { /* not JSON: quote it */ }
  return text.trim().replace(/\s+/g, " ").slice(0, 200);
}

/**
 * Why a request could not be sent, in a few words: Deno's fetch says only "fetch failed" and keeps
 * the reason ("tcp connect error: Connection refused (os error 111)") in its cause.
 */
export function reasonOfFailure(error: unknown): string {
  let reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error && cause.message) {
    reason = cause.message.split("\n")[0]
      .replace(/^error sending request for url \([^)]*\): /, "")
      .replace(/^client error \(Connect\): /, "");
  }
  return reason;
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * POSTs `body` (the JSON of an ExportTraceServiceRequest) to the target, giving up after
 * `timeoutMs` (the smaller of it and the target's). Never throws for what the network or the
 * collector does; `signal` aborting counts as a timeout.
 */
export async function sendTraces(
  target: OtlpTarget,
  body: Uint8Array,
  options: {
    timeoutMs?: number | null;
    signal?: AbortSignal;
    proxy: ProxySettings;
    userAgent: string;
  },
): Promise<SendOutcome> {
  if (body.length > MAX_REQUEST_BYTES) {
    return {
      kind: "refused",
      status: null,
      reason: `the request would be ${body.length} bytes, over the protocol's 64 MiB limit`,
      retryAfterMs: null,
    };
  }
  const limits = [target.timeoutMs, options.timeoutMs ?? null].filter((ms): ms is number =>
    ms !== null
  );
  const timeoutMs = limits.length ? Math.max(1, Math.min(...limits)) : null;
  const signals = [
    ...(timeoutMs === null ? [] : [AbortSignal.timeout(timeoutMs)]),
    ...(options.signal ? [options.signal] : []),
  ];
  const signal = signals.length ? AbortSignal.any(signals) : undefined;
  const headers: Record<string, string> = {
    ...target.headers,
    "content-type": "application/json",
    "user-agent": options.userAgent,
  };
  let payload = body;
  if (target.compression === "gzip") {
    payload = await gzip(body);
    headers["content-encoding"] = "gzip";
  }
  let response: Response;
  try {
    const bytes = payload;
    response = await outboundFetch(new URL(target.url), {
      method: "POST",
      headers,
      // Given as a body of known length, it goes through our own socket whenever no proxy is in
      // the way (lib/net/route.ts), written from the caller's buffer as it is: fetch copies
      // each body, and the copies of a long export's requests (hundreds of KiB each) pile up
      // outside V8's heap until it next collects (~60 MiB over a 1M-event run's export).
      body: {
        length: bytes.length,
        async *chunks(fresh) {
          yield fresh ? bytes.slice() : bytes;
        },
      },
      redirect: "manual",
      signal,
      idleTimeoutMs: timeoutMs ?? undefined,
    }, { proxy: options.proxy });
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) throw error;
    const timedOut = signal?.aborted === true;
    return {
      kind: "retry",
      status: null,
      reason: timedOut
        ? `no answer from ${new URL(target.url).host} within ${timeoutMs} ms`
        : `cannot reach ${new URL(target.url).host}: ${reasonOfFailure(error)}`,
      retryAfterMs: null,
    };
  }
  let text: string;
  try {
    text = await readLimited(response);
  } catch (error) {
    return {
      kind: "retry",
      status: response.status,
      reason: `the answer broke off: ${(error as Error).message.split("\n")[0]}`,
      retryAfterMs: null,
    };
  }
  const status = response.status;
  if (status >= 200 && status < 300) {
    let rejectedSpans = 0;
    let message: string | null = null;
    try {
      const parsed = JSON.parse(text || "{}") as {
        partialSuccess?: { rejectedSpans?: unknown; errorMessage?: unknown };
      };
      const partial = parsed.partialSuccess;
      rejectedSpans = Number(partial?.rejectedSpans ?? 0) || 0;
      message = typeof partial?.errorMessage === "string" && partial.errorMessage !== ""
        ? partial.errorMessage
        : null;
    } catch { /* an answer that is not JSON still means accepted */ }
    return { kind: "accepted", rejectedSpans, message };
  }
  const retryAfterMs = retryAfterMsOf(response.headers.get("retry-after"));
  const said = messageOf(text);
  const reason = `the collector answered ${status}${said ? `: ${said}` : ""}`;
  if (status >= 300 && status < 400) {
    const location = response.headers.get("location");
    return {
      kind: "refused",
      status,
      reason: `the collector redirected to ${location ?? "another URL"}, which reins does not ` +
        `follow (the headers are for this endpoint): set the endpoint to where it points`,
      retryAfterMs: null,
    };
  }
  if ([429, 502, 503, 504].includes(status)) {
    return { kind: "retry", status, reason, retryAfterMs };
  }
  if (status >= 500 || status === 408) return { kind: "later", status, reason, retryAfterMs };
  return { kind: "refused", status, reason, retryAfterMs: null };
}
