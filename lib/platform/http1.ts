// One HTTP/1.1 request with a streamed body of known length, over a plain or TLS socket. It exists
// because Deno's fetch sends every ReadableStream body chunked and drops a Content-Length set by
// hand (checked on Deno 2.9), while a WSGI server such as the platform's Django reads no body
// without one. It speaks only what one upload needs: Connection: close, a response read whole up
// to a limit. JSON calls go through fetch (client.ts); so do uploads through a proxy.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface StreamedRequest {
  url: URL;
  method: "POST" | "PUT" | "PATCH";
  /** Without Host, Content-Length and Connection, which this module writes. */
  headers: Record<string, string>;
  contentLength: number;
  body: AsyncIterable<Uint8Array>;
  /** Give up when nothing is written or read for this long. */
  idleTimeoutMs: number;
  /** Extra root certificates (PEM) for https. */
  caCerts?: string[];
}

export interface PlainResponse {
  status: number;
  headers: Headers;
  /** The body as text, cut at `MAX_BODY` bytes. */
  text: string;
}

/** The socket failed, timed out or closed before a response: the request may not have arrived. */
export class TransportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransportError";
  }
}

const MAX_HEAD = 64 * 1024;
const MAX_BODY = 1024 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkHeader(name: string, value: string): void {
  if (!TOKEN.test(name)) throw new TypeError(`Cannot send the header name ${JSON.stringify(name)}`);
  if (/[\r\n\0]/.test(value)) {
    throw new TypeError(`Cannot send the header ${name}: its value contains a line break or NUL`);
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

/** Reads the response off `conn` until the server's body ends (or MAX_BODY). */
async function readResponse(conn: Deno.Conn, touch: () => void): Promise<PlainResponse> {
  let buffer: Uint8Array = new Uint8Array(0);
  const chunk = new Uint8Array(64 * 1024);
  let eof = false;
  const more = async (): Promise<boolean> => {
    if (eof) return false;
    const got = await conn.read(chunk);
    touch();
    if (got === null) {
      eof = true;
      return false;
    }
    const next = new Uint8Array(buffer.length + got);
    next.set(buffer);
    next.set(chunk.subarray(0, got), buffer.length);
    buffer = next;
    return true;
  };
  const find = (needle: string, from = 0): number => {
    const bytes = encoder.encode(needle);
    outer: for (let i = from; i + bytes.length <= buffer.length; i++) {
      for (let j = 0; j < bytes.length; j++) if (buffer[i + j] !== bytes[j]) continue outer;
      return i;
    }
    return -1;
  };
  while (true) {
    let end = find("\r\n\r\n");
    while (end < 0) {
      if (buffer.length > MAX_HEAD) throw new TransportError("The response's headers are too long");
      if (!(await more())) {
        throw new TransportError("The server closed the connection before it answered");
      }
      end = find("\r\n\r\n");
    }
    const lines = decoder.decode(buffer.subarray(0, end)).split("\r\n");
    buffer = buffer.subarray(end + 4);
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1];
    if (status === undefined) {
      throw new TransportError(`The server answered with ${JSON.stringify(lines[0].slice(0, 80))}`);
    }
    const headers = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    const code = Number(status);
    // 100 Continue and other interim answers come before the real one.
    if (code >= 100 && code < 200) continue;
    let body: Uint8Array;
    if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
      body = await readChunked(() => buffer, (rest) => buffer = rest, more);
    } else if (headers.has("content-length")) {
      const length = Math.min(Number(headers.get("content-length")), MAX_BODY);
      while (buffer.length < length && await more());
      body = buffer.subarray(0, Math.min(length, buffer.length));
    } else {
      while (buffer.length < MAX_BODY && await more());
      body = buffer;
    }
    return { status: code, headers, text: decoder.decode(body.subarray(0, MAX_BODY)) };
  }
}

