// Bodies and text as the gateway keeps them: every known secret replaced, nothing else changed
// (requests, bodies.ts; answers, answer_tap.ts; streamed text, binding.ts). A stream is kept in
// pieces, and a secret may be cut anywhere between them (in two, or over many 1-byte pieces): a
// stream's recording holds back the end of what it has seen that may be a secret's beginning (at
// most the longest secret's length less one) until the next piece shows whether it is one, or the
// stream ends. What is passed on to the harness is never held back nor changed: only the copy
// that is kept.
import { knownSecrets, REDACTED } from "../core/redact.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const REDACTED_BYTES = encoder.encode(REDACTED);
const EMPTY = new Uint8Array(0);

/** The known secrets' forms as UTF-8, longest first, remade only when a secret is added. */
interface ByteForms {
  of: readonly string[];
  forms: Uint8Array[];
  /**
   * For each form, where each byte is in it but at its end, last first: a proper prefix of a form
   * that ends a piece ends with its last byte, so only these are where it may begin.
   */
  ends: Map<number, number[]>[];
}
let byteForms: ByteForms = { of: [], forms: [], ends: [] };

function formsAsBytes(): ByteForms {
  const of = knownSecrets.forms;
  if (byteForms.of !== of) {
    const forms = of.map((form) => encoder.encode(form)).sort((a, b) => b.length - a.length);
    const ends = forms.map((form) => {
      const at = new Map<number, number[]>();
      for (let i = form.length - 2; i >= 0; i--) {
        const list = at.get(form[i]);
        if (list === undefined) at.set(form[i], [i]);
        else list.push(i);
      }
      return at;
    });
    byteForms = { of, forms, ends };
  }
  return byteForms;
}

/** Whether `form` is at `at` in `bytes`, whole. */
function isAt(bytes: Uint8Array, at: number, form: Uint8Array): boolean {
  if (at + form.length > bytes.length) return false;
  for (let i = 0; i < form.length; i++) if (bytes[at + i] !== form[i]) return false;
  return true;
}

/** Whether `bytes` from `at` to their end is how `form` begins. */
function beginsAt(bytes: Uint8Array, at: number, form: Uint8Array): boolean {
  for (let i = at; i < bytes.length; i++) if (bytes[i] !== form[i - at]) return false;
  return true;
}

/**
 * Where the end of `bytes` that may be a secret's beginning starts (a proper prefix of a form,
 * the longest there is): `bytes.length` when none. Looked for only where the piece's last byte
 * is in a form (a stream's piece mostly ends an event, with a newline no key holds).
 */
function tailStart(bytes: Uint8Array, known: ByteForms): number {
  const length = bytes.length;
  let start = length;
  if (length === 0) return start;
  const last = bytes[length - 1];
  for (let f = 0; f < known.forms.length; f++) {
    const places = known.ends[f].get(last);
    if (places === undefined) continue;
    const form = known.forms[f];
    for (const place of places) {
      const at = length - 1 - place;
      if (at < 0) continue;
      if (at >= start) break;
      if (beginsAt(bytes, at, form)) {
        start = at;
        break;
      }
    }
  }
  return start;
}

/** Whether a form begins in `bytes` before `before` and is whole in them. */
function formBeginsBefore(
  bytes: Uint8Array,
  before: number,
  forms: readonly Uint8Array[],
): boolean {
  for (const form of forms) {
    const first = form[0];
    for (let at = 0; at < before; at++) {
      if (bytes[at] === first && isAt(bytes, at, form)) return true;
    }
  }
  return false;
}

/**
 * `bytes` with every whole form in them replaced (left to right, the longest form first where
 * several begin), as the parts to join, and where the last one replaced ends.
 */
