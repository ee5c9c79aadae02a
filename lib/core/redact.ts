// The secrets choke point: every secret value reins knows (API keys, the platform's key and
// secret, credentials it sends in headers, keys in its config) and the common shapes of tokens
// (`Bearer …`, `sk-…`, a quoted `X-Api-Key: …`) are replaced by `[redacted]` before text is
// written to the data root, printed or uploaded. The sinks (private files, the event log,
// run.json and the index, the CLI's output) call it themselves, so a caller cannot forget to.
// It cannot see a secret split across two pieces of text (two streamed deltas).
import type { Env } from "./env.ts";

export const REDACTED = "[redacted]";

/** Shorter values are not treated as secrets: replacing every "ab" would garble all text. */
export const MIN_SECRET_LENGTH = 4;

// Every shape below matches whole words only, never inside an identifier: not after a letter, a
// digit or '_', nor after one of those and a '-' (a check named `reset_password`, a tool
// `task-sk-…`, a check `refresh-token` are names, not credentials).
const NOT_IN_WORD = "(?<![A-Za-z0-9_])(?<![A-Za-z0-9_]-)";
const WORD_ENDS = "(?![A-Za-z0-9_]|-[A-Za-z0-9_])";

// `Bearer <token>` and its kin: the scheme is kept, the credential goes — when it looks like one
// (redactScheme): "basic understanding" and "token expiration" are English.
const SCHEME_TOKEN = new RegExp(
  `${NOT_IN_WORD}(Bearer|Basic|Token)(\\s+)([A-Za-z0-9._~+/-]{8,}=*)`,
  "gi",
);
// Provider key shapes: OpenAI and Anthropic (`sk-…`, `sk-proj-…`, `sk-ant-…`), GitHub, Slack,
// AWS access key ids.
const KEY_SHAPES = new RegExp(
  `${NOT_IN_WORD}(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})${WORD_ENDS}`,
  "g",
);
// A credential named next to its value, as a server quoting a request tends to: `X-Api-Key: v`,
// `"x-secret-key":"v"`, `api_key=v`, `OPENAI_API_KEY=v`. The name and punctuation are kept. The
// name is a whole identifier: a credential's name alone, or behind an `X-` (a header) or
// upper-case words (an environment variable); `reset_password` or `my-secret-key` name something
// else (redactNamed reads what comes before the match: a lookbehind that took in the identifier
// made this pattern three times slower on text full of words). An unquoted value must hold a
// letter and not be a JSON literal, so JSON text stays JSON.
const NAMED_CREDENTIAL =
  /(["']?)(?<![A-Za-z0-9])(x-api-key|x-secret-key|api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|refresh[_-]?token|password|passwd)\1(\s*[:=]\s*)(["']?)([^"'\s,;&{}[\]\\]{4,})/gi;

/** The identifier's part before `at` in `text`: letters, digits, '_' and '-' (leading ones dropped). */
function identifierBefore(text: string, at: number): string {
  let start = at;
  while (start > 0 && /[A-Za-z0-9_-]/.test(text[start - 1])) start--;
  return text.slice(start, at).replace(/^[_-]+/, "");
}

/** A prefix a credential's name may have: `X-` of a header, or an environment variable's words. */
function isCredentialPrefix(prefix: string, name: string): boolean {
  return prefix === "" || /^x-$/i.test(prefix) || /^[A-Z0-9_]+$/.test(prefix + name);
}

function redactScheme(match: string, scheme: string, space: string, token: string): string {
  // A digit, a capital past the first letter, a '.', '~', '+' or '/' inside it, or base64's
  // padding: a credential. Letters alone (and '-') are a word.
  if (!/[0-9]|.[A-Z]|[._~+/][A-Za-z0-9]|=$/.test(token)) return match;
  return `${scheme}${space}${REDACTED}`;
}

