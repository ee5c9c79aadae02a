// withRetry(): what is retried, how long it waits, and when it gives up — for any caller.
import assert from "node:assert/strict";
import fc from "fast-check";
import { backoffMs, isRetriableStatus, type RetryPolicy, withRetry } from "../../lib/net/retry.ts";

const POLICY: RetryPolicy = {
  attempts: 4,
  baseDelayMs: 100,
  maxDelayMs: 250,
  maxRetryAfterMs: 5000,
};

class Passing extends Error {
  constructor(readonly waitMs: number | null = null) {
    super("busy");
  }
}

function failing(errors: Error[]) {
  const attempts: number[] = [];
  return {
    attempts,
    fn: (attempt: number) => {
      attempts.push(attempt);
      const error = errors[attempts.length - 1];
      return error ? Promise.reject(error) : Promise.resolve("done");
    },
  };
}

const options = (waits: number[] = []) => ({
  isRetriable: (error: unknown) => error instanceof Passing,
  retryAfterMs: (error: unknown) => (error as Passing).waitMs,
  sleep: (ms: number) => (waits.push(ms), Promise.resolve()),
  random: () => 0.5,
});

Deno.test("isRetriableStatus() is true for 408, 429 and 5xx only", () => {
  const retried = [...Array(600).keys()].filter(isRetriableStatus);
  assert.deepEqual(retried, [408, 429, ...Array.from({ length: 100 }, (_, i) => 500 + i)]);
});

Deno.test("backoffMs() draws the full jitter up to a doubling, capped ceiling", () => {
  assert.deepEqual([0, 1, 2, 3].map((n) => backoffMs(POLICY, n, () => 0.999999)), [
    99,
    199,
    249,
    249,
  ]);
  assert.deepEqual(backoffMs(POLICY, 5, () => 0), 0);
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 60 }),
    fc.double({ min: 0, max: 0.9999999, noNaN: true }),
    (retry, random) => {
      const wait = backoffMs(POLICY, retry, () => random);
      return wait >= 0 && wait < Math.min(POLICY.maxDelayMs, POLICY.baseDelayMs * 2 ** retry);
    },
  ));
});

Deno.test("withRetry() retries what isRetriable accepts and returns the first success", async () => {
  const call = failing([new Passing(), new Passing()]);
  const waits: number[] = [];
  assert.deepEqual(await withRetry(call.fn, POLICY, options(waits)), "done");
  assert.deepEqual(call.attempts, [1, 2, 3]);
  assert.deepEqual(waits, [50, 100]);
});

Deno.test("withRetry() throws at once what isRetriable refuses", async () => {
  const refused = new TypeError("bug");
  const call = failing([refused]);
  await assert.rejects(() => withRetry(call.fn, POLICY, options()), refused);
  assert.deepEqual(call.attempts, [1]);
});

Deno.test("withRetry() waits what Retry-After asks", async () => {
  const call = failing([new Passing(1200)]);
  const waits: number[] = [];
  await withRetry(call.fn, POLICY, options(waits));
  assert.deepEqual(waits, [1200]);
});

Deno.test("withRetry() gives up after the last attempt, with the last error", async () => {
  const errors = [new Passing(), new Passing(), new Passing(), new Passing(), new Passing()];
  const call = failing(errors);
  await assert.rejects(() => withRetry(call.fn, POLICY, options()), errors[3]);
  assert.deepEqual(call.attempts, [1, 2, 3, 4]);
});

Deno.test("withRetry() does not wait for a Retry-After beyond its limit, and says so if asked", async () => {
  const error = new Passing(60_000);
  const call = failing([error]);
  await assert.rejects(() => withRetry(call.fn, POLICY, options()), error);
  assert.deepEqual(call.attempts, [1]);
  const again = failing([new Passing(60_000)]);
  await assert.rejects(
    () =>
      withRetry(again.fn, POLICY, {
        ...options(),
        tooLongToWait: (_error, waitMs) => new RangeError(`asked for ${waitMs} ms`),
      }),
    /asked for 60000 ms/,
  );
});

Deno.test("withRetry() stops waiting when its signal aborts, with the signal's reason", async () => {
  const call = failing([new Passing(4000)]);
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("stopped")), 50);
  const started = performance.now();
  await assert.rejects(
    () =>
      withRetry(call.fn, POLICY, {
        isRetriable: () => true,
        retryAfterMs: (error) => (error as Passing).waitMs,
        signal: controller.signal,
      }),
    /stopped/,
  );
  assert.ok(performance.now() - started < 2000);
  assert.deepEqual(call.attempts, [1]);
});

Deno.test("withRetry() refuses a policy without a positive number of attempts", async () => {
  await assert.rejects(
    () => withRetry(() => Promise.resolve(1), { ...POLICY, attempts: 0 }, options()),
    /'attempts' must be a positive integer: current value is 0/,
  );
});
