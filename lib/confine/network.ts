// The confined agent's only ways out, run by reins for the length of a turn: a Unix socket
// bridged to the model gateway's loopback port, and one to a proxy (HTTP CONNECT, and plain HTTP
// with an absolute URL) that lets through the hosts allowed with --allow-host and refuses the
// rest. Both sockets (made by socat, bridged to loopback ports here) are bound into the sandbox
// (profile.ts), where socat bridges each to a loopback port again. Every connection through the proxy, allowed or refused, is reported once it
// ends. It does not look into what an allowed connection carries: TLS stays end to end.
import { type AllowedHost, isAllowed } from "./allow_host.ts";
import { BRIDGE_BACKLOG, GATEWAY_SOCKET, PROXY_SOCKET } from "./profile.ts";

/** One connection the proxy was asked for. */
export interface ConnectionReport {
  host: string;
  port: number;
  allowed: boolean;
  /** Bytes from the agent to the host, and back (0 when refused). */
  bytesSent: number;
  bytesReceived: number;
  /** Why it was refused, or why an allowed one could not be made. */
  reason?: string;
}

export interface ConfinedNetwork {
  socketDir: string;
  gatewayPort: number | null;
  proxyPort: number;
  /** Bridges the gateway's socket to `port` (a network opened with no gateway known yet). */
  bridgeGateway(port: number): void;
  /** Stops listening, ends what is still open, and waits for the last report. */
  close(): Promise<void>;
}

export interface NetworkOptions {
  /** A private directory (outside the sandbox) for the two sockets; short: sun_path is 108 bytes. */
  socketDir: string;
  /** The model gateway's port on 127.0.0.1, or null for a turn without one. */
  gatewayPort: number | null;
  allowHosts: readonly AllowedHost[];
  onConnection(report: ConnectionReport): void;
}

const HEADER_LIMIT = 16 * 1024;
/** The loopback port the proxy is bridged to inside (the sandbox has a network of its own). */
export const PROXY_PORT = 3128;

