// What the gateway holds of an answer between its pieces is bounded by a constant, not by the
// pieces' size: a message.delta's gathered text and an SSE answer's unread rest are kept as text
// of their own, never as a slice of the long piece they came in (which keeps the whole piece
// alive) nor as the pieces joined into a copy. Measured on V8's heap after a full collection, in
// a process of its own (_held_probe.ts): 48 calls in flight at once, each given one 1 MiB piece
// and left waiting for the next.
import assert from "node:assert/strict";

const PROBE = new URL("./_held_probe.ts", import.meta.url).pathname;

Deno.test("between an answer's pieces the gateway holds a bounded amount of each, not the piece (message.delta text, SSE rest)", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--no-prompt", "--v8-flags=--expose-gc", PROBE],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.ok(output.success, `the probe failed: ${stderr}`);
  const held: { deltaHeld: number; sseHeld: number; pieceChars: number; deltas: number } = JSON
    .parse(new TextDecoder().decode(output.stdout));
  // Each piece was recorded as events of 16 Ki characters, the rest gathered for the next.
  assert.equal(held.deltas, 48 * Math.floor(held.pieceChars / 16384));
  // A quarter of a piece is far above what a call holds (its rest of 8 Ki characters, the
  // reader's state) and far below the piece (1 MiB) that a slice of it keeps alive.
  const bound = held.pieceChars / 4;
  assert.ok(held.deltaHeld < bound, `message.delta gathering holds ${held.deltaHeld} bytes a call`);
  assert.ok(held.sseHeld < bound, `an SSE answer's tap holds ${held.sseHeld} bytes a call`);
});