function replaced(
  bytes: Uint8Array,
  forms: readonly Uint8Array[],
): { parts: Uint8Array[]; end: number } {
  const parts: Uint8Array[] = [];
  let copied = 0;
  let at = 0;
  while (at < bytes.length) {
    const byte = bytes[at];
    let found: Uint8Array | null = null;
    for (const form of forms) {
      if (form[0] === byte && isAt(bytes, at, form)) {
        found = form;
        break;
      }
    }
    if (found === null) {
      at++;
      continue;
    }
    if (at > copied) parts.push(bytes.subarray(copied, at));
    parts.push(REDACTED_BYTES);
    at += found.length;
    copied = at;
  }
  return { parts, end: copied };
}

/** The pieces as one array (the piece itself when there is one). */
export function joined(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const part of parts) length += part.length;
  const all = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}

/** `bytes` (a whole body) with every known secret replaced, when they hold one; the same bytes else. */
export function redactedBytes(bytes: Uint8Array): Uint8Array {
  if (knownSecrets.size === 0 || bytes.length === 0) return bytes;
  if (!knownSecrets.holdsSecret(decoder.decode(bytes))) return bytes;
  const { parts, end } = replaced(bytes, formsAsBytes().forms);
  if (end < bytes.length) parts.push(bytes.subarray(end));
  return joined(parts);
}

/**
 * One stream's bytes as they are kept, piece by piece: each piece's bytes that are sure not to
 * be a secret's part, every known secret replaced, and the end that may begin one held back for
 * the next piece (or the end). Joined, what it returns is redactedBytes of the whole stream.
 */
export class RedactedStream {
  /** The end of the stream seen so far that may be a secret's beginning, not yet kept. */
  #held: Uint8Array = EMPTY;

  /**
   * What is kept of the next piece (the held bytes before it included): `text`, when given, is
   * what a UTF-8 decoder streaming made of the piece (a character cut at its end is in the next
   * piece's text), so that it is not decoded again to be looked through.
   */
  piece(bytes: Uint8Array, text?: string): Uint8Array {
    if (knownSecrets.size === 0) {
      // No secret: nothing can be held (secrets are only ever added).
      if (this.#held.length === 0) return bytes;
    }
    if (bytes.length === 0) return EMPTY;
    const known = formsAsBytes();
    const forms = known.forms;
    const held = this.#held;
    const all = held.length === 0 ? bytes : joined([held, bytes]);
    // A secret whole in the piece is in its text; one that began before it began in what was
    // held (nothing before that could begin one), and is looked for there.
    const whole = knownSecrets.holdsSecret(text ?? decoder.decode(bytes));
    if (!whole && (held.length === 0 || !formBeginsBefore(all, held.length, forms))) {
      const start = tailStart(all, known);
      this.#held = start === all.length ? EMPTY : all.slice(start);
      return start === all.length ? all : all.subarray(0, start);
    }
    const { parts, end } = replaced(all, forms);
    const rest = all.subarray(end);
    const start = tailStart(rest, known);
    if (start > 0) parts.push(rest.subarray(0, start));
    this.#held = start === rest.length ? EMPTY : rest.slice(start);
    return joined(parts);
  }

  /** The end of the stream: what was held back (the beginning of no secret that came whole). */
  end(): Uint8Array {
    const held = this.#held;
    this.#held = EMPTY;
    return held;
  }
}

/**
 * How many characters a known secret's beginning may have at most (the longest form's length less
 * one; 0: no secret is known): the end of a text that secretTailStart need look at.
 */
export function secretReach(): number {
  const forms = knownSecrets.forms;
  return forms.length === 0 ? 0 : forms[0].length - 1;
}

/**
 * Where the end of `text` that may be a known secret's beginning starts: `text.length` when none
 * (for text recorded in pieces, binding.ts, to keep a secret's beginning with its end).
 */
export function secretTailStart(text: string): number {
  let start = text.length;
  if (knownSecrets.size === 0) return start;
  for (const form of knownSecrets.forms) {
    const first = form[0];
    let at = text.indexOf(first, Math.max(0, text.length - form.length + 1));
    while (at >= 0 && at < start) {
      if (form.startsWith(text.slice(at))) {
        start = at;
        break;
      }
      at = text.indexOf(first, at + 1);
    }
  }
  return start;
}
