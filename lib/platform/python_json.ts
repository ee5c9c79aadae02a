// JSON text exactly as the seed's Python writes it, so that what we send (tool-call rows) and what
// we digest (`result_digest`) match the platform's own implementation byte for byte. Python's
// `json.dumps` differs from JSON.stringify in three ways that matter: non-ASCII is escaped
// (`ensure_ascii`), floats use Python's repr (`1e-05`, not `0.00001`), and `sort_keys` orders by
// code point. It serialises JSON values only; anything JSON.stringify would drop is dropped.

export interface PythonJsonOptions {
  /** `sort_keys=True`: keys ordered by code point. */
  sortKeys?: boolean;
  /** `separators=(",", ":")` when true; Python's default `(", ", ": ")` when false. */
  compact?: boolean;
}

/**
 * `json.dumps(json.loads(JSON.stringify(value)), sort_keys=True, separators=(",", ":"))`: the
 * canonical text the seed hashes into `result_digest`. Numbers are taken as the platform reads
 * them off our wire: integral ones as ints, the rest as Python floats.
 */
export function canonicalJson(value: unknown): string {
  return pythonJson(value, { sortKeys: true, compact: true });
}

/** `json.dumps(value)` with Python's defaults (or the options given). */
export function pythonJson(value: unknown, options: PythonJsonOptions = {}): string {
  // Round-trip through JSON.stringify first: it applies toJSON, drops undefined and functions,
  // and turns non-finite numbers into null, as the wire would.
  const text = JSON.stringify(value);
  if (text === undefined) return "null";
  const item = options.compact ? "," : ", ";
  const pair = options.compact ? ":" : ": ";
  return write(JSON.parse(text), options.sortKeys ?? false, item, pair);
}

function write(value: unknown, sortKeys: boolean, item: string, pair: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return pythonNumber(value);
    case "string":
      return pythonString(value);
    case "object": {
      if (Array.isArray(value)) {
        return `[${value.map((one) => write(one, sortKeys, item, pair)).join(item)}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record);
      if (sortKeys) keys.sort(compareCodePoints);
      return `{${
        keys.map((key) => `${pythonString(key)}${pair}${write(record[key], sortKeys, item, pair)}`)
          .join(item)
      }}`;
    }
    default:
      return "null";
  }
}

/** Orders strings by code point, as Python does (JS's default sort uses UTF-16 code units). */
export function compareCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  while (true) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const diff = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (diff !== 0) return diff;
  }
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/** A string as Python's `ensure_ascii` writes it: printable ASCII kept, the rest `\uXXXX`. */
export function pythonString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const char = text[i];
    if (unit >= 0x20 && unit <= 0x7e && char !== '"' && char !== "\\") {
      out += char;
    } else {
      out += SHORT_ESCAPES[char] ?? `\\u${unit.toString(16).padStart(4, "0")}`;
    }
  }
  return `${out}"`;
}

/**
 * A number as Python prints what `json.loads` made of our JSON text: JSON.stringify writes an
 * integral value below 1e21 without a point or exponent, which Python reads as an int; anything
 * else becomes a float, printed by `float.__repr__` (exponent form below 1e-4 and from 1e16).
 */
export function pythonNumber(value: number): string {
  if (!Number.isFinite(value)) return "null";
  const js = JSON.stringify(value);
  if (/^-?\d+$/.test(js)) return js;
  // toExponential() with no argument gives the shortest digits that round-trip, like repr.
  const [mantissa, exponentText] = value.toExponential().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const expSign = exponent < 0 ? "-" : "+";
    return `${sign}${head}e${expSign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction || "0"}`;
}
