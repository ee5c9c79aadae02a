// An HTTP/1.1 server on a plain TCP listener, written for being left running: every phase of a
// connection has a deadline (the head, the body, a write, the wait between requests), heads and
// bodies have caps, and there is a ceiling on connections. It exists because Deno.serve gives a
// handler no say until a head is complete and has no head deadline at all (measured on Deno 2.9:
// a client trickling header lines, or sending nothing, keeps its connection open indefinitely),
// and because a body cap can only be held to bytes read off the socket by the code reading them.
// TLS is left to a reverse proxy in front (docs/serve.md).
import { type BodyLimits, readBody } from "./body.ts";
import { ConnReader } from "./conn_reader.ts";
import { HttpError, parseHead, type RequestHead } from "./head.ts";
import {
  chunk,
  type HttpResponse,
  LAST_CHUNK,
  plainResponse,
  responseHead,
  wholeResponse,
} from "./response.ts";

export interface HttpLimits extends BodyLimits {
  /** The most a request head (request line and fields) may take. */
  maxHeadBytes: number;
  /** From a connection's first byte of a request to the end of its head. */
  headTimeoutMs: number;
  /** For the whole body, once the head is in. */
  bodyTimeoutMs: number;
  /** For a new connection's first byte, and between requests on a kept-alive one. */
  idleTimeoutMs: number;
  /** For any one write to go out (a client that stops reading is dropped). */
  writeTimeoutMs: number;
  maxConnections: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxBodyBytes: 1024 * 1024,
  slackBytes: 64 * 1024,
  maxHeadBytes: 16 * 1024,
  headTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  writeTimeoutMs: 30_000,
  maxConnections: 2048,
};

export interface ConnectionInfo {
  readonly remoteAddr: Deno.NetAddr;
}

export interface HttpHandler {
  /** A response to give without reading the body (a refusal), or null to read it. */
  head(request: RequestHead, info: ConnectionInfo): HttpResponse | null;
  handle(request: RequestHead, body: Uint8Array, info: ConnectionInfo): Promise<HttpResponse>;
}

/** What a connection did, reported when it closes (for tests and diagnostics). */
export interface ConnectionReport {
  bytesRead: number;
  requests: number;
  /** Why it closed: "eof", "close" (asked or decided), "head timeout", "idle timeout", … */
  reason: string;
}

export interface HttpServerOptions {
  hostname: string;
  port: number;
  handler: HttpHandler;
  limits?: Partial<HttpLimits>;
  onConnectionClosed?(report: ConnectionReport): void;
  /** An error no response could carry (a handler threw after its response began). */
  onError?(error: unknown): void;
}

const HEAD_END = new Uint8Array([13, 10, 13, 10]);
/** How often deadlines are checked: they fire up to this much late. */
const SWEEP_MS = 200;
const encoder = new TextEncoder();

function indexOfHeadEnd(bytes: Uint8Array, from: number): number {
  let at = from;
  while (true) {
    at = bytes.indexOf(13, at);
    if (at < 0 || at + 3 >= bytes.length) return -1;
    if (bytes[at + 1] === 10 && bytes[at + 2] === 13 && bytes[at + 3] === 10) return at;
    at++;
  }
}

class Connection {
  readonly conn: Deno.TcpConn;
  readonly reader: ConnReader;
  readonly info: ConnectionInfo;
  requests = 0;
  /** Waiting for a request to begin: safe to close when the server stops. */
  idle = true;
  closed = false;
  reason = "eof";
  /** When the current phase expires (epoch ms; 0: no deadline), and what happens then. */
  deadlineMs = 0;
  onDeadline: () => void = () => {};
  /** When the write under way must have finished (0: none). */
  writeDeadlineMs = 0;

  constructor(conn: Deno.TcpConn) {
    this.conn = conn;
    this.reader = new ConnReader(conn);
    this.info = { remoteAddr: conn.remoteAddr };
  }

  /**
   * Runs `expire` in `ms` (give or take the sweep interval) unless disarm() or another arm()
   * comes first. A number, not a timer: the server's one sweep checks every connection, so
   * arming costs a request nothing.
   */
  arm(ms: number, expire: () => void): void {
    this.deadlineMs = Date.now() + ms;
    this.onDeadline = expire;
  }

