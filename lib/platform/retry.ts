// Retrying a platform call that failed for a reason that may pass: capped exponential backoff
// with full jitter (a random wait between zero and the cap, so many reporters that failed
// together do not come back together), and the server's Retry-After when it gives one.
import { PlatformError } from "../core/errors.ts";

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** The backoff cap before the first retry; it doubles each time up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the report stays pending instead. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
};

/** The wait before retry number `retry` (0 for the first): uniform in [0, min(cap, base·2^n)]. */
export function backoffMs(policy: RetryPolicy, retry: number, random = Math.random): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * cap);
}

export interface RetryHooks {
  /** Called before each wait, with the error that caused it. */
  onRetry?: (error: PlatformError, waitMs: number, retry: number) => void;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

function retryAfterOf(error: unknown): number | null {
  const value = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof value === "number" ? value : null;
}

/**
 * Calls `fn` until it succeeds, throws something that is not a transient PlatformError, or
 * has been tried `policy.attempts` times; then the last error is thrown.
 */
export async function withRetry<T>(
  fn: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY,
  hooks: RetryHooks = {},
): Promise<T> {
  const sleep = hooks.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof PlatformError) || !error.transient || attempt >= policy.attempts) {
        throw error;
      }
      const asked = retryAfterOf(error);
      if (asked !== null && asked > policy.maxRetryAfterMs) throw error;
      const waitMs = asked ?? backoffMs(policy, attempt - 1, hooks.random);
      hooks.onRetry?.(error, waitMs, attempt);
      await sleep(waitMs);
    }
  }
}
