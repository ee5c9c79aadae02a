// A raw HTTP/1.1 client for tests that must control every byte on the wire (framing, timing,
// slow senders): no fetch, just a socket.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** Parses every complete response in `text` (bodies framed by Content-Length or chunked). */
export function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (true) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) return out;
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const status = Number(statusLine.split(" ")[1]);
    const headers = new Map<string, string>();
    for (const line of lines) {
      const at = line.indexOf(":");
      headers.set(line.slice(0, at).toLowerCase(), line.slice(at + 1).trim());
    }
    rest = rest.slice(end + 4);
    if (status === 100) continue;
    let body = "";
    if (headers.get("transfer-encoding") === "chunked") {
      while (true) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd < 0) return out;
        const size = parseInt(rest.slice(0, lineEnd), 16);
        if (rest.length < lineEnd + 2 + size + 2) return out;
        body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
        rest = rest.slice(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers.get("content-length") ?? 0);
      if (rest.length < length) return out;
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    out.push({ status, headers, body });
  }
}

/** Sends `bytes` on a new connection and reads until the server closes it (or `timeoutMs`). */
export async function exchange(
  port: number,
  bytes: string | Uint8Array,
  timeoutMs = 5000,
): Promise<{ text: string; closed: boolean }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch { /* closed */ }
  }, timeoutMs);
  let text = "";
  let closed = false;
  try {
    await writeAll(conn, typeof bytes === "string" ? encoder.encode(bytes) : bytes);
    const buffer = new Uint8Array(64 * 1024);
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) {
        closed = true;
        break;
      }
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
    }
  } catch (error) {
    // Reset by the server, or closed by the timer.
    closed = !(error instanceof Deno.errors.BadResource);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
  return { text, closed };
}

export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

/** A POST with a body of known length. */
export function post(path: string, body: string, headers: Record<string, string> = {}): string {
  const lines = Object.entries({
    host: "127.0.0.1",
    "content-type": "application/json",
    "content-length": String(encoder.encode(body).length),
    ...headers,
  }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return `POST ${path} HTTP/1.1\r\n${lines}\r\n${body}`;
}