  disarm(): void {
    this.deadlineMs = 0;
  }

  /** Fires whatever deadline has passed. */
  sweep(nowMs: number): void {
    if (this.writeDeadlineMs !== 0 && nowMs >= this.writeDeadlineMs) {
      this.close("write timeout");
      return;
    }
    if (this.deadlineMs !== 0 && nowMs >= this.deadlineMs) {
      this.deadlineMs = 0;
      this.onDeadline();
    }
  }

  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.reason = reason;
    this.disarm();
    this.writeDeadlineMs = 0;
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }
}

export class HttpServer {
  readonly #listener: Deno.TcpListener;
  readonly #handler: HttpHandler;
  readonly #limits: HttpLimits;
  readonly #options: HttpServerOptions;
  readonly #connections = new Set<Connection>();
  #stopping = false;
  readonly #accepting: Promise<void>;
  #allClosed: (() => void) | null = null;
  #sweeper: ReturnType<typeof setInterval> | undefined;

  private constructor(listener: Deno.TcpListener, options: HttpServerOptions) {
    this.#listener = listener;
    this.#handler = options.handler;
    this.#limits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
    this.#options = options;
    this.#accepting = this.#acceptLoop();
  }

  /** Listens on `hostname:port` (port 0: any free port) and starts serving. */
  static listen(options: HttpServerOptions): HttpServer {
    const listener = Deno.listen({ hostname: options.hostname, port: options.port });
    return new HttpServer(listener, options);
  }

  get addr(): Deno.NetAddr {
    return this.#listener.addr;
  }

  get limits(): Readonly<HttpLimits> {
    return this.#limits;
  }

