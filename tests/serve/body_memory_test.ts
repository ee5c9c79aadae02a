// What a request body costs reins serve's memory (a real `reins serve`, its RSS read from /proc):
// a body sent as one-byte chunks, the most framing per byte HTTP/1.1 allows, must cost about its
// bytes, not an object per chunk.
import assert from "node:assert/strict";
import { parseResponses } from "./_raw.ts";
import { spawnReins, tempDir } from "../support/reins.ts";

const encoder = new TextEncoder();
const CONNECTIONS = 8;
// Chunks of "1\r\nX\r\n" (6 bytes on the wire each), short of the cap + 64 KiB the server reads
// of a chunked body, so that every body is still being read when the memory is looked at.
const CHUNKS = 170_000;
const RPC = '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}';

function rssKiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))![1]);
}

async function readAll(conn: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  const buffer = new Uint8Array(64 * 1024);
  while (true) {
    const got = await conn.read(buffer);
    if (got === null) return text;
    text += decoder.decode(buffer.subarray(0, got), { stream: true });
    if (parseResponses(text).length > 0) return text;
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

// regression: each one-byte chunk became an array of its own (parts.push(reader.take(size))):
// ~80 MB per connection, 741 MB for 8 at once
Deno.test({
  name: "a body of one-byte chunks costs reins serve about its bytes per connection, not 80 MB",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const child = spawnReins(
      ["serve", "--port", "0", "--driver", "command", "--exec", "true"],
      { home: dir.path },
    );
    const stderr = new Response(child.stderr).text();
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let out = "";
      while (!out.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`reins serve did not start: ${await stderr}`);
        out += value;
      }
      reader.releaseLock();
      const port = Number(/:(\d+)\//.exec(out)![1]);
      const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
      const head = encoder.encode(
        `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\n` +
          "content-type: application/json\r\na2a-version: 1.0\r\n" +
          "transfer-encoding: chunked\r\n\r\n",
      );
      // The JSON-RPC request, then blanks: one byte a chunk.
      const text = RPC + " ".repeat(CHUNKS - RPC.length);
      const chunks = encoder.encode([...text].map((c) => `1\r\n${c}\r\n`).join(""));
      await new Promise((r) => setTimeout(r, 300));
      const before = rssKiB(child.pid);
      const conns = await Promise.all(
        Array.from({ length: CONNECTIONS }, () => Deno.connect({ hostname: "127.0.0.1", port })),
      );
      try {
        for (const conn of conns) {
          await writeAll(conn, head);
          await writeAll(conn, chunks);
        }
        // Every byte sent is read before the last chunk comes: the server waits for more.
        await new Promise((r) => setTimeout(r, 1000));
        const grownKiB = rssKiB(child.pid) - before;
        const perConnectionMiB = grownKiB / 1024 / CONNECTIONS;
        assert.ok(
          perConnectionMiB < 8,
          `reins serve grew ${(grownKiB / 1024).toFixed(1)} MiB for ${CONNECTIONS} bodies of ` +
            `${CHUNKS} one-byte chunks (${perConnectionMiB.toFixed(1)} MiB each)`,
        );
        // And each body, once ended, is the request it spells.
        for (const conn of conns) {
          await writeAll(conn, encoder.encode("0\r\n\r\n"));
          const [answer] = parseResponses(await readAll(conn));
          assert.equal(answer.status, 200, answer.body);
          assert.deepEqual(JSON.parse(answer.body).result.tasks, []);
        }
      } finally {
        for (const conn of conns) conn.close();
      }
    } finally {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await stderr;
    }
  },
});
