import assert from "node:assert/strict";
import fc from "fast-check";
import { retryAfterMs } from "../../lib/net/retry_after.ts";

Deno.test("retryAfterMs() reads retry-after-ms, seconds and HTTP dates", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const read = (headers: Record<string, string>) => retryAfterMs(new Headers(headers), now);
  assert.equal(read({}), null);
  assert.equal(read({ "retry-after-ms": "250" }), 250);
  assert.equal(read({ "retry-after-ms": "12.2" }), 13);
  assert.equal(read({ "retry-after": "3" }), 3_000);
  assert.equal(read({ "retry-after": " 3 " }), 3_000);
  assert.equal(read({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), 5_000);
  assert.equal(read({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }), 0);
  assert.equal(read({ "retry-after": "soon" }), null);
  assert.equal(read({ "retry-after": "-1" }), null);
  assert.equal(read({ "retry-after-ms": "100", "retry-after": "9" }), 100);
  assert.equal(read({ "retry-after-ms": "later", "retry-after": "9" }), 9_000);
});

Deno.test("retryAfterMs() turns any HTTP date into the wait until it, never a negative one", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1_000_000, max: 4_000_000_000 }),
    fc.integer({ min: -100_000, max: 100_000 }),
    (seconds, offset) => {
      const now = seconds * 1000;
      const at = new Date(now + offset * 1000).toUTCString();
      return retryAfterMs(new Headers({ "retry-after": at }), now) === Math.max(0, offset * 1000);
    },
  ));
});
