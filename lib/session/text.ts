// Text for people in one-line forms: previews that say how long the original was, newlines as ⏎
// and other control characters as visible symbols (so a recording cannot move the cursor or
// change the terminal's colours), and numbers, sizes, costs and durations written out.
// It knows nothing of events; format.ts and stats.ts build on it.

const NEWLINE = "⏎";

// Control characters (C0, DEL and C1: Unicode's Cc, all of them single UTF-16 units). Spelled as
// a class of units without the `u` flag: the same set, tested twice as fast on the text of a long
// transcript (`deno task bench views`, "reins show"), where every line is tested.
// deno-lint-ignore no-control-regex -- control characters are what it looks for
const HAS_CONTROL = /[\x00-\x1f\x7f-\x9f]/;
/** The same, but the newline. */
// deno-lint-ignore no-control-regex -- control characters are what it looks for
export const CONTROL_BUT_NEWLINE = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

/**
 * `text` on one line: CRLF and LF become ⏎, a tab a space, every other C0 control character its
 * Unicode control picture (ESC → ␛, CR → ␍, DEL → ␡), and a C1 control its escape (`\x9b`): a
 * recording shown in a terminal must not be able to move the cursor or recolour it.
 */
export function oneLine(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  // Newlines alone (a text of lines, nearly always): one native replacement.
  if (!CONTROL_BUT_NEWLINE.test(text)) return text.replaceAll("\n", NEWLINE);
  // One pass that copies the runs between controls: no callback per match, no pass per kind.
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x20 && (code < 0x7f || code > 0x9f)) continue;
    out += text.slice(from, i);
    if (code === 0x0a) out += NEWLINE;
    else if (code === 0x0d && text.charCodeAt(i + 1) === 0x0a) {
      out += NEWLINE;
      i++;
    } else if (code === 0x09) out += " ";
    else if (code === 0x7f) out += "␡";
    else if (code < 0x20) out += String.fromCharCode(0x2400 + code);
    else out += `\\x${code.toString(16)}`;
    from = i + 1;
  }
  return out + text.slice(from);
}

/** The number of Unicode code points in `text` (an emoji counts once, as people count it). */
export function countChars(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A low surrogate after a high one completes a code point counted already.
    if (code >= 0xdc00 && code <= 0xdfff && i > 0) {
      const previous = text.charCodeAt(i - 1);
      if (previous >= 0xd800 && previous <= 0xdbff) continue;
    }
    count++;
  }
  return count;
}

/** The first `max` code points of `text`, never splitting a surrogate pair. */
function headChars(text: string, max: number): string {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const pairTail = code >= 0xdc00 && code <= 0xdfff && i > 0 &&
      text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff;
    if (pairTail) continue;
    if (count === max) return text.slice(0, i);
    count++;
  }
  return text;
}

const SURROGATE = /[\ud800-\udfff]/;

/** `text` cut to `max` characters: the head and, when cut, the original's length. */
function cut(text: string, max: number): { head: string; total: number | null } {
  // Code points never outnumber UTF-16 units: a short string needs no counting.
  if (text.length <= max) return { head: text, total: null };
  // Without surrogates, units are code points: no counting either.
  if (!SURROGATE.test(text)) return { head: text.slice(0, max), total: text.length };
  const total = countChars(text);
  if (total <= max) return { head: text, total: null };
  return { head: headChars(text, max), total };
}

/**
 * `text` on one line, cut to `max` characters: `first words… (1,234 chars)`. The count is of the
 * original, so a reader knows how much was left out.
 */
export function preview(text: string, max: number): string {
  const { head, total } = cut(text, max);
  return total === null ? oneLine(head) : `${oneLine(head)}… (${groupDigits(total)} chars)`;
}

/** A quoted preview, for texts (JSON brings its own quotes): `"first words…" (1,234 chars)`. */
export function quoted(text: string, max: number): string {
  const { head, total } = cut(text, max);
  return total === null
    ? `"${oneLine(head)}"`
    : `"${oneLine(head)}…" (${groupDigits(total)} chars)`;
}

/** Any value as a one-line preview: strings as they are, the rest as JSON. */
export function previewValue(value: unknown, max: number): string {
  if (typeof value === "string") return quoted(value, max);
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = String(value);
  }
  return preview(json ?? "undefined", max);
}

/** 1234567 → "1,234,567". Locale-free, so golden files do not depend on the machine. */
export function groupDigits(n: number): string {
  if (n < 1000 && n > -1000) return String(n);
  if (Number.isSafeInteger(n)) {
    // Counts, nearly every number shown: no point nor exponent to look for. Grouped by dividing,
    // from the right, rather than by slicing the digits' text: no string but the groups.
    let rest = n < 0 ? -n : n;
    let grouped = "";
    while (rest >= 1000) {
      const group = rest % 1000;
      grouped = `,${group < 10 ? "00" : group < 100 ? "0" : ""}${group}${grouped}`;
      rest = (rest - group) / 1000;
    }
    return n < 0 ? `-${rest}${grouped}` : `${rest}${grouped}`;
  }
  if (!Number.isFinite(n)) return String(n);
  const text = String(Math.abs(n));
  const point = text.indexOf(".");
  const whole = point < 0 ? text : text.slice(0, point);
  // Exponent forms (1e+21) are left as they are: no count gets there.
  if (whole.includes("e")) return String(n);
  let grouped = whole.slice(0, ((whole.length - 1) % 3) + 1);
  for (let i = grouped.length; i < whole.length; i += 3) grouped += `,${whole.slice(i, i + 3)}`;
  return `${n < 0 ? "-" : ""}${grouped}${point < 0 ? "" : text.slice(point)}`;
}