async function readChunked(
  get: () => Uint8Array,
  set: (rest: Uint8Array) => void,
  more: () => Promise<boolean>,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  while (total < MAX_BODY) {
    let line = -1;
    while ((line = indexOfCrlf(get())) < 0) if (!(await more())) return join(parts);
    const size = parseInt(decoder.decode(get().subarray(0, line)).split(";")[0], 16);
    if (!Number.isFinite(size) || size === 0) break;
    set(get().subarray(line + 2));
    while (get().length < size + 2) if (!(await more())) break;
    parts.push(get().slice(0, size));
    total += size;
    set(get().subarray(Math.min(get().length, size + 2)));
  }
  return join(parts);
}

function indexOfCrlf(bytes: Uint8Array): number {
  for (let i = 0; i + 1 < bytes.length; i++) if (bytes[i] === 13 && bytes[i + 1] === 10) return i;
  return -1;
}

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * Sends one request with a body of exactly `contentLength` bytes and returns the response. If
 * the server answers before the body is done (a 401, a 413), sending stops and that answer is
 * returned. If the body's iterator throws, the connection is closed mid-body and the error is
 * rethrown: the server sees a truncated request, never a complete one.
 */
export async function sendStreamed(request: StreamedRequest): Promise<PlainResponse> {
  const { url } = request;
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port) || (secure ? 443 : 80);
  const head = [`${request.method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`];
  for (const [name, value] of Object.entries(request.headers)) {
    checkHeader(name, value);
    head.push(`${name}: ${value}`);
  }
  head.push(`Content-Length: ${request.contentLength}`, "Connection: close", "", "");

  let conn: Deno.Conn;
  try {
    conn = secure
      ? await Deno.connectTls({
        hostname,
        port,
        caCerts: request.caCerts,
        alpnProtocols: ["http/1.1"],
      })
      : await Deno.connect({ hostname, port });
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) throw error;
    throw new TransportError(`Cannot connect to ${url.host}: ${(error as Error).message}`, {
      cause: error,
    });
  }

  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const touch = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      try {
        conn.close();
      } catch { /* closed already */ }
    }, request.idleTimeoutMs);
  };
  touch();
  let answered = false;
  const response = readResponse(conn, touch).then((value) => {
    answered = true;
    return value;
  });
  // The response is awaited below, or abandoned with the connection when the body fails.
  response.catch(() => {});
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed already */ }
  };
  try {
    const chunks = request.body[Symbol.asyncIterator]();
    try {
      await writeAll(conn, encoder.encode(head.join("\r\n")));
      while (!answered) {
        // What the body throws (a changed file) is its own error, not the connection's.
        let next: IteratorResult<Uint8Array>;
        try {
          next = await chunks.next();
        } catch (error) {
          throw new BodyError(error);
        }
        if (next.done) break;
        await writeAll(conn, next.value);
        touch();
      }
    } catch (error) {
      if (error instanceof BodyError) throw error.cause;
      if (error instanceof Deno.errors.NotCapable) throw error;
      // The server may have answered and closed while we were still sending (a refusal before
      // reading the body): that answer is what counts.
      const early = await Promise.race([
        response.catch(() => null),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 1000)),
      ]);
      if (early) return early;
      throw new TransportError(
        timedOut
          ? `Nothing could be sent for ${request.idleTimeoutMs} ms`
          : `The connection to ${url.host} failed while sending: ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      // Lets the body close its file when sending stopped early; a no-op once it is done.
      await chunks.return?.().catch(() => {});
    }
    try {
      return await response;
    } catch (error) {
      if (error instanceof TransportError || error instanceof Deno.errors.NotCapable) throw error;
      throw new TransportError(
        timedOut
          ? `No answer came for ${request.idleTimeoutMs} ms`
          : `The connection to ${url.host} failed before it answered: ${(error as Error).message}`,
        { cause: error },
      );
    }
  } finally {
    close();
  }
}

class BodyError extends Error {
  constructor(cause: unknown) {
    super("the body failed", { cause });
  }
}
