// How long a server asked us to wait before trying again: `Retry-After` as delay-seconds or an
// HTTP date (RFC 9110 §10.2.3), and OpenAI's `retry-after-ms`, which wins when both are given.

/** The wait the headers ask for, in ms from `nowMs`; null when they ask for none we can read. */
export function retryAfterMs(headers: Headers, nowMs = Date.now()): number | null {
  const ms = headers.get("retry-after-ms")?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const value = headers.get("retry-after")?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date names its day or month; Date.parse would read "-1" as a year.
  if (!/[A-Za-z]{3}/.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