/**
 * Dollars: four decimals below one dollar (model calls cost fractions of a cent), else two; below
 * a hundredth of a cent, two significant digits ($0.000012), which four decimals would show as
 * $0.0000 — a cheap model's call, not a free one.
 */
export function formatCost(usd: number): string {
  if (usd > 0 && usd < 0.0001) return `$${significant(usd)}`;
  if (usd < 1) return `$${fixed(usd, 4) ?? usd.toFixed(4)}`;
  const cents = fixed(usd, 2);
  if (cents !== null) {
    const point = cents.length - 3;
    return `$${groupDigits(Number(cents.slice(0, point)))}${cents.slice(point)}`;
  }
  const [whole, fraction] = usd.toFixed(2).split(".");
  return `$${groupDigits(Number(whole))}.${fraction}`;
}

/** A small positive amount to two significant digits, trailing zeros dropped (0.00005). */
function significant(value: number): string {
  const digits = Math.min(20, Math.ceil(-Math.log10(value)) + 1);
  return value.toFixed(digits).replace(/0+$/, "");
}

/**
 * `value.toFixed(digits)` (2 or 4) without toFixed, which costs half a microsecond a call (a
 * usage line of every model call in `reins show`: `deno task bench views`); null where it might
 * differ: a negative value, a huge one, or one whose scaled value is near a half, where rounding
 * it could differ from toFixed's exact decimal rounding.
 */
function fixed(value: number, digits: 2 | 4): string | null {
  const scale = digits === 2 ? 100 : 10_000;
  const scaled = value * scale;
  const rounded = Math.round(scaled);
  if (!(value >= 0 && scaled < 1e12) || Math.abs(Math.abs(scaled - rounded) - 0.5) < 1e-6) {
    return null;
  }
  const fraction = rounded % scale;
  const text = String(fraction);
  return `${(rounded - fraction) / scale}.${
    text.length < digits ? text.padStart(digits, "0") : text
  }`;
}

/** Bytes as people read them: 512 B, 1.2 kB, 3.4 MB. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** A duration: 850 ms, 4.2 s, 3m 05s, 2h 07m. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, "0")}s`;
  }
  const minutes = Math.floor(seconds / 60);
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
}

/** Time since the run started, for the left margin: +0.012s, +12.345s, +2m03.4s, +1h02m03s. */
export function formatOffset(ms: number): string {
  // Events come in bursts within one millisecond: the last one's text serves the next.
  if (ms === lastOffsetMs) return lastOffset;
  lastOffsetMs = ms;
  lastOffset = offsetText(ms);
  return lastOffset;
}

let lastOffsetMs = NaN;
let lastOffset = "";

function offsetText(ms: number): string {
  if (!Number.isFinite(ms)) return "?";
  const sign = ms < 0 ? "-" : "+";
  const abs = Math.abs(ms);
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(3)}s`;
  const totalSeconds = abs / 1000;
  if (abs < 3_600_000) {
    const minutes = Math.floor(totalSeconds / 60);
    return `${sign}${minutes}m${(totalSeconds - minutes * 60).toFixed(1).padStart(4, "0")}s`;
  }
  const whole = Math.floor(totalSeconds);
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  return `${sign}${hours}h${String(minutes).padStart(2, "0")}m${
    String(whole % 60).padStart(2, "0")
  }s`;
}

/** "1 tool call", "3 tool calls". */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${groupDigits(n)} ${n === 1 ? singular : pluralForm}`;
}

let minutePrefix = "";
let minuteMs = 0;

/**
 * Epoch milliseconds of an ISO time. The store's `2026-01-02T03:04:05.678Z` form is read by hand
 * (a run's events share their minute, so one Date.parse serves thousands); anything else by
 * Date.parse. NaN when it is not a time.
 */
export function isoMs(text: string): number {
  if (text.length !== 24 || text.charCodeAt(23) !== 90 || text.charCodeAt(19) !== 46) {
    return Date.parse(text);
  }
  // Compared in place: a slice per event to compare was a string made per event.
  if (minutePrefix === "" || !text.startsWith(minutePrefix)) {
    const prefix = text.slice(0, 17);
    const ms = Date.parse(`${prefix}00.000Z`);
    if (!Number.isFinite(ms)) return Date.parse(text);
    minutePrefix = prefix;
    minuteMs = ms;
  }
  const s1 = text.charCodeAt(17) - 48;
  const s2 = text.charCodeAt(18) - 48;
  const m1 = text.charCodeAt(20) - 48;
  const m2 = text.charCodeAt(21) - 48;
  const m3 = text.charCodeAt(22) - 48;
  if (!(isDigit(s1) && isDigit(s2) && isDigit(m1) && isDigit(m2) && isDigit(m3))) {
    return Date.parse(text);
  }
  const rest = ((s1 * 10 + s2) * 1000) + m1 * 100 + m2 * 10 + m3;
  if (rest >= 60_000) return Date.parse(text);
  return minuteMs + rest;
}

function isDigit(n: number): boolean {
  return n >= 0 && n <= 9;
}
