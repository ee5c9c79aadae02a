// withRetry(): what is retried, how long it waits, and when it gives up.
import assert from "node:assert/strict";
import { PlatformError } from "../../lib/core/errors.ts";
import { PlatformRequestError } from "../../lib/platform/client.ts";
import { backoffMs, DEFAULT_RETRY, type RetryPolicy, withRetry } from "../../lib/platform/retry.ts";

const POLICY: RetryPolicy = {
  attempts: 4,
  baseDelayMs: 100,
  maxDelayMs: 250,
  maxRetryAfterMs: 5000,
};

function failing(errors: Error[]) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    fn: () => {
      const error = errors[calls++];
      return error ? Promise.reject(error) : Promise.resolve("done");
    },
  };
}

const transient = (retryAfter: number | null = null) =>
  new PlatformRequestError("POST /x/ failed (503): busy", {
    method: "POST",
    path: "/x/",
    status: 503,
    transient: true,
    retryAfterMs: retryAfter,
  });

Deno.test("backoffMs() draws the full jitter up to a doubling, capped ceiling", () => {
  assert.deepEqual([0, 1, 2, 3].map((n) => backoffMs(POLICY, n, () => 0.999999)), [
    99,
    199,
    249,
    249,
  ]);
  assert.deepEqual(backoffMs(POLICY, 5, () => 0), 0);
  assert.deepEqual(DEFAULT_RETRY.attempts, 5);
});

Deno.test("withRetry() retries transient errors and returns the first success", async () => {
  const call = failing([transient(), transient()]);
  const waits: number[] = [];
  const result = await withRetry(call.fn, POLICY, {
    sleep: (ms) => (waits.push(ms), Promise.resolve()),
    random: () => 0.5,
  });
  assert.deepEqual(result, "done");
  assert.deepEqual(call.calls, 3);
  assert.deepEqual(waits, [50, 100]);
});

Deno.test("withRetry() does not retry a refusal or an error that is not the platform's", async () => {
  for (const error of [new PlatformError("401", { status: 401 }), new TypeError("bug")]) {
    const call = failing([error]);
    await assert.rejects(
      () => withRetry(call.fn, POLICY, { sleep: () => Promise.resolve() }),
      error,
    );
    assert.deepEqual(call.calls, 1);
  }
});

Deno.test("withRetry() waits what Retry-After asks", async () => {
  const call = failing([transient(1200)]);
  const waits: number[] = [];
  await withRetry(call.fn, POLICY, { sleep: (ms) => (waits.push(ms), Promise.resolve()) });
  assert.deepEqual(waits, [1200]);
});

Deno.test("withRetry() gives up after the last attempt, with the last error", async () => {
  const errors = [transient(), transient(), transient(), transient(), transient()];
  const call = failing(errors);
  await assert.rejects(
    () => withRetry(call.fn, POLICY, { sleep: () => Promise.resolve() }),
    errors[3],
  );
  assert.deepEqual(call.calls, 4);
});

Deno.test("withRetry() does not wait for a Retry-After beyond its limit", async () => {
  const error = transient(60_000);
  const call = failing([error]);
  await assert.rejects(() => withRetry(call.fn, POLICY, { sleep: () => Promise.resolve() }), error);
  assert.deepEqual(call.calls, 1);
});
