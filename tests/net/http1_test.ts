// sendDirect(): one HTTP/1.1 request over our own socket, against real servers (Deno.serve, and
// raw sockets where a test needs to control or see the exact bytes).
import assert from "node:assert/strict";
import { boundedText, sendDirect, type StreamedBody, TransportError } from "../../lib/net/http1.ts";
import { tempDir } from "../support/reins.ts";

/** The old upload helper's shape over sendDirect: a streamed body, the answer read whole. */
async function sendStreamed(request: {
  url: URL;
  method: string;
  headers: Record<string, string>;
  contentLength: number;
  body: AsyncIterable<Uint8Array>;
  idleTimeoutMs: number;
  caCerts?: string[];
}) {
  const body: StreamedBody = { length: request.contentLength, chunks: request.body };
  const response = await sendDirect({ ...request, body });
  return {
    status: response.status,
    headers: response.headers,
    text: await boundedText(response, 1 << 20),
  };
}

async function* chunks(count: number, size: number, counter?: { pulled: number }) {
  for (let i = 0; i < count; i++) {
    if (counter) counter.pulled++;
    yield new Uint8Array(size).fill(i % 256);
  }
}

Deno.test("sendDirect() sends a body of known length with Content-Length, not chunked", async () => {
  let seen: { length: string | null; encoding: string | null; got: number } | null = null;
  await using server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      const body = new Uint8Array(await req.arrayBuffer());
      seen = {
        length: req.headers.get("content-length"),
        encoding: req.headers.get("transfer-encoding"),
        got: body.length,
      };
      return Response.json({ ok: true }, { headers: { "x-extra": "1" } });
    },
  );
  const response = await sendStreamed({
    url: new URL(`http://127.0.0.1:${server.addr.port}/up/?q=1`),
    method: "POST",
    headers: { "X-Api-Key": "k" },
    contentLength: 10 * 65536,
    body: chunks(10, 65536),
    idleTimeoutMs: 5000,
  });
  assert.deepEqual(response.status, 200);
  assert.deepEqual(JSON.parse(response.text), { ok: true });
  assert.deepEqual(response.headers.get("x-extra"), "1");
  assert.deepEqual(seen, { length: String(10 * 65536), encoding: null, got: 10 * 65536 });
});

Deno.test("sendDirect() returns the answer a server gives before reading the body", async () => {
  await using server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => Response.json({ detail: "Invalid API key" }, { status: 401 }),
  );
  const counter = { pulled: 0 };
  const response = await sendStreamed({
    url: new URL(`http://127.0.0.1:${server.addr.port}/up/`),
    method: "POST",
    headers: {},
    contentLength: 400 * 1024 * 1024,
    body: chunks(400, 1024 * 1024, counter),
    idleTimeoutMs: 5000,
  });
  assert.deepEqual(response.status, 401);
  assert.deepEqual(JSON.parse(response.text), { detail: "Invalid API key" });
  assert.ok(counter.pulled < 400, `pulled ${counter.pulled} of 400 chunks`);
});

Deno.test("sendDirect() cuts the request short when the body fails, so the server never sees it whole", async () => {
  let serverSaw: string | null = null;
  await using server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      try {
        await req.arrayBuffer();
        serverSaw = "complete";
      } catch {
        serverSaw = "truncated";
      }
      return new Response("ok");
    },
  );
  async function* failing() {
    yield new Uint8Array(1000);
    throw new RangeError("the file changed");
  }
  await assert.rejects(
    () =>
      sendStreamed({
        url: new URL(`http://127.0.0.1:${server.addr.port}/up/`),
        method: "POST",
        headers: {},
        contentLength: 5000,
        body: failing(),
        idleTimeoutMs: 5000,
      }),
    RangeError,
  );
  for (let i = 0; i < 100 && serverSaw === null; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(serverSaw, "truncated");
});

/** A raw server that reads the request head and writes `reply` bytes (or nothing). */
function rawServer(reply: string | null) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      (async () => {
        const buffer = new Uint8Array(65536);
        let text = "";
        while (!text.includes("\r\n\r\n")) {
          const n = await conn.read(buffer).catch(() => null);
          if (n === null) return;
          text += new TextDecoder().decode(buffer.subarray(0, n));
        }
        if (reply !== null) {
          await conn.write(new TextEncoder().encode(reply)).catch(() => {});
          conn.close();
        }
      })();
    }
  })().catch(() => {});
  const { port } = listener.addr as Deno.NetAddr;
  return {
    port,
    close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    },
  };
}