function redactNamed(
  match: string,
  quote: string,
  name: string,
  separator: string,
  valueQuote: string,
  value: string,
  offset: number,
  text: string,
): string {
  if (quote === "" && !isCredentialPrefix(identifierBefore(text, offset), name)) return match;
  if (value === REDACTED || /^\[redacted\]/.test(value)) return match;
  if (valueQuote === "" && (!/[A-Za-z]/.test(value) || /^(true|false|null)$/.test(value))) {
    return match;
  }
  return `${quote}${name}${quote}${separator}${valueQuote}${REDACTED}`;
}

/**
 * Whether a value is treated as a secret: long enough, and not made only of what JSON text holds
 * outside its strings (digits, punctuation, the letters of true/false/null), so that replacing it
 * never breaks JSON. A secret with a '"' in it can still cross a string's end: see
 * redactJsonText.
 */
function mayBeSecret(value: string): boolean {
  return value.length >= MIN_SECRET_LENGTH && !/^[0-9.+\-eE\s{}[\],:truefalsn]+$/.test(value);
}

// A cheap test that passes wherever one of the three shapes above might match (and rarely
// elsewhere): text on the hot path of the event log pays for it alone. Spelled without the `i`
// flag, which makes V8 twice as slow here.
const SHAPE_GATE = new RegExp(
  [
    "(?:[Bb][Ee][Aa][Rr][Ee][Rr]|[Bb][Aa][Ss][Ii][Cc]|[Tt][Oo][Kk][Ee][Nn])\\s+[A-Za-z0-9._~+/-]{8}",
    "sk-[A-Za-z0-9_-]{16}|gh[pousr]_|github_pat_|xox[abprs]-|AKIA[0-9A-Z]{16}",
    "(?:[Kk][Ee][Yy]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Tt][Oo][Kk][Ee][Nn]|[Pp][Aa][Ss][Ss][Ww](?:[Oo][Rr])?[Dd])[\"']?\\s*[:=]",
  ].join("|"),
);

/** Replaces the common token shapes in `text` (no known secrets needed). */
export function redactTokenShapes(text: string): string {
  if (!SHAPE_GATE.test(text)) return text;
  return text
    .replace(SCHEME_TOKEN, redactScheme)
    .replace(KEY_SHAPES, REDACTED)
    .replace(NAMED_CREDENTIAL, redactNamed);
}

/**
 * A set of secret values and the replacement of them (and of token shapes) in text and in JSON
 * values. Adding is idempotent; values shorter than MIN_SECRET_LENGTH are ignored.
 */
export class Redactor {
  /** Each secret with the forms it takes in text: itself, and JSON-escaped when that differs. */
  #forms: string[] = [];
  readonly #secrets = new Set<string>();

  constructor(secrets: Iterable<string | null | undefined> = []) {
    this.add(...secrets);
  }

  /** How many secret values it knows. */
  get size(): number {
    return this.#secrets.size;
  }

  add(...secrets: (string | null | undefined)[]): this {
    let changed = false;
    for (const secret of secrets) {
      if (typeof secret !== "string") continue;
      const value = secret.trim();
      if (!mayBeSecret(value) || this.#secrets.has(value)) continue;
      this.#secrets.add(value);
      changed = true;
    }
    if (changed) {
      const forms = new Set<string>();
      for (const secret of this.#secrets) {
        forms.add(secret);
        forms.add(JSON.stringify(secret).slice(1, -1));
      }
      // Longest first, so a secret that contains another is replaced whole.
      this.#forms = [...forms].sort((a, b) => b.length - a.length);
    }
    return this;
  }

  /**
   * `text` with every known secret replaced by `[redacted]`, and nothing else: no token shapes,
   * so that text kept to be compared or sent again (a model call's body) is changed only where a
   * secret was.
   */
  exact(text: string): string {
    let out = text;
    for (const form of this.#forms) {
      if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    }
    return out;
  }

  /**
   * The forms the known secrets take in text, longest first (the same array until a secret is
   * added): for a reader of a stream to keep a secret's beginning until its end has come.
   */
  get forms(): readonly string[] {
    return this.#forms;
  }

  /** Whether `text` holds a known secret. */
  holdsSecret(text: string): boolean {
    return this.#forms.some((form) => text.includes(form));
  }

  /** `text` with every known secret and every token shape replaced by `[redacted]`. */
  text(text: string): string {
    let out = text;
    for (const form of this.#forms) {
      if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    }
    return redactTokenShapes(out);
  }

  /**
   * `value` with every string in it redacted (keys included), as a new value when something
   * changed and as the same value otherwise. Anything JSON cannot hold is returned as is.
   */
  value<T>(value: T): T {
    if (typeof value === "string") return this.text(value) as T;
    if (value === null || typeof value !== "object") return value;
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      return value;
    }
    if (json === undefined) return value;
    // One pass over the JSON text finds out cheaply whether anything needs replacing; the walk
    // then replaces string by string, so the result is the same value with its strings redacted.
    if (this.text(json) === json) return value;
    return this.#walk(value) as T;
  }

