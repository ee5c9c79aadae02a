import assert from "node:assert/strict";
import { INTERVAL_MS, MAX_UNITS, TextDeltas } from "../../../lib/drivers/loop/text_deltas.ts";

Deno.test("TextDeltas coalesces a fast stream into a few events that add up to its text", () => {
  const emitted: string[] = [];
  const deltas = new TextDeltas((text) => emitted.push(text));
  const pieces = Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(97 + (i % 26)));
  for (const piece of pieces) deltas.add(piece);
  deltas.finish();
  assert.equal(emitted.join(""), pieces.join(""));
  // The first piece at once, then one event per MAX_UNITS, then what was left at the end.
  assert.equal(emitted.length, 1 + Math.floor((pieces.length - 1) / MAX_UNITS) + 1);
  assert.equal(emitted[0], "a");
});

Deno.test("TextDeltas emits what waits once INTERVAL_MS has passed, without waiting for the end", async () => {
  const emitted: string[] = [];
  const deltas = new TextDeltas((text) => emitted.push(text));
  deltas.add("Hel");
  deltas.add("lo");
  assert.deepEqual(emitted, ["Hel"]);
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS + 50));
  assert.deepEqual(emitted, ["Hel", "lo"]);
  deltas.add(", world");
  deltas.finish();
  deltas.add("after the end");
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS + 50));
  assert.deepEqual(emitted, ["Hel", "lo", ", world"]);
});
