// HttpServer: HTTP/1.1 framing as the A2A server relies on it, over real sockets with an echo
// handler (the limits are tested against the whole reins server in limits_test.ts).
import assert from "node:assert/strict";
import fc from "fast-check";
import { HttpServer } from "../../lib/serve/http/server.ts";
import { exchange, parseResponses, post } from "./_raw.ts";

function echoServer(limits = {}) {
  return HttpServer.listen({
    hostname: "127.0.0.1",
    port: 0,
    limits,
    handler: {
      head: (head) => head.path === "/refuse" ? { status: 403, body: "no" } : null,
      handle: (head, body) =>
        Promise.resolve({
          status: 200,
          headers: { "x-method": head.method, "x-path": head.target },
          body,
        }),
    },
  });
}

Deno.test("HttpServer answers two requests on one kept-alive connection, and pipelined ones", async () => {
  await using server = echoServer();
  const { text } = await exchange(
    server.addr.port,
    post("/a", "one") + post("/b", "two") +
      post("/c", "three", { connection: "close" }),
  );
  const responses = parseResponses(text);
  assert.deepEqual(responses.map((r) => [r.status, r.body, r.headers.get("x-path")]), [
    [200, "one", "/a"],
    [200, "two", "/b"],
    [200, "three", "/c"],
  ]);
  assert.equal(responses[2].headers.get("connection"), "close");
});

Deno.test("HttpServer decodes any chunking of a body to the same bytes", async () => {
  await using server = echoServer();
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.string({ minLength: 1, maxLength: 40 }), { minLength: 0, maxLength: 12 }),
      fc.boolean(),
      fc.boolean(),
      fc.constantFrom("", " ", "\t "),
      async (pieces, withExtension, upper, blank) => {
        const encoder = new TextEncoder();
        const chunks = pieces.map((piece) => {
          const hex = encoder.encode(piece).length.toString(16);
          const size = `${blank}${upper ? hex.toUpperCase() : hex}${blank}`;
          return `${size}${withExtension ? ";name=value" : ""}\r\n${piece}\r\n`;
        }).join("");
        const request = "POST /x HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n" +
          `connection: close\r\n\r\n${chunks}0\r\ntrailer: t\r\n\r\n`;
        const [response] = parseResponses((await exchange(server.addr.port, request)).text);
        assert.equal(response.status, 200);
        assert.equal(response.body, pieces.join(""));
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("HttpServer refuses ambiguous framing with 400 and closes", async () => {
  await using server = echoServer();
  const heads = [
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\nabc",
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd",
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: -1\r\n\r\n",
    "POST / HTTP/1.1\r\nhost: a\r\nx-folded: a\r\n  b\r\ncontent-length: 0\r\n\r\n",
    "POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
    "GET / HTTP/1.1\r\nhost: a\r\nbad header\r\n\r\n",
    "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ...["0x1", "1 2", "\x101", "+1", "123456789", "g", ""].map((size) =>
      `POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n${size}\r\nx\r\n0\r\n\r\n`
    ),
  ];
  for (const head of heads) {
    const { text, closed } = await exchange(server.addr.port, head);
    const [response] = parseResponses(text);
    assert.equal(response?.status, 400, `${JSON.stringify(head)} → ${text}`);
    assert.ok(closed);
  }
  const gzip = await exchange(
    server.addr.port,
    "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip\r\n\r\n",
  );
  assert.equal(parseResponses(gzip.text)[0].status, 501);
  const http2 = await exchange(server.addr.port, "GET / HTTP/2.0\r\nhost: a\r\n\r\n");
  assert.equal(parseResponses(http2.text)[0].status, 505);
});

Deno.test("HttpServer answers a head over its limit with 431", async () => {
  await using server = echoServer({ maxHeadBytes: 1024 });
  const { text, closed } = await exchange(
    server.addr.port,
    `GET / HTTP/1.1\r\nhost: a\r\nx-big: ${"b".repeat(4096)}\r\n\r\n`,
  );
  assert.equal(parseResponses(text)[0].status, 431);
  assert.ok(closed);
});

Deno.test("HttpServer sends 100 Continue before reading a body the client waits to send", async () => {
  await using server = echoServer();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  const encoder = new TextEncoder();
  await conn.write(encoder.encode(
    "POST /e HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n",
  ));
  const buffer = new Uint8Array(1024);
  const n = await conn.read(buffer);
  assert.equal(new TextDecoder().decode(buffer.subarray(0, n!)), "HTTP/1.1 100 Continue\r\n\r\n");
  await conn.write(encoder.encode("hello"));
  let text = "";
  let got: number | null;
  while ((got = await conn.read(buffer)) !== null) {
    text += new TextDecoder().decode(buffer.subarray(0, got));
  }
  conn.close();
  assert.equal(parseResponses(text)[0].body, "hello");
});

Deno.test("HttpServer closes after a refusal given on the head, without reading the body", async () => {
  await using server = echoServer();
  const { text, closed } = await exchange(server.addr.port, post("/refuse", "x".repeat(100)));
  const responses = parseResponses(text);
  assert.deepEqual(responses.map((r) => r.status), [403]);
  assert.equal(responses[0].headers.get("connection"), "close");
  assert.ok(closed);
});

// Not checked by connecting again: the freed port may already be another test's listener.
Deno.test("HttpServer.stopAccepting() closes idle connections and lets one under way finish", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const server = HttpServer.listen({
    hostname: "127.0.0.1",
    port: 0,
    handler: {
      head: () => null,
      handle: async () => {
        await held;
        return { status: 200, body: "finished" };
      },
    },
  });
  const idle = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  const busy = exchange(server.addr.port, post("/", "x"));
  while (server.connectionCount < 2) await new Promise((r) => setTimeout(r, 5));
  server.stopAccepting();
  assert.equal(await idle.read(new Uint8Array(16)), null, "the idle one is closed");
  idle.close();
  release();
  const [response] = parseResponses((await busy).text);
  assert.equal(response.body, "finished");
  assert.equal(response.headers.get("connection"), "close");
  await server.drained();
  assert.equal(server.connectionCount, 0);
});
