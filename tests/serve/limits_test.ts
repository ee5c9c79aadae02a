// The limits that make `reins serve` safe to leave running, each against the real server on a
// free port: body caps (declared or chunked), JSON nesting, slow clients among normal ones.
// (At most N turns at once is in a2a_errors_test.ts; fuzzed envelopes in fuzz_test.ts.)
import assert from "node:assert/strict";
import type { ConnectionReport } from "../../lib/serve/http/server.ts";
import { commandAgent, FIXTURES, startTestServer, TOKEN } from "./_server.ts";
import { parseResponses, writeAll } from "./_raw.ts";

const encoder = new TextEncoder();
const CAP = 1024 * 1024;
const SLACK = 64 * 1024;

function head(extra: string): string {
  return `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\n` +
    `content-type: application/json\r\na2a-version: 1.0\r\n${extra}\r\n`;
}

/** Sends `head`, then body bytes for as long as the server takes them; returns what it said. */
async function blast(port: number, requestHead: string, chunked: boolean) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await writeAll(conn, encoder.encode(requestHead));
  let reply = "";
  const reading = (async () => {
    const buffer = new Uint8Array(4096);
    try {
      while (true) {
        const n = await conn.read(buffer);
        if (n === null) break;
        reply += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } catch { /* reset after the answer */ }
  })();
  const piece = chunked
    ? encoder.encode(`4000\r\n${"[".repeat(0x4000)}\r\n`)
    : new Uint8Array(0x4000).fill(0x20);
  let sent = 0;
  try {
    // Far more than the cap: the server must answer long before this is all sent.
    while (sent < 64 * CAP) {
      await writeAll(conn, piece);
      sent += piece.length;
    }
  } catch { /* the server closed its side */ }
  await reading;
  try {
    conn.close();
  } catch { /* closed */ }
  return { reply, sent };
}

function reportsOf(): {
  reports: ConnectionReport[];
  onConnectionClosed(r: ConnectionReport): void;
} {
  const reports: ConnectionReport[] = [];
  return { reports, onConnectionClosed: (report) => reports.push(report) };
}

Deno.test("a body declared larger than 1 MiB is answered 413 without reading it", async () => {
  const seen = reportsOf();
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}talker.sh`),
    server: { onConnectionClosed: seen.onConnectionClosed },
  });
  const requestHead = head(`content-length: ${64 * CAP}\r\n`);
  const { reply } = await blast(t.server.addr.port, requestHead, false);
  assert.equal(parseResponses(reply)[0]?.status, 413, reply);
  assert.match(reply, /larger than the 1048576 bytes/);
  await waitFor(() => seen.reports.length === 1);
  assert.ok(
    seen.reports[0].bytesRead <= requestHead.length + CAP + SLACK,
    `read ${seen.reports[0].bytesRead} bytes`,
  );
  // The server is there for the next request.
  assert.equal((await t.rpc("ListTasks")).status, 200);
});

Deno.test("a chunked body with no length is answered 413 once past the cap, reading at most cap + 64 KiB", async () => {
  const seen = reportsOf();
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}talker.sh`),
    server: { onConnectionClosed: seen.onConnectionClosed },
  });
  const requestHead = head("transfer-encoding: chunked\r\n");
  const { reply, sent } = await blast(t.server.addr.port, requestHead, true);
  assert.equal(parseResponses(reply)[0]?.status, 413, reply);
  await waitFor(() => seen.reports.length === 1);
  const { bytesRead } = seen.reports[0];
  assert.ok(bytesRead > CAP, `it read the body up to the cap (${bytesRead})`);
  assert.ok(bytesRead <= requestHead.length + CAP + SLACK, `read ${bytesRead} of ${sent} sent`);
  assert.equal((await t.rpc("ListTasks")).status, 200);
});