  /** Open connections. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /**
   * Stops accepting connections and closes those waiting for a request. Requests under way
   * finish, their responses marked `connection: close`.
   */
  stopAccepting(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const connection of this.#connections) {
      if (connection.idle) connection.close("server stopping");
    }
  }

  /** Resolves when every connection has closed (after stopAccepting). */
  async drained(): Promise<void> {
    await this.#accepting;
    if (this.#connections.size === 0) return;
    await new Promise<void>((resolve) => this.#allClosed = resolve);
  }

  /** Stops at once: no more connections, and every open one closed. */
  async close(): Promise<void> {
    this.stopAccepting();
    for (const connection of this.#connections) connection.close("server closed");
    await this.drained();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #acceptLoop(): Promise<void> {
    while (!this.#stopping) {
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
      } catch (error) {
        if (this.#stopping || error instanceof Deno.errors.BadResource) return;
        // Out of file descriptors and the like: wait a moment rather than stop serving.
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (this.#stopping || this.#connections.size >= this.#limits.maxConnections) {
        this.#refuseConnection(conn);
        continue;
      }
      const connection = new Connection(conn);
      this.#connections.add(connection);
      this.#sweeper ??= setInterval(() => {
        const now = Date.now();
        for (const each of this.#connections) each.sweep(now);
      }, SWEEP_MS);
      this.#serve(connection).finally(() => {
        this.#connections.delete(connection);
        if (this.#connections.size === 0) {
          clearInterval(this.#sweeper);
          this.#sweeper = undefined;
        }
        this.#options.onConnectionClosed?.({
          bytesRead: connection.reader.bytesRead,
          requests: connection.requests,
          reason: connection.reason,
        });
        if (this.#connections.size === 0) this.#allClosed?.();
      });
    }
  }

  #refuseConnection(conn: Deno.TcpConn): void {
    const bytes = wholeResponse(
      plainResponse(503, "Too many connections: try again shortly", true),
      false,
      false,
    );
    const timer = setTimeout(() => conn.close(), 1000);
    conn.write(bytes).catch(() => {}).finally(() => {
      clearTimeout(timer);
      try {
        conn.close();
      } catch { /* closed by the timer */ }
    });
  }

  async #serve(connection: Connection): Promise<void> {
    try {
      connection.conn.setNoDelay(true);
    } catch { /* not a TCP socket that takes it */ }
    try {
      while (!connection.closed) {
        const head = await this.#readHead(connection);
        if (head === null) break;
        connection.idle = false;
        connection.requests++;
        const keepOpen = await this.#exchange(connection, head);
        if (!keepOpen || this.#stopping) {
          connection.close(this.#stopping ? "server stopping" : "close");
          break;
        }
        connection.idle = true;
      }
    } catch (error) {
      if (!connection.closed && !isConnectionError(error)) this.#options.onError?.(error);
      connection.close(connection.closed ? connection.reason : "connection error");
    } finally {
      connection.close(connection.reason);
    }
  }

  /** The next request's head, or null when the client closed (or was timed out) first. */
  async #readHead(connection: Connection): Promise<RequestHead | null> {
    const { reader } = connection;
    const limits = this.#limits;
    let began = false;
    const begin = () => {
      began = true;
      connection.arm(limits.headTimeoutMs, () => this.#expire(connection, "head timeout", 408));
    };
    // A new connection gets the head deadline for its first byte too: one that says nothing is
    // a slow client like any other.
    if (reader.length > 0) begin();
    else {
      connection.arm(
        connection.requests === 0 ? limits.headTimeoutMs : limits.idleTimeoutMs,
        () => connection.close(connection.requests === 0 ? "head timeout" : "idle timeout"),
      );
    }
    let scanned = 0;
    while (true) {
      // Blank lines before a request line are to be ignored (RFC 9112 §2.2).
      while (reader.length >= 2 && reader.buffered[0] === 13 && reader.buffered[1] === 10) {
        reader.consume(2);
        scanned = 0;
      }
      const found = indexOfHeadEnd(reader.buffered, Math.max(0, scanned - 3));
      const at = found >= 0 && found + HEAD_END.length <= limits.maxHeadBytes ? found : -1;
      if (at >= 0) {
        connection.disarm();
        const bytes = reader.buffered.subarray(0, at);
        try {
          // parseHead decodes the bytes to text at once: consuming them after is safe.
          const parsed = parseHead(bytes);
          reader.consume(at + HEAD_END.length);
          return parsed;
        } catch (error) {
          reader.consume(at + HEAD_END.length);
          if (!(error instanceof HttpError)) throw error;
          await this.#refuse(connection, error);
          return null;
        }
      }
      scanned = reader.length;
      if (found >= 0 || reader.length > limits.maxHeadBytes) {
        connection.disarm();
        await this.#refuse(
          connection,
          new HttpError(431, `A request head may take at most ${limits.maxHeadBytes} bytes`),
        );
        return null;
      }
      let more: boolean;
      try {
        more = await reader.fill();
      } catch (error) {
        if (connection.closed) return null;
        throw error;
      }
      if (!more) {
        connection.close("eof");
        return null;
      }
      if (!began) begin();
    }
  }

  /** Answers one request; true when the connection may carry another. */
  async #exchange(connection: Connection, head: RequestHead): Promise<boolean> {
    let response = this.#handler.head(head, connection.info);
    const hasBody = head.chunked || (head.contentLength ?? 0) > 0;
    let bodyRead = !hasBody;
    if (response === null) {
      const { reader } = connection;
      const bodyStart = reader.bytesRead - reader.length;
      let body: Uint8Array;
      try {
        if (head.expectContinue && hasBody) {
          await this.#write(connection, encoder.encode("HTTP/1.1 100 Continue\r\n\r\n"));
        }
        connection.arm(
          this.#limits.bodyTimeoutMs,
          () => this.#expire(connection, "body timeout", 408),
        );
        body = await readBody(reader, head, this.#limits);
        connection.disarm();
        bodyRead = true;
      } catch (error) {
        connection.disarm();
        if (error instanceof HttpError) {
          const left = this.#limits.maxBodyBytes + this.#limits.slackBytes -
            (reader.bytesRead - bodyStart);
          await this.#refuse(connection, error, Math.min(this.#limits.slackBytes, left));
          return false;
        }
        throw error;
      }
      try {
        response = await this.#handler.handle(head, body, connection.info);
      } catch (error) {
        this.#options.onError?.(error);
        response = plainResponse(500, "The server failed to answer this request", true);
      }
    }
    // A body left unread cannot be skipped reliably: the connection ends with this response.
    const keepAlive = head.keepAlive && bodyRead && !response.close && !this.#stopping;
    if (response.stream) {
      return await this.#stream(connection, response, keepAlive) && keepAlive;
    }
    await this.#write(connection, wholeResponse(response, keepAlive, head.method === "HEAD"));
    return keepAlive;
  }

  async #stream(
    connection: Connection,
    response: HttpResponse,
    keepAlive: boolean,
  ): Promise<boolean> {
    await this.#write(
      connection,
      encoder.encode(responseHead(response.status, response.headers, { chunked: true }, keepAlive)),
    );
    const gone = new AbortController();
    const onGone = () => gone.abort(new Error("the client went away"));
    // A read left pending sees the client hang up; should it bring bytes instead (a pipelined
    // request), they stay buffered for the next head and writes alone tell of a hang-up.
    const watching = connection.reader.fill().then((more) => {
      if (!more) onGone();
    }, onGone);
    let ok = true;
    try {
      await response.stream!(async (piece) => {
        if (gone.signal.aborted) throw gone.signal.reason;
        try {
          await this.#write(connection, chunk(piece));
        } catch (error) {
          onGone();
          throw error;
        }
      }, gone.signal);
    } catch (error) {
      ok = false;
      if (!gone.signal.aborted) this.#options.onError?.(error);
    }
    if (!ok || gone.signal.aborted || connection.closed) {
      connection.close("stream ended by the client or an error");
      await watching;
      return false;
    }
    await this.#write(connection, LAST_CHUNK);
    return true;
  }

  /** Writes all of `bytes`, dropping the connection if that takes longer than the limit. */
  async #write(connection: Connection, bytes: Uint8Array): Promise<void> {
    connection.writeDeadlineMs = Date.now() + this.#limits.writeTimeoutMs;
    try {
      let written = 0;
      while (written < bytes.length) {
        written += await connection.conn.write(bytes.subarray(written));
      }
    } finally {
      connection.writeDeadlineMs = 0;
    }
  }

  /** A phase deadline passed: answer 408 if the socket takes it, and close. */
  #expire(connection: Connection, reason: string, status: number): void {
    if (connection.closed) return;
    const bytes = wholeResponse(
      plainResponse(status, `The request took too long to arrive (${reason})`, true),
      false,
      false,
    );
    const timer = setTimeout(() => connection.close(reason), 1000);
    connection.conn.write(bytes).catch(() => {}).finally(() => {
      clearTimeout(timer);
      connection.close(reason);
    });
  }

  /**
   * Answers a refused request and closes. The client may still be sending (a body over the cap):
   * the connection stays open a moment, reading and dropping at most `drain` bytes, so that the
   * answer is read before the close resets the connection.
   */
  async #refuse(
    connection: Connection,
    error: HttpError,
    drain: number = this.#limits.slackBytes,
  ): Promise<void> {
    const response = plainResponse(error.status, error.message, true);
    try {
      await this.#write(connection, wholeResponse(response, false, false));
      await connection.conn.closeWrite();
    } catch {
      connection.close(`refused ${error.status}`);
      return;
    }
    const { reader } = connection;
    const limit = reader.bytesRead + Math.max(0, drain);
    connection.arm(1000, () => connection.close(`refused ${error.status}`));
    try {
      while (!connection.closed && reader.bytesRead < limit) {
        reader.consume(reader.length);
        if (!(await reader.fill(limit - reader.bytesRead))) break;
      }
    } catch { /* closed by the timer, or reset */ }
    connection.close(`refused ${error.status}`);
  }
}

function isConnectionError(error: unknown): boolean {
  return error instanceof Deno.errors.BadResource ||
    error instanceof Deno.errors.ConnectionReset ||
    error instanceof Deno.errors.BrokenPipe ||
    error instanceof Deno.errors.ConnectionAborted ||
    error instanceof Deno.errors.Interrupted ||
    error instanceof Deno.errors.NotConnected;
}
