// Run by held_test.ts in a process of its own (`--v8-flags=--expose-gc`): how much of the V8 heap
// what the gateway holds between an answer's pieces keeps alive, per call. CALLS calls in flight
// at once each get one long piece (of text for message.delta; of SSE bytes for an answer's tap)
// and are left waiting for the next: the heap is measured after a full collection, before and
// after, and printed as one JSON line of bytes per call.
//   deno run --allow-all --v8-flags=--expose-gc _held_probe.ts
import { BudgetLedger } from "../../lib/core/budget.ts";
import { newId } from "../../lib/core/ids.ts";
import { rememberSecrets } from "../../lib/core/redact.ts";
import { NO_PROXY_SETTINGS } from "../../lib/net/route.ts";
import { bindTurn } from "../../lib/gateway/mod.ts";
import { AnswerTap } from "../../lib/gateway/answer_tap.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const CALLS = 48;
/** A piece's length: a whole number of 16 Ki-character events and half of one more. */
const PIECE_CHARS = 64 * 16 * 1024 + 8 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run me with --v8-flags=--expose-gc");

function heapAfterCollection(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

/** A text of `length` characters made anew (one string of its own, not shared with another). */
function freshText(length: number, seed: number): string {
  const word = `word${seed} `;
  return word.repeat(Math.ceil(length / word.length)).slice(0, length).split("").join("");
}

// A key is known, as in every real run: the end that may begin it is looked for and held.
const KEY = "sentinel0Zq9xY7wV5uT3sR1pO8nM6lK4jH2g";
rememberSecrets(KEY);

const dir = await Deno.makeTempDir({ prefix: "reins-held-" });
const root = new DataRoot(dir);
const runId = newId();
root.ensureDir(root.layout.run(runId));
let deltas = 0;
const binding = await bindTurn({
  root,
  runId,
  routes: { anthropic: { upstream: "http://127.0.0.1:9" } },
  emit: () => void deltas++,
  ledger: new BudgetLedger([]),
  priceOf: () => null,
  proxy: NO_PROXY_SETTINGS,
});

// message.delta: each call's long piece is recorded as events of 16 Ki characters, the rest of
// it (8 Ki characters, ending in the key's beginning) kept for the next.
const before = heapAfterCollection();
for (let i = 0; i < CALLS; i++) {
  binding.delta(`call-${i}`, freshText(PIECE_CHARS - 6, i) + KEY.slice(0, 6));
}
const deltaHeld = (heapAfterCollection() - before) / CALLS;

// An SSE answer's tap: one piece of many text events, the last one cut in two.
const event = (text: string) =>
  `event: content_block_delta\ndata: ${
    JSON.stringify({
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text },
    })
  }\n\n`;
const encoder = new TextEncoder();
const taps: [AnswerTap, ReturnType<typeof binding.bodies.answer>][] = [];
const tapsBefore = heapAfterCollection();
for (let i = 0; i < CALLS; i++) {
  const events = event(`the quick brown fox ${i} jumps over the lazy dog. `).repeat(8000);
  const cut = event("the last one, cut");
  const answer = binding.bodies.answer(`tap-${i}`);
  const tap = new AnswerTap({
    wire: "anthropic.messages",
    format: "sse",
    jsonLimit: 0,
    answer,
    text: () => {},
  });
  const waiting = tap.piece(encoder.encode(events + cut.slice(0, cut.length >> 1)));
  if (waiting !== null) await waiting;
  taps.push([tap, answer]);
}
const sseHeld = (heapAfterCollection() - tapsBefore) / CALLS;

console.log(JSON.stringify({ deltaHeld, sseHeld, pieceChars: PIECE_CHARS, deltas }));
for (const [tap, answer] of taps) await answer.finish(await tap.finish());
for (let i = 0; i < CALLS; i++) binding.flushDelta(`call-${i}`);
await binding.close();
root.close();
await Deno.remove(dir, { recursive: true });
