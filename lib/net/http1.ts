// One HTTP/1.1 request over a socket of our own, plain or TLS, answered as a streaming Response.
// It exists for what Deno's fetch cannot do (checked on Deno 2.9): reach a loopback host while
// the environment sets a proxy (fetch proxies loopback too, and its only direct transport writes
// absolute-form targets), and send a streamed body with a Content-Length (fetch sends every
// stream chunked, and a WSGI server such as the platform's Django reads no body without one).
// It writes origin-form targets only, sends `Connection: close` and follows no redirect: one
// request per connection, which is all route.ts sends this way.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A body of known length produced piece by piece (a file read as it is sent). */
export interface StreamedBody {
  length: number;
  chunks: AsyncIterable<Uint8Array>;
}

export interface DirectRequest {
  url: URL;
  method: string;
  /** Without Host, Content-Length and Connection, which this module writes. */
  headers: Record<string, string>;
  body?: Uint8Array | StreamedBody | null;
  /** Closes the connection: the request (or the body being read) rejects with its reason. */
  signal?: AbortSignal;
  /** Give up when nothing is written or read for this long (the whole exchange, body too). */
  idleTimeoutMs?: number;
  /** Extra root certificates (PEM) for https. */
  caCerts?: string[];
}

/** The socket failed, timed out or closed early. A TypeError, like fetch's network errors. */
export class TransportError extends TypeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransportError";
  }
}

const MAX_HEAD = 64 * 1024;
const MAX_LINE = 8 * 1024;
const READ_SIZE = 64 * 1024;
const FIRST_READ = 4 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Statuses whose answers have no body, whatever their headers say (RFC 9110 §6.4.1).
const NO_BODY = new Set([204, 205, 304]);

function checkHeader(name: string, value: string): void {
  if (!TOKEN.test(name)) throw new TypeError(`Cannot send the header name ${JSON.stringify(name)}`);
  if (/[\r\n\0]/.test(value)) {
    throw new TypeError(`Cannot send the header ${name}: its value contains a line break or NUL`);
  }
}

