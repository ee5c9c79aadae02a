// What a handler answers, and how an answer's head is written. A response is either whole (a
// body of known length) or a stream, written chunked as the handler produces it.

export interface HttpResponse {
  status: number;
  /** Field names as they are to be written; Content-Length, Transfer-Encoding and Connection are
   * the server's to write. */
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  /**
   * A body produced over time (SSE): `write` sends one piece and resolves once it is on the
   * socket; `closed` aborts when the client goes away or the server stops. The response ends
   * when the returned promise settles.
   */
  stream?: (write: (piece: string) => Promise<void>, closed: AbortSignal) => Promise<void>;
  /** Close the connection after this response. */
  close?: boolean;
}

/** The head of a Server-Sent Events answer: not cached, not buffered by a proxy. */
export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/**
 * An SSE answer of the items `produce` sends, each as `itemEvent` makes it, with a keep-alive
 * comment every `keepAliveMs`; a failure once it has begun is one last event, `errorEvent`'s
 * (unless the client has gone). One write at a time: items and keep-alives never interleave.
 */
export function eventStreamResponse<T>(
  produce: (send: (item: T) => Promise<void>, closed: AbortSignal) => Promise<void>,
  keepAliveMs: number,
  itemEvent: (item: T) => string,
  errorEvent: (error: unknown) => string,
): HttpResponse {
  return {
    status: 200,
    headers: SSE_HEADERS,
    async stream(write, closed) {
      let queue: Promise<void> = Promise.resolve();
      const put = (text: string) => queue = queue.then(() => write(text));
      const keepAlive = setInterval(() => {
        put(": keep-alive\n\n").catch(() => {});
      }, keepAliveMs);
      try {
        await produce((item) => put(itemEvent(item)), closed);
      } catch (error) {
        if (closed.aborted) throw error;
        await put(errorEvent(error));
      } finally {
        clearInterval(keepAlive);
      }
      await queue;
    },
  };
}

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  204: "No Content",
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  408: "Request Timeout",
  411: "Length Required",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

export function reasonPhrase(status: number): string {
  return REASONS[status] ?? "Unknown";
}

const encoder = new TextEncoder();

/** The status line and header fields of a response, with the framing fields the server owns. */
export function responseHead(
  status: number,
  headers: Record<string, string> | undefined,
  framing: { contentLength: number } | { chunked: true },
  keepAlive: boolean,
): string {
  let head = `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\n`;
  if (headers) { for (const name in headers) head += `${name}: ${headers[name]}\r\n`; }
  head += "contentLength" in framing
    ? `content-length: ${framing.contentLength}\r\n`
    : "transfer-encoding: chunked\r\n";
  if (!keepAlive) head += "connection: close\r\n";
  return `${head}\r\n`;
}

/** A whole response as one buffer, so it goes out in one write. */
export function wholeResponse(
  response: HttpResponse,
  keepAlive: boolean,
  omitBody: boolean,
): Uint8Array {
  const body = response.body === undefined
    ? new Uint8Array(0)
    : typeof response.body === "string"
    ? encoder.encode(response.body)
    : response.body;
  const head = encoder.encode(
    responseHead(response.status, response.headers, { contentLength: body.length }, keepAlive),
  );
  if (omitBody) return head;
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** One piece of a chunked body. */
export function chunk(piece: string): Uint8Array {
  const data = encoder.encode(piece);
  const size = encoder.encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out.set([13, 10], size.length + data.length);
  return out;
}

export const LAST_CHUNK = encoder.encode("0\r\n\r\n");

/** A plain-text answer to a request refused at the HTTP level. */
export function plainResponse(status: number, message: string, close = false): HttpResponse {
  return {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
    body: message === "" ? "" : `${message}\n`,
    close,
  };
}
