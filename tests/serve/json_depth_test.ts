// depthExceededAt(): the nesting of a JSON text, found without parsing it.
import assert from "node:assert/strict";
import fc from "fast-check";
import { depthExceededAt } from "../../lib/serve/json_depth.ts";

const encoder = new TextEncoder();

/** The nesting depth of a parsed value: the oracle. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === "object") {
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  }
  return 0;
}

Deno.test("depthExceededAt() agrees with the depth of the parsed value, brackets in strings not counted", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, max) => {
      const text = JSON.stringify(value);
      const at = depthExceededAt(encoder.encode(text), max);
      assert.equal(at >= 0, depthOf(value) > max, `${text} with max ${max}`);
      if (at >= 0) assert.ok("[{".includes(text[at]), `byte ${at} of ${text} is a bracket`);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("depthExceededAt() skips escaped quotes inside strings", () => {
  const text = JSON.stringify({ a: 'say "[[[[" and \\"{{{{' });
  assert.equal(depthExceededAt(encoder.encode(text), 1), -1);
  assert.equal(depthExceededAt(encoder.encode(`[${text}]`), 1), 1);
});

Deno.test("depthExceededAt() refuses a megabyte of '[' at the first bracket past the limit", () => {
  const bytes = new Uint8Array(1_000_000).fill(0x5b);
  const start = performance.now();
  assert.equal(depthExceededAt(bytes, 64), 64);
  // Not a timed assertion of speed: a guard that it stops at the limit instead of scanning on.
  assert.ok(performance.now() - start < 1000);
});