function indexOf(bytes: Uint8Array, needle: readonly number[], from = 0): number {
  outer: for (let i = from; i + needle.length <= bytes.length; i++) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const CRLF = [13, 10];
const CRLFCRLF = [13, 10, 13, 10];

interface Head {
  status: number;
  statusText: string;
  headers: Headers;
}

/** One connection: buffered reads, an idle timer, the abort signal, and one way to close. */
class Link {
  readonly #conn: Deno.Conn;
  readonly #host: string;
  readonly #idleMs: number | undefined;
  readonly #signal: AbortSignal | undefined;
  /**
   * What was read and not yet taken: `#chunk[#start, #end)`. One buffer a connection, reused by
   * every read: small at first (an OTLP or platform answer is a few hundred bytes), doubled up to
   * READ_SIZE while reads fill it. A new 64 KiB buffer a read lives outside V8's heap until a
   * collection frees it, and a long export's hundreds of answers piled up tens of MiB of them.
   */
  #chunk = new Uint8Array(FIRST_READ);
  #start = 0;
  #end = 0;
  /** The last read filled all the room it had: the next one gets a larger buffer. */
  #filled = false;
  #eof = false;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  timedOut = false;
  readonly #onAbort = () => this.close();

  constructor(conn: Deno.Conn, host: string, idleMs?: number, signal?: AbortSignal) {
    this.#conn = conn;
    this.#host = host;
    this.#idleMs = idleMs;
    this.#signal = signal;
    signal?.addEventListener("abort", this.#onAbort, { once: true });
    this.touch();
  }

  touch(): void {
    if (this.#idleMs === undefined || this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.close();
    }, this.#idleMs);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener("abort", this.#onAbort);
    try {
      this.#conn.close();
    } catch { /* closed already */ }
  }

  /** What a failure of this connection is, for the caller: the abort reason, a timeout, … */
  explain(error: unknown, doing: string): unknown {
    if (this.#signal?.aborted) return this.#signal.reason;
    if (error instanceof Deno.errors.NotCapable) return error;
    if (this.timedOut) {
      return new TransportError(`Nothing came or went for ${this.#idleMs} ms while ${doing}`, {
        cause: error,
      });
    }
    if (error instanceof TransportError) return error;
    return new TransportError(
      `The connection to ${this.#host} failed while ${doing}: ${(error as Error)?.message}`,
      { cause: error },
    );
  }

  async write(bytes: Uint8Array): Promise<void> {
    let written = 0;
    while (written < bytes.length) {
      written += await this.#conn.write(bytes.subarray(written));
      this.touch();
    }
  }

  /**
   * Reads more into the buffer; false at the end of the stream. What take() and until() returned
   * before may be overwritten: a caller copies what it keeps before reading again.
   */
  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    const held = this.#end - this.#start;
    const grow = this.#filled && this.#chunk.length < READ_SIZE;
    if (grow || held === this.#chunk.length) {
      const next = new Uint8Array(this.#chunk.length * 2);
      next.set(this.#chunk.subarray(this.#start, this.#end));
      this.#chunk = next;
      this.#start = 0;
      this.#end = held;
    } else if (this.#end === this.#chunk.length || held === 0) {
      this.#chunk.copyWithin(0, this.#start, this.#end);
      this.#start = 0;
      this.#end = held;
    }
    const room = this.#chunk.length - this.#end;
    const got = await this.#conn.read(this.#chunk.subarray(this.#end));
    this.touch();
    if (got === null) {
      this.#eof = true;
      return false;
    }
    this.#filled = got === room;
    this.#end += got;
    return true;
  }

  /** Up to `max` bytes, as soon as any are there; null at the end of the stream. */
  async take(max: number): Promise<Uint8Array | null> {
    if (this.#start === this.#end && !(await this.#fill())) return null;
    const size = Math.min(max, this.#end - this.#start);
    const piece = this.#chunk.subarray(this.#start, this.#start + size);
    this.#start += size;
    return piece;
  }

  /** The bytes up to `needle` (consumed with it), or null when the stream ends first. */
  async until(needle: readonly number[], limit: number, what: string): Promise<Uint8Array | null> {
    let from = 0;
    while (true) {
      const buffered = this.#chunk.subarray(this.#start, this.#end);
      const at = indexOf(buffered, needle, from);
      if (at >= 0) {
        this.#start += at + needle.length;
        return buffered.subarray(0, at);
      }
      if (buffered.length > limit) throw new TransportError(`The server's ${what} is too long`);
      from = Math.max(0, buffered.length - needle.length + 1);
      if (!(await this.#fill())) return null;
    }
  }

  async line(what: string): Promise<string | null> {
    const bytes = await this.until(CRLF, MAX_LINE, what);
    return bytes === null ? null : decoder.decode(bytes);
  }

  /** The final response head, after any interim (1xx) ones. */
  async head(): Promise<Head> {
    while (true) {
      const bytes = await this.until(CRLFCRLF, MAX_HEAD, "response head");
      if (bytes === null) {
        throw new TransportError("The server closed the connection before it answered");
      }
      const lines = decoder.decode(bytes).split("\r\n");
      const status = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0]);
      if (status === null) {
        throw new TransportError(
          `The server answered with ${JSON.stringify(lines[0].slice(0, 80))}`,
        );
      }
      const code = Number(status[1]);
      if (code >= 100 && code < 200) continue;
      if (code < 200 || code > 599) throw new TransportError(`The server answered status ${code}`);
      const headers = new Headers();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        try {
          headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
        } catch { /* a header fetch would refuse too: left out */ }
      }
      return { status: code, statusText: status[2] ?? "", headers };
    }
  }
}

/** The body's pieces as the head says they come: by length, chunked, or until the close. */
async function* bodyOf(link: Link, head: Head, method: string): AsyncGenerator<Uint8Array> {
  if (NO_BODY.has(head.status) || method === "HEAD") return;
  if (/\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "")) {
    while (true) {
      const sizeLine = await link.line("chunk size line");
      if (sizeLine === null) throw new TransportError("The server closed the connection mid-body");
      const size = parseInt(sizeLine.split(";")[0].trim(), 16);
      if (!Number.isFinite(size) || size < 0) {
        throw new TransportError(`The server sent a bad chunk size ${JSON.stringify(sizeLine)}`);
      }
      if (size === 0) {
        // Trailers, up to the blank line; a server that closes instead has said all it will.
        while (true) {
          const trailer = await link.line("trailer");
          if (trailer === null || trailer === "") return;
        }
      }
      for (let left = size; left > 0;) {
        const piece = await link.take(left);
        if (piece === null) throw new TransportError("The server closed the connection mid-body");
        left -= piece.length;
        yield piece;
      }
      if ((await link.line("chunk end")) !== "") {
        throw new TransportError("The server sent a chunk longer than it said");
      }
    }
  }
  const length = head.headers.get("content-length");
  if (length !== null) {
    const total = Number(length);
    if (!Number.isSafeInteger(total) || total < 0) {
      throw new TransportError(`The server sent a bad Content-Length ${JSON.stringify(length)}`);
    }
    for (let left = total; left > 0;) {
      const piece = await link.take(Math.min(left, READ_SIZE));
      if (piece === null) throw new TransportError("The server closed the connection mid-body");
      left -= piece.length;
      yield piece;
    }
    return;
  }
  while (true) {
    const piece = await link.take(READ_SIZE);
    if (piece === null) return;
    yield piece;
  }
}

function responseOf(link: Link, head: Head, method: string): Response {
  const pieces = bodyOf(link, head, method);
  const done = () => {
    link.close();
    pieces.return(undefined).catch(() => {});
  };
  const body = NO_BODY.has(head.status) ? null : new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await pieces.next();
        if (next.done) {
          done();
          controller.close();
        } else controller.enqueue(next.value.slice());
      } catch (error) {
        done();
        controller.error(link.explain(error, "reading the answer"));
      }
    },
    cancel: done,
  });
  if (body === null) link.close();
  return new Response(body, {
    status: head.status,
    statusText: head.statusText,
    headers: head.headers,
  });
}