export async function openConfinedNetwork(options: NetworkOptions): Promise<ConfinedNetwork> {
  const open = new Set<Deno.Conn>();
  const work = new Set<Promise<void>>();
  const track = (job: Promise<void>) => {
    work.add(job);
    void job.finally(() => work.delete(job));
  };
  // The proxy listens on loopback, and socat makes each Unix socket: Deno asks for a net grant of
  // every Unix socket's exact path, which the binary's sandbox cannot list for names made per turn.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  track((async () => {
    try {
      for await (const conn of listener) {
        open.add(conn);
        track(
          proxy(conn, options, open).catch(() => {}).finally(() => {
            open.delete(conn);
            closeQuietly(conn);
          }),
        );
      }
    } catch {
      // closed
    }
  })());
  const bridges: Deno.ChildProcess[] = [];
  const listeners: Deno.Listener[] = [listener];
  // Where this process may listen on the socket itself (--allow-all: a program embedding reins,
  // the tests, the bench), it pipes each connection to the port; the binary's sandbox cannot
  // grant a socket made per turn (Deno asks for each exact path), and there socat does it.
  const bridge = (name: string, port: number): void => {
    const path = `${options.socketDir}/${name}`;
    try {
      const unix = Deno.listen({ transport: "unix", path });
      listeners.push(unix);
      track(pipeEach(unix, port, open));
      return;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
    }
    bridges.push(
      new Deno.Command("socat", {
        args: [
          `UNIX-LISTEN:${path},fork,umask=077,backlog=${BRIDGE_BACKLOG}`,
          `TCP:127.0.0.1:${port}`,
        ],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn(),
    );
  };
  const close = async () => {
    for (const each of listeners) closeQuietly(each);
    for (const conn of open) closeQuietly(conn);
    for (const child of bridges) {
      try {
        child.kill("SIGTERM");
      } catch {
        // gone already
      }
    }
    await Promise.allSettled(bridges.map((child) => child.status));
    while (work.size > 0) await Promise.allSettled([...work]);
  };
  try {
    bridge(PROXY_SOCKET, (listener.addr as Deno.NetAddr).port);
    if (options.gatewayPort !== null) bridge(GATEWAY_SOCKET, options.gatewayPort);
    // socat's sockets are not waited for here: the sandbox starts meanwhile, and its setup waits
    // for each before the agent starts (profile.ts), so the two starts are paid side by side.
  } catch (error) {
    await close();
    throw error;
  }
  const gatewayPort = options.gatewayPort;
  return {
    socketDir: options.socketDir,
    gatewayPort,
    proxyPort: gatewayPort === PROXY_PORT ? PROXY_PORT + 1 : PROXY_PORT,
    bridgeGateway: (port) => bridge(GATEWAY_SOCKET, port),
    close,
  };
}

/** Pipes each connection of `listener` to 127.0.0.1:`port` until the listener is closed. */
async function pipeEach(listener: Deno.Listener, port: number, open: Set<Deno.Conn>) {
  const jobs: Promise<void>[] = [];
  try {
    for await (const conn of listener) {
      open.add(conn);
      jobs.push((async () => {
        try {
          const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
          open.add(upstream);
          try {
            await splice(conn, upstream);
          } finally {
            open.delete(upstream);
            closeQuietly(upstream);
          }
        } catch {
          // the port is gone: the agent's connection just ends
        } finally {
          open.delete(conn);
          closeQuietly(conn);
        }
      })());
    }
  } catch {
    // closed
  }
  await Promise.allSettled(jobs);
}

/** One proxy connection: the request's head, the verdict, then bytes both ways. */
async function proxy(conn: Deno.Conn, options: NetworkOptions, open: Set<Deno.Conn>) {
  const head = await readHead(conn);
  if (head === null) return;
  const target = targetOf(head.text);
  if (target === null) {
    await writeAll(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    // A request the proxy does not pass that still names a host (an https:// URL, a path with a
    // Host header) is an attempt to reach it: refused, and reported as every refusal is.
    const named = namedTarget(head.text);
    if (named !== null) {
      options.onConnection({
        ...named,
        allowed: false,
        bytesSent: 0,
        bytesReceived: 0,
        reason: "not a request the proxy passes (CONNECT HOST:PORT, or an absolute http:// URL)",
      });
    }
    return;
  }
  const report: ConnectionReport = { ...target.at, allowed: false, bytesSent: 0, bytesReceived: 0 };
  try {
    if (!isAllowed(options.allowHosts, target.at.host, target.at.port)) {
      report.reason = "not an allowed host (--allow-host)";
      await writeAll(
        conn,
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n" +
          `reins: ${target.at.host}:${target.at.port} is not an allowed host (--allow-host)\n`,
      );
      return;
    }
    report.allowed = true;
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({ hostname: target.at.host, port: target.at.port });
    } catch (error) {
      report.reason = `could not connect: ${error instanceof Error ? error.message : error}`;
      await writeAll(conn, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n");
      return;
    }
    // A name allowed is a host out there: one that resolves to this machine's own loopback (DNS
    // pointed at 127.0.0.1, rebinding) would let the agent reach what listens here — the gateway's
    // real port, a database. Judged on the address connected to, so no later answer changes it.
    const reached = (upstream.remoteAddr as Deno.NetAddr).hostname;
    if (isLoopbackAddress(reached) && !namesLoopback(target.at.host)) {
      closeQuietly(upstream);
      report.allowed = false;
      report.reason =
        `it resolves to ${reached}, this machine's own loopback: allow the address itself to reach it`;
      await writeAll(
        conn,
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n" +
          `reins: ${target.at.host} resolves to ${reached}, this machine's own loopback\n`,
      );
      return;
    }
    open.add(upstream);
    try {
      if (target.tunnel) {
        await writeAll(conn, "HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.rest.length) report.bytesSent += await writeAll(upstream, head.rest);
      } else {
        report.bytesSent += await writeAll(upstream, concat(target.request, head.rest));
      }
      const [sent, received] = await splice(conn, upstream);
      report.bytesSent += sent;
      report.bytesReceived += received;
    } finally {
      open.delete(upstream);
      closeQuietly(upstream);
    }
  } finally {
    options.onConnection(report);
  }
}

/** 127.0.0.0/8, ::1, the unspecified addresses (which reach loopback too), and IPv4 mapped into IPv6. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/^::ffff:/, "");
  return /^127\./.test(bare) || bare === "0.0.0.0" || bare === "::1" || bare === "::" ||
    /^0+(:0+){7}$/.test(bare) || /^0*(:0*){6}:0*1$/.test(bare);
}

/**
 * Whether `host`, as the agent asked for it, already says loopback: an address literal (the user
 * allowed that very address) or `localhost` and its subdomains (RFC 6761: always loopback).
 */
function namesLoopback(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost") || /^[\d.]+$/.test(name) ||
    name.includes(":");
}

interface Target {
  at: { host: string; port: number };
  /** CONNECT: bytes pass as they are once answered. */
  tunnel: boolean;
  /** Plain HTTP: the head to send on, its request line in origin form. */
  request: Uint8Array;
}

function targetOf(head: string): Target | null {
  const [line, ...rest] = head.split("\r\n");
  const [method, uri, version] = line.split(" ");
  if (!method || !uri || !version?.startsWith("HTTP/")) return null;
  if (method.toUpperCase() === "CONNECT") {
    const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(uri);
    if (match === null) return null;
    const port = Number(match[2]);
    if (!(port > 0 && port < 65536)) return null;
    const host = match[1].replace(/^\[(.*)\]$/, "$1");
    return { at: { host, port }, tunnel: true, request: new Uint8Array() };
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== "http:") return null;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = url.port ? Number(url.port) : 80;
  const text = [`${method} ${url.pathname}${url.search} ${version}`, ...rest].join("\r\n");
  return { at: { host, port }, tunnel: false, request: new TextEncoder().encode(text) };
}

const DEFAULT_PORTS: Record<string, number> = {
  "http:": 80,
  "ws:": 80,
  "https:": 443,
  "wss:": 443,
};

/** The host and port a request the proxy does not pass names (its URL's, or its Host's), or null. */
function namedTarget(head: string): { host: string; port: number } | null {
  const [line, ...fields] = head.split("\r\n");
  const uri = line.split(" ")[1] ?? "";
  let url: URL | null = null;
  try {
    url = new URL(uri);
  } catch {
    const host = fields.find((field) => /^host:/i.test(field))?.slice(5).trim();
    if (host) {
      try {
        url = new URL(`http://${host}/`);
      } catch { /* not a host */ }
    }
  }
  if (url === null || url.hostname === "") return null;
  const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  if (port === undefined) return null;
  return { host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
}

/** The request's head up to its blank line (as text) and what came after it; null: none. */
async function readHead(conn: Deno.Conn): Promise<{ text: string; rest: Uint8Array } | null> {
  let buffer: Uint8Array = new Uint8Array(0);
  const chunk = new Uint8Array(4096);
  while (buffer.length < HEADER_LIMIT) {
    const read = await conn.read(chunk);
    if (read === null) return null;
    buffer = concat(buffer, chunk.subarray(0, read));
    const end = indexOfBlankLine(buffer);
    if (end >= 0) {
      return {
        text: new TextDecoder().decode(buffer.subarray(0, end + 4)),
        rest: buffer.slice(end + 4),
      };
    }
  }
  return null;
}

function indexOfBlankLine(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

/** Copies both ways until both ends are done; the bytes each way. */
async function splice(agent: Deno.Conn, host: Deno.Conn): Promise<[number, number]> {
  return await Promise.all([copy(agent, host), copy(host, agent)]);
}

async function copy(from: Deno.Conn, to: Deno.Conn): Promise<number> {
  const buffer = new Uint8Array(64 * 1024);
  let total = 0;
  try {
    while (true) {
      const read = await from.read(buffer);
      if (read === null) break;
      total += await writeAll(to, buffer.subarray(0, read));
    }
  } catch {
    // either end went away: what was copied stands
  }
  try {
    await to.closeWrite();
  } catch {
    // already closed
  }
  return total;
}

async function writeAll(conn: Deno.Conn, data: string | Uint8Array): Promise<number> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
  return bytes.length;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // already closed
  }
}