Deno.test("JSON nested deeper than the limit, or a megabyte of '[', is a JSON-RPC error at once", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const deep = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","metadata":${
    "[".repeat(65)
  }${"]".repeat(65)}}}`;
  const brackets = "[".repeat(1_000_000);
  for (const body of [deep, brackets]) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: t.server.addr.port });
    await writeAll(
      conn,
      encoder.encode(
        head(`content-length: ${body.length}\r\nconnection: close\r\n`) + body,
      ),
    );
    // Timed from the last byte sent: how long the server takes to refuse what it has.
    const sentAt = performance.now();
    let reply = "";
    const buffer = new Uint8Array(4096);
    let n: number | null;
    while ((n = await conn.read(buffer)) !== null) {
      reply += new TextDecoder().decode(buffer.subarray(0, n));
    }
    const tookMs = performance.now() - sentAt;
    conn.close();
    const [response] = parseResponses(reply);
    assert.equal(response.status, 200);
    const answer = JSON.parse(response.body);
    assert.equal(answer.error.code, -32600);
    assert.match(answer.error.message, /nested deeper than 64 levels/);
    assert.ok(tookMs < 100, `answered in ${tookMs.toFixed(1)} ms`);
  }
  assert.equal((await t.rpc("ListTasks")).status, 200, "the process stays up");
});

Deno.test("with 500 slow clients open, a normal request is answered in under a second; the slow ones time out", async () => {
  const seen = reportsOf();
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}talker.sh`),
    server: {
      limits: { headTimeoutMs: 2_000, bodyTimeoutMs: 2_000 },
      onConnectionClosed: seen.onConnectionClosed,
    },
  });
  const port = t.server.addr.port;
  const slow: Deno.Conn[] = [];
  for (let i = 0; i < 500; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    // Half trickle their head, half send a head and trickle the body.
    await writeAll(
      conn,
      encoder.encode(i % 2 === 0 ? "POST / HT" : head("content-length: 1000\r\n")),
    );
    slow.push(conn);
  }
  let trickling = true;
  const trickle = (async () => {
    while (trickling) {
      for (const conn of slow) conn.write(encoder.encode("x")).catch(() => {});
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  try {
    const worst = await (async () => {
      let worst = 0;
      for (let i = 0; i < 10; i++) {
        const start = performance.now();
        const { status } = await t.rpc("ListTasks");
        worst = Math.max(worst, performance.now() - start);
        assert.equal(status, 200);
      }
      return worst;
    })();
    assert.ok(worst < 1000, `the slowest normal request took ${worst.toFixed(0)} ms`);
    await waitFor(() => seen.reports.filter((r) => /timeout/.test(r.reason)).length >= 500, 10_000);
    const reasons = new Set(seen.reports.map((r) => r.reason));
    assert.ok(reasons.has("head timeout") && reasons.has("body timeout"), [...reasons].join());
  } finally {
    trickling = false;
    await trickle;
    for (const conn of slow) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
  }
});

async function waitFor(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("a subscriber that stops reading is dropped; the task and the other streams go on", async () => {
  // 20,000 chunks of 1 KiB: more than the socket buffers of a reader that reads nothing hold.
  const lines = 20_000;
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}flood_on_go.sh ${lines} 1024`),
    server: { limits: { writeTimeoutMs: 2_000 } },
  });
  const client = await t.client();
  const stream = client.sendMessageStream(
    (await import("@a2a-js/sdk")).SendMessageRequest.fromJSON({
      message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "flood" }] },
    }),
  );
  const first = await stream.next();
  const taskId = (first.value!.payload!.value as { id: string }).id;
  // A subscriber that asks for the stream and never reads a byte of it.
  const stalled = await Deno.connect({ hostname: "127.0.0.1", port: t.server.addr.port });
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 9,
    method: "SubscribeToTask",
    params: { id: taskId },
  });
  await writeAll(stalled, encoder.encode(head(`content-length: ${body.length}\r\n`) + body));
  await waitFor(() => {
    try {
      return Deno.statSync(`${t.work}/ready`).isFile;
    } catch {
      return false;
    }
  });
  await Deno.writeTextFile(`${t.work}/go`, "");
  let text = "";
  let last = "";
  for await (const item of stream) {
    const payload = item.payload!;
    if (payload.$case === "artifactUpdate") {
      for (const part of payload.value.artifact!.parts) {
        if (part.content?.$case === "text") text += part.content.value;
      }
    }
    if (payload.$case === "statusUpdate") last = String(payload.value.status?.state);
  }
  assert.equal(last, "3", "TASK_STATE_COMPLETED");
  assert.equal(text.length, lines * 1025, "every chunk reached the reader");
  // The stalled one was let go rather than buffered without end.
  await waitFor(() => t.server.http.connectionCount <= 1, 20_000);
  stalled.close();
});
