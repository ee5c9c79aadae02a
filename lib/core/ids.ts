// Identifiers: time-ordered run and session ids (uuid v7), and the check every id must pass
// before it becomes a path segment. It validates; it never rewrites a name into a safe one.
// uuid v7 is made here from Web Crypto rather than imported from npm: loading an npm module costs
// a command ~40 ms of CPU (`deno task bench startup`, "yaml"), and v7 is twenty lines (RFC 9562,
// section 5.7).
import { UsageError } from "./errors.ts";

let lastMs = 0;
let lastCounter = 0;

// Formatting by table and drawing random bytes 4 KiB at a time (one getRandomValues call per 256
// ids) make an id cost ~0.3 µs instead of ~3: the run store stamps one on every event it appends.
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const pool = new Uint8Array(4096);
let poolAt = pool.length;
const bytes = new Uint8Array(16);

/** A new uuid v7: sorts by creation time (and by creation order within this process). */
export function newId(nowMs: number = Date.now()): string {
  if (poolAt + 16 > pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  bytes.set(pool.subarray(poolAt, poolAt + 16));
  poolAt += 16;
  // 12 bits after the version are a counter (method 1 of RFC 9562 §6.2), so ids made in the
  // same millisecond by one process still sort in creation order.
  let ms = Math.max(nowMs, lastMs);
  let counter = ms === lastMs ? lastCounter + 1 : (bytes[6] & 0x07) << 8 | bytes[7];
  if (counter > 0xfff) {
    ms += 1;
    counter = 0;
  }
  lastMs = ms;
  lastCounter = counter;
  let rest = ms;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const h = HEX;
  const b = bytes;
  return h[b[0]] + h[b[1]] + h[b[2]] + h[b[3]] + "-" + h[b[4]] + h[b[5]] + "-" + h[b[6]] +
    h[b[7]] + "-" + h[b[8]] + h[b[9]] + "-" + h[b[10]] + h[b[11]] + h[b[12]] + h[b[13]] +
    h[b[14]] + h[b[15]];
}

/** The creation time a uuid v7 carries, in epoch milliseconds, or null for anything else. */
export function idTimeMs(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)) {
    return null;
  }
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

// Windows opens a device for these names whatever the case, and with any extension ("nul.txt"
// is NUL): a context named so would read or write the device, never a file.
const DEVICE_NAME = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\.|$)/i;

/** The Windows device name `value` opens ("CON" of "con.1"), or null when it names a file. */
export function deviceNameOf(value: string): string | null {
  return DEVICE_NAME.exec(value)?.[1] ?? null;
}

/**
 * Whether `value` may be used as one path segment under the data root. Beyond the pattern, a
 * trailing dot is refused (Windows drops it, so "a." and "a" would name the same file there), and
 * so are Windows's device names, with or without an extension.
 */
export function isSafeName(value: string): boolean {
  return SAFE_NAME.test(value) && !value.includes("..") && !value.endsWith(".") &&
    !DEVICE_NAME.test(value);
}

/**
 * Returns `value` when it may become one path segment, else throws a UsageError that quotes it.
 * `what` names the value for the message ("context id", "run id").
 */
export function safeName(value: string, what = "name"): string {
  if (isSafeName(value)) return value;
  const shown = JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  const why = value.length === 0
    ? "it is empty"
    : value.length > 128
    ? `it is ${value.length} characters long (at most 128)`
    : value.includes("..")
    ? "it contains '..'"
    : value.endsWith(".")
    ? "it ends with '.'"
    : DEVICE_NAME.test(value)
    ? `${JSON.stringify(DEVICE_NAME.exec(value)![1])} is a device name on Windows`
    : !/^[A-Za-z0-9]/.test(value)
    ? "it must start with a letter or digit"
    : "it may contain only letters, digits, '.', '_' and '-'";
  throw new UsageError(`Cannot use ${shown} as a ${what}: ${why}`, {
    hint: "use letters, digits, '.', '_' and '-' (1 to 128 characters, starting with a letter or " +
      "digit; not CON, PRN, AUX, NUL, COM1-9 or LPT1-9)",
  });
}