Deno.test("sendDirect() reads a chunked answer after a 100 Continue", async () => {
  const server = rawServer(
    "HTTP/1.1 100 Continue\r\n\r\n" +
      "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n" +
      '5\r\n{"id"\r\nB;ext=1\r\n:"r-1","n":\r\n1\r\n2\r\n1\r\n}\r\n0\r\n\r\n',
  );
  try {
    const response = await sendStreamed({
      url: new URL(`http://127.0.0.1:${server.port}/up/`),
      method: "POST",
      headers: {},
      contentLength: 0,
      body: chunks(0, 0),
      idleTimeoutMs: 5000,
    });
    assert.deepEqual(response.status, 201);
    assert.deepEqual(JSON.parse(response.text), { id: "r-1", n: 2 });
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() reads a head and a body larger than its first read buffer intact", async () => {
  // The connection reads into one buffer it reuses, small at first and doubled while reads fill
  // it: a head over it must grow it, and every piece of the body be copied before the next read.
  const padding = Array.from({ length: 100 }, (_, i) => `X-Pad-${i}: ${"p".repeat(90)}\r\n`);
  const body = Array.from({ length: 30_000 }, (_, i) => String(i % 10)).join("").repeat(10);
  const server = rawServer(
    `HTTP/1.1 200 OK\r\n${padding.join("")}Content-Length: ${body.length}\r\n\r\n${body}`,
  );
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/big`),
      method: "GET",
      headers: {},
      idleTimeoutMs: 5000,
    });
    assert.deepEqual(response.status, 200);
    assert.deepEqual(response.headers.get("x-pad-99"), "p".repeat(90));
    assert.deepEqual(await response.text(), body);
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() gives up when the server stays silent past the idle timeout", async () => {
  const server = rawServer(null);
  try {
    const started = performance.now();
    await assert.rejects(
      () =>
        sendStreamed({
          url: new URL(`http://127.0.0.1:${server.port}/up/`),
          method: "POST",
          headers: {},
          contentLength: 3,
          body: chunks(1, 3),
          idleTimeoutMs: 200,
        }),
      (error: Error) => error instanceof TransportError && /200 ms/.test(error.message),
    );
    const took = performance.now() - started;
    assert.ok(took >= 180 && took < 3000, `took ${took} ms`);
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() refuses a header value that would inject a line", async () => {
  await assert.rejects(
    () =>
      sendStreamed({
        url: new URL("http://127.0.0.1:9/up/"),
        method: "POST",
        headers: { "X-Api-Key": "key\r\nX-Admin: 1" },
        contentLength: 0,
        body: chunks(0, 0),
        idleTimeoutMs: 200,
      }),
    TypeError,
  );
});

Deno.test("sendDirect() reports a refused connection as a TransportError", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  await assert.rejects(
    () =>
      sendStreamed({
        url: new URL(`http://127.0.0.1:${port}/up/`),
        method: "POST",
        headers: {},
        contentLength: 0,
        body: chunks(0, 0),
        idleTimeoutMs: 1000,
      }),
    TransportError,
  );
});

Deno.test({
  name: "sendDirect() speaks HTTP/1.1 over TLS to an https URL",
  ignore: (() => {
    try {
      return !new Deno.Command("openssl", { args: ["version"], stdout: "null" }).outputSync()
        .success;
    } catch {
      return true;
    }
  })(),
  async fn() {
    await using dir = await tempDir();
    const made = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        `${dir.path}/key.pem`,
        "-out",
        `${dir.path}/cert.pem`,
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    assert.ok(made.success);
    const cert = await Deno.readTextFile(`${dir.path}/cert.pem`);
    const key = await Deno.readTextFile(`${dir.path}/key.pem`);
    await using server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert, key, onListen() {} },
      async (req) =>
        new Response(
          `${(await req.arrayBuffer()).byteLength} ${req.headers.get("content-length")}`,
        ),
    );
    const response = await sendStreamed({
      url: new URL(`https://localhost:${server.addr.port}/up/`),
      method: "POST",
      headers: {},
      contentLength: 3 * 1000,
      body: chunks(3, 1000),
      idleTimeoutMs: 5000,
      caCerts: [cert],
    });
    assert.deepEqual([response.status, response.text], [200, "3000 3000"]);
  },
});

