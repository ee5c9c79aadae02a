// The one way reins calls out over HTTP (the platform, model endpoints): a request routed by
// route.ts to Deno's fetch or to our own HTTP/1.1 socket, answered as a Response either way.
// Retrying is not done here (retry.ts, by the caller, which knows what may be sent twice).
import { type ProxySettings, type Route, routeOf } from "./route.ts";
import { sendDirect, type StreamedBody } from "./http1.ts";

export interface OutboundRequest {
  method: string;
  headers: Record<string, string>;
  /**
   * A string or bytes, or a body of known length made piece by piece. `chunks(fresh)` is called
   * once; `fresh` asks for a new buffer per piece (fetch may hold on to one after it is sent).
   */
  body?: string | Uint8Array<ArrayBuffer> | {
    length: number;
    chunks(fresh: boolean): AsyncIterable<Uint8Array>;
  };
  signal?: AbortSignal;
  /** Only fetch follows redirects; our socket always returns a 3xx as it is. */
  redirect?: RequestRedirect;
  /** Our socket gives up when nothing moves this long (fetch has the signal only). */
  idleTimeoutMs?: number;
}

export interface OutboundOptions {
  proxy: ProxySettings;
  /** Overrides the route (tests, and callers that know better). */
  route?: Route;
  /** Extra root certificates (PEM) for our socket's TLS; fetch uses the system's. */
  caCerts?: string[];
}

const encoder = new TextEncoder();

/** Sends `request` to `url` the way route.ts says, and resolves with the answer. */
export function outboundFetch(
  url: URL,
  request: OutboundRequest,
  options: OutboundOptions,
): Promise<Response> {
  const raw = request.body;
  const streamed = raw !== undefined && typeof raw !== "string" && !(raw instanceof Uint8Array);
  const route = options.route ?? routeOf(url, options.proxy, { streamedBody: streamed });
  if (route === "direct") {
    let body: Uint8Array | StreamedBody | null = null;
    if (typeof raw === "string") body = encoder.encode(raw);
    else if (raw instanceof Uint8Array) body = raw;
    else if (raw !== undefined) body = { length: raw.length, chunks: raw.chunks(false) };
    return sendDirect({
      url,
      method: request.method,
      headers: request.headers,
      body,
      signal: request.signal,
      idleTimeoutMs: request.idleTimeoutMs,
      caCerts: options.caCerts,
    });
  }
  const body: BodyInit | undefined = raw === undefined
    ? undefined
    : typeof raw === "string" || raw instanceof Uint8Array
    ? raw
    : ReadableStream.from(raw.chunks(true));
  return fetch(url, {
    method: request.method,
    headers: request.headers,
    body,
    signal: request.signal,
    redirect: request.redirect ?? "follow",
  });
}