class BodyError extends Error {
  constructor(cause: unknown) {
    super("the body failed", { cause });
  }
}

/**
 * Sends one request and resolves with the answer's head; the body streams from the socket. If
 * the server answers before a streamed body is done (a 401, a 413), sending stops and that
 * answer is returned. If the body's iterator throws, the connection is closed mid-body and its
 * error is rethrown: the server sees a truncated request, never a complete one.
 */
export async function sendDirect(request: DirectRequest): Promise<Response> {
  const { url, signal } = request;
  if (signal?.aborted) throw signal.reason;
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port) || (secure ? 443 : 80);
  const body = request.body ?? null;
  const length = body === null ? 0 : body instanceof Uint8Array ? body.length : body.length;
  const lines = [
    `${request.method} ${url.pathname || "/"}${url.search} HTTP/1.1`,
    `Host: ${url.host}`,
  ];
  for (const [name, value] of Object.entries(request.headers)) {
    checkHeader(name, value);
    lines.push(`${name}: ${value}`);
  }
  if (body !== null || !["GET", "HEAD"].includes(request.method)) {
    lines.push(`Content-Length: ${length}`);
  }
  lines.push("Connection: close", "", "");

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
  const link = new Link(conn, url.host, request.idleTimeoutMs, signal);
  let answered = false;
  const head = link.head().then((value) => {
    answered = true;
    return value;
  });
  // Awaited below, or abandoned with the connection when sending fails.
  head.catch(() => {});
  try {
    let chunks: AsyncIterator<Uint8Array> | null = null;
    try {
      await link.write(encoder.encode(lines.join("\r\n")));
      if (body instanceof Uint8Array) await link.write(body);
      else if (body !== null) {
        chunks = body.chunks[Symbol.asyncIterator]();
        while (!answered) {
          // What the body throws (a changed file) is its own error, not the connection's.
          let next: IteratorResult<Uint8Array>;
          try {
            next = await chunks.next();
          } catch (error) {
            throw new BodyError(error);
          }
          if (next.done) break;
          await link.write(next.value);
        }
      }
    } catch (error) {
      if (error instanceof BodyError) throw error.cause;
      if (signal?.aborted || error instanceof Deno.errors.NotCapable) throw error;
      // The server may have answered and closed while we were still sending (a refusal before
      // reading the body): that answer is what counts.
      const early = await Promise.race([
        head.catch(() => null),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 1000)),
      ]);
      if (early) return responseOf(link, early, request.method);
      throw link.explain(error, "sending");
    } finally {
      // Lets the body close its file when sending stopped early; a no-op once it is done.
      await chunks?.return?.().catch(() => {});
    }
    let answer: Head;
    try {
      answer = await head;
    } catch (error) {
      throw link.explain(error, "waiting for the answer");
    }
    return responseOf(link, answer, request.method);
  } catch (error) {
    link.close();
    throw error;
  }
}

/** The body of `response` as text, cut at `maxBytes` (the rest is not read). */
export async function boundedText(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const next = await reader.read();
      if (next.done) break;
      parts.push(next.value);
      total += next.value.length;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(Math.min(total, maxBytes));
  let at = 0;
  for (const part of parts) {
    const room = all.length - at;
    if (room <= 0) break;
    all.set(part.subarray(0, room), at);
    at += Math.min(room, part.length);
  }
  return decoder.decode(all);
}