/** A raw server that keeps each request's head and answers with `reply(head)`, streamed. */
function scriptedServer(reply: (head: string) => AsyncIterable<string> | string) {
  const heads: string[] = [];
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      (async () => {
        const buffer = new Uint8Array(65536);
        let text = "";
        while (!text.includes("\r\n\r\n")) {
          const n = await conn.read(buffer).catch(() => null);
          if (n === null) return;
          text += new TextDecoder().decode(buffer.subarray(0, n));
        }
        const head = text.slice(0, text.indexOf("\r\n\r\n"));
        heads.push(head);
        const answer = reply(head);
        try {
          if (typeof answer === "string") await conn.write(new TextEncoder().encode(answer));
          else for await (const part of answer) await conn.write(new TextEncoder().encode(part));
        } catch { /* the client went away */ }
        try {
          conn.close();
        } catch { /* closed */ }
      })();
    }
  })().catch(() => {});
  const { port } = listener.addr as Deno.NetAddr;
  return {
    port,
    heads,
    close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
    },
  };
}

Deno.test("sendDirect() writes an origin-form target with Host, Content-Length and Connection: close", async () => {
  const server = scriptedServer(() => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/simulate/api/x/?a=1`),
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: new TextEncoder().encode('{"n":1}'),
    });
    assert.deepEqual([response.status, response.statusText, await response.text()], [
      200,
      "OK",
      "ok",
    ]);
    assert.deepEqual(server.heads[0].split("\r\n"), [
      "POST /simulate/api/x/?a=1 HTTP/1.1",
      `Host: 127.0.0.1:${server.port}`,
      "Content-Type: application/json",
      "Content-Length: 7",
      "Connection: close",
    ]);
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() streams a chunked answer piece by piece, as it arrives", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const server = scriptedServer(() =>
    (async function* () {
      yield "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
      yield "7\r\ndata: 1\r\n";
      await gate;
      yield "7\r\ndata: 2\r\n0\r\n\r\n";
    })()
  );
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/v1/chat/completions`),
      method: "POST",
      headers: {},
      body: new Uint8Array(0),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    assert.deepEqual(new TextDecoder().decode(first.value), "data: 1");
    release();
    const rest: string[] = [];
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      rest.push(new TextDecoder().decode(next.value));
    }
    assert.deepEqual(rest.join(""), "data: 2");
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() reads a body up to the close when the answer has no length", async () => {
  const server = scriptedServer(() => "HTTP/1.0 404 Not Found\r\n\r\nno such route");
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/x`),
      method: "GET",
      headers: {},
    });
    assert.deepEqual([response.status, await response.text()], [404, "no such route"]);
    assert.ok(!server.heads[0].includes("Content-Length"), "a GET without a body has no length");
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() fails a body the server cuts short", async () => {
  const server = scriptedServer(() => "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/x`),
      method: "POST",
      headers: {},
    });
    await assert.rejects(() => response.text(), /closed the connection mid-body/);
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() gives the abort reason when its signal stops a pending answer", async () => {
  const server = rawServer(null);
  try {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stopped by SIGINT")), 50);
    await assert.rejects(
      () =>
        sendDirect({
          url: new URL(`http://127.0.0.1:${server.port}/x`),
          method: "POST",
          headers: {},
          signal: controller.signal,
        }),
      /stopped by SIGINT/,
    );
  } finally {
    server.close();
  }
});

Deno.test("sendDirect() has no body for a 204", async () => {
  const server = scriptedServer(() => "HTTP/1.1 204 No Content\r\n\r\n");
  try {
    const response = await sendDirect({
      url: new URL(`http://127.0.0.1:${server.port}/x`),
      method: "PATCH",
      headers: {},
      body: new Uint8Array(2),
    });
    assert.deepEqual([response.status, response.body, await response.text()], [204, null, ""]);
  } finally {
    server.close();
  }
});
