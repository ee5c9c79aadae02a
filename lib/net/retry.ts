// Retrying an outbound call that failed for a reason that may pass, the same way for every peer
// (the platform, model endpoints): capped exponential backoff with full jitter — a random wait
// between zero and the cap, so many callers that failed together do not come back together —
// or the server's own Retry-After when it gives one. What counts as passing is the caller's
// `isRetriable`; the statuses worth another try are `isRetriableStatus`.
import { sleep as abortableSleep } from "../core/clock.ts";

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** The backoff cap before the first retry; it doubles each time up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the call gives up at once. */
  maxRetryAfterMs: number;
}

/** Whether a request that got `status` may succeed when sent again: 408, 429 and 5xx. */
export function isRetriableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** The wait before retry number `retry` (0 for the first): uniform in [0, min(cap, base·2^n)). */
export function backoffMs(policy: RetryPolicy, retry: number, random = Math.random): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * cap);
}

export interface RetryOptions {
  /** Whether this failure may pass. Anything else is thrown at once. */
  isRetriable(error: unknown): boolean;
  /** The wait the failure itself asked for (a Retry-After), in ms, or null. */
  retryAfterMs?(error: unknown): number | null;
  /**
   * What to throw when the wait asked for is longer than policy.maxRetryAfterMs (default: the
   * error itself), so the caller can say why it did not wait.
   */
  tooLongToWait?(error: unknown, waitMs: number): unknown;
  /** Stops the waits: the signal's reason is thrown. */
  signal?: AbortSignal;
  /** Told before each wait, with the failure that caused it and the retry's number (1 first). */
  onRetry?(error: unknown, waitMs: number, retry: number): void;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Calls `fn(attempt)` (1 first) until it succeeds, throws a failure that is not retriable, or has
 * been tried `policy.attempts` times; then its last failure is thrown.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: RetryOptions,
): Promise<T> {
  if (!Number.isInteger(policy.attempts) || policy.attempts < 1) {
    throw new RangeError(
      `Cannot retry as 'attempts' must be a positive integer: current value is ${policy.attempts}`,
    );
  }
  const sleep = options.sleep ?? abortableSleep;
  for (let attempt = 1;; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (options.signal?.aborted || !options.isRetriable(error) || attempt >= policy.attempts) {
        throw error;
      }
      const asked = options.retryAfterMs?.(error) ?? null;
      if (asked !== null && asked > policy.maxRetryAfterMs) {
        throw options.tooLongToWait ? options.tooLongToWait(error, asked) : error;
      }
      const waitMs = asked ?? backoffMs(policy, attempt - 1, options.random);
      options.onRetry?.(error, waitMs, attempt);
      await sleep(waitMs, options.signal);
    }
  }
}
