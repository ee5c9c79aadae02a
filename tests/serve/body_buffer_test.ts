// The buffers a request body is read through (lib/serve/http): the connection's read buffer and
// a chunked body's own, over a real loopback connection.
import assert from "node:assert/strict";
import { ConnReader } from "../../lib/serve/http/conn_reader.ts";
import { BODY_STEP, GrowingBody, readBody } from "../../lib/serve/http/body.ts";

const encoder = new TextEncoder();

/** A connected pair on loopback: what is written to `client` is read from `server`. */
async function socketPair(): Promise<{ client: Deno.Conn; server: Deno.Conn } & AsyncDisposable> {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const [client, server] = await Promise.all([
    Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port }),
    listener.accept(),
  ]);
  return {
    client,
    server,
    [Symbol.asyncDispose]: () => {
      client.close();
      server.close();
      return Promise.resolve();
    },
  };
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

// regression: a few bytes left over (a chunk split between two reads) made the next read grow
// the 4 KiB buffer to 68 KiB, which was dropped as soon as it was emptied: a body of one-byte
// chunks left a 68 KiB array for the collector every 64 KiB read, ~1.2 MB a connection
Deno.test("ConnReader keeps its small buffer while a body of one-byte chunks streams through it", async () => {
  await using pair = await socketPair();
  const wire = encoder.encode("1\r\nx\r\n".repeat(50_000));
  const writing = writeAll(pair.client, wire);
  const reader = new ConnReader(pair.server);
  const sizes = new Set<number>();
  let taken = 0;
  while (taken < wire.length) {
    assert.ok(await reader.fill(wire.length - taken));
    sizes.add(reader.buffered.buffer.byteLength);
    // Everything but a split chunk's first bytes is used, as the chunk parser leaves them.
    const use = Math.max(0, reader.length - (taken + reader.length < wire.length ? 3 : 0));
    reader.consume(use);
    taken += use;
  }
  await writing;
  assert.deepEqual([...sizes], [4 * 1024], "read through the one 4 KiB buffer");
});

// regression: the buffer doubled ahead of the body, 256 KiB for a 170 KB body
Deno.test("a chunked body's buffer grows to what the body holds, a step at a time, not by doubling", async () => {
  await using pair = await socketPair();
  const size = 170_000;
  const writing = writeAll(pair.client, new Uint8Array(size).fill(0x20));
  const reader = new ConnReader(pair.server);
  const body = new GrowingBody(1024 * 1024);
  let left = size;
  while (left > 0) {
    assert.ok(await reader.fill(left));
    left -= body.moveFrom(reader, left);
    assert.ok(body.capacity - (size - left) < BODY_STEP, `${body.capacity} for ${size - left}`);
  }
  await writing;
  assert.equal(body.capacity, Math.ceil(size / BODY_STEP) * BODY_STEP);
  assert.equal(body.bytes().length, size);
});

Deno.test("readBody() reads a body of one-byte chunks whole, each byte in its place", async () => {
  await using pair = await socketPair();
  const text = Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(97 + i % 26)).join(
    "",
  );
  const wire = encoder.encode([...text].map((c) => `1\r\n${c}\r\n`).join("") + "0\r\n\r\n");
  const writing = writeAll(pair.client, wire);
  const body = await readBody(new ConnReader(pair.server), { contentLength: null, chunked: true }, {
    maxBodyBytes: 1024 * 1024,
    slackBytes: 64 * 1024,
  });
  await writing;
  assert.equal(new TextDecoder().decode(body), text);
});
