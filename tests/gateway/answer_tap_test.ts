// An answer recorded on the gateway's thread (lib/gateway/answer_tap.ts): the stream is asked to
// wait when the writing falls behind, and never otherwise.
import assert from "node:assert/strict";
import { newId } from "../../lib/core/ids.ts";
import { AnswerTap, WRITE_AHEAD_BYTES } from "../../lib/gateway/answer_tap.ts";
import { RunBodies, WRITE_AFTER_MS, WRITE_BATCH_BYTES } from "../../lib/gateway/bodies.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

Deno.test("an answer's recording asks the stream to wait once its writing is 4 MiB behind, and is whole after", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reins-tap-" });
  try {
    const root = new DataRoot(dir);
    const runId = newId();
    root.ensureDir(root.layout.run(runId));
    const bodies = new RunBodies(root, runId);
    const answer = bodies.answer("call-1");
    const tap = new AnswerTap({
      wire: "anthropic.messages",
      format: "none",
      jsonLimit: 0,
      answer,
      text: () => {},
    });
    // Pieces handed over with no wait between them: the disk cannot keep up, the tap says so.
    const piece = new Uint8Array(256 * 1024).fill(0x61);
    // [bytes handed over when it asked, bytes still not on their way to the disk after the wait]
    const waits: [number, number][] = [];
    let handed = 0;
    for (let i = 0; i < 40; i++) {
      const behind = tap.piece(piece);
      handed += piece.length;
      if (behind !== null) {
        await behind;
        waits.push([handed, answer.pendingBytes]);
      }
    }
    // Once as the answer passes 256 KiB (node:crypto loaded, to hash it piece by piece), then only
    // when the writing is WRITE_AHEAD_BYTES behind, each wait lasting until it caught up.
    const [first, ...rest] = waits;
    assert.equal(first[0], 2 * piece.length, JSON.stringify(waits));
    assert.ok(rest.length > 0, `the stream never waited for the disk: ${JSON.stringify(waits)}`);
    for (const [at, pending] of rest) {
      assert.ok(at > WRITE_AHEAD_BYTES, JSON.stringify(waits));
      assert.equal(pending, 0, JSON.stringify(waits));
    }
    const recorded = await tap.finish();
    const body = await answer.finish(recorded);
    assert.equal(body!.bytes, 40 * piece.length);
    const kept = await Deno.readFile(root.layout.wireBody(runId, body!.sha256));
    assert.equal(kept.length, 40 * piece.length);
    assert.ok(kept.every((byte) => byte === 0x61));
    await bodies.flushed();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an answer's partial file holds each piece once 100 ms have passed after it, or once 1 MiB is gathered (what a crash can lose mid-stream)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reins-tap-" });
  try {
    const root = new DataRoot(dir);
    const runId = newId();
    root.ensureDir(root.layout.run(runId));
    const bodies = new RunBodies(root, runId);
    const answer = bodies.answer("call-1");
    const size = async () => (await Deno.stat(answer.path)).size;
    // A slow stream's piece: the file is there at once, the piece in it within WRITE_AFTER_MS.
    answer.write(new TextEncoder().encode("data: a slow piece\n\n"));
    assert.equal(await size(), 0);
    await new Promise((resolve) => setTimeout(resolve, WRITE_AFTER_MS * 3));
    assert.equal(await size(), 20);
    // A fast stream's pieces: written as one once WRITE_BATCH_BYTES are gathered, not before.
    const piece = new Uint8Array(64 * 1024).fill(0x62);
    for (let i = 0; i < WRITE_BATCH_BYTES / piece.length - 1; i++) answer.write(piece);
    assert.equal(answer.pendingBytes, WRITE_BATCH_BYTES - piece.length);
    answer.write(piece);
    await answer.written();
    assert.equal(await size(), 20 + WRITE_BATCH_BYTES);
    assert.equal(answer.pendingBytes, 0);
    const recorded = { sha256: null, bytes: 20 + WRITE_BATCH_BYTES, facts: {} as never };
    await assert.rejects(answer.finish(recorded));
    await bodies.flushed();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