  #walk(value: unknown): unknown {
    if (typeof value === "string") return this.text(value);
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((item) => this.#walk(item));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[this.text(key)] = this.#walk(item);
    return out;
  }
}

/**
 * The secrets of this process: what every sink redacts. The CLI adds the environment's secrets
 * at start-up and loadSettings adds those of the settings, so library callers (a server, a suite,
 * a test) that load settings are covered too. One per process because the secrets are the
 * process's: its environment and its config file.
 */
export const knownSecrets = new Redactor();

/** Text with every known secret and token shape replaced (see knownSecrets). */
export function redact(text: string): string {
  return knownSecrets.text(text);
}

/** A JSON value with every known secret and token shape replaced (see Redactor.value). */
export function redactValue<T>(value: T): T {
  return knownSecrets.value(value);
}

/**
 * Text that may be JSON with every known secret and token shape replaced, still JSON when it was:
 * should a replacement break it (a secret with a '"' in it), the parsed value is redacted instead
 * and written with two-space indentation.
 */
export function redactJsonText(text: string): string {
  const redacted = redact(text);
  if (redacted === text || !/^\s*[[{]/.test(text)) return redacted;
  try {
    JSON.parse(redacted);
    return redacted;
  } catch {
    try {
      const value = JSON.parse(text);
      return `${JSON.stringify(redactValue(value), null, 2)}${text.endsWith("\n") ? "\n" : ""}`;
    } catch {
      return redacted; // it was not JSON to begin with
    }
  }
}

/** Adds values to the secrets every sink redacts. */
export function rememberSecrets(...values: (string | null | undefined)[]): void {
  knownSecrets.add(...values);
}

/** The variables of lib/core/env.ts whose values are credentials. */
export const SECRET_ENV_VARS = [
  "HARNESS_PLATFORM_API_KEY",
  "HARNESS_PLATFORM_SECRET_KEY",
  "FI_API_KEY",
  "FI_SECRET_KEY",
  "OPENAI_API_KEY",
] as const satisfies readonly (keyof Env)[];

/** The credential values the environment holds. */
export function secretsInEnv(env: Env): string[] {
  return SECRET_ENV_VARS.flatMap((name) => env[name] ? [env[name]!] : []);
}

// A flag that takes a credential: `--api-key V`, `--token=V`, `--password V`.
const SECRET_FLAG = /^--?[A-Za-z0-9-]*(?:key|token|secret|password)$/i;

/**
 * The values of credential flags in a command line (a config file's `drivers.*.args`):
 * `--api-key V` and `--api-key=V`.
 */
export function secretsInArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf("=");
    if (eq > 0 && SECRET_FLAG.test(arg.slice(0, eq))) out.push(arg.slice(eq + 1));
    else if (SECRET_FLAG.test(arg) && i + 1 < args.length) out.push(args[++i]);
  }
  return out;
}
