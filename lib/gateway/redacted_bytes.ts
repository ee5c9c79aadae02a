// A body's bytes as the gateway keeps them: every known secret replaced, nothing else changed
// (for requests, bodies.ts, and answers, answer_tap.ts).
import { knownSecrets } from "../core/redact.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** `bytes` with every known secret replaced, when it holds one (text only; the same bytes else). */
export function redactedBytes(bytes: Uint8Array): Uint8Array {
  if (knownSecrets.size === 0 || bytes.length === 0) return bytes;
  const text = decoder.decode(bytes);
  if (!knownSecrets.holdsSecret(text)) return bytes;
  return encoder.encode(knownSecrets.exact(text));
}

/**
 * `bytes` with every known secret replaced, where `text` is what they were decoded to (as a
 * stream: a character cut between pieces is in the text of the piece it ends in), so that a piece
 * already decoded is not decoded again to be looked through: the same as redactedBytes(bytes).
 */
export function redactedPiece(bytes: Uint8Array, text: string): Uint8Array {
  if (knownSecrets.size === 0 || bytes.length === 0 || !knownSecrets.holdsSecret(text)) {
    return bytes;
  }
  return redactedBytes(bytes);
}
