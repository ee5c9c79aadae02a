// A body's bytes as the gateway keeps them: every known secret replaced, nothing else changed
// (shared by the thread that passes answers on and the recorder's Worker).
import { knownSecrets, type Redactor } from "../core/redact.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * `bytes` with every secret `secrets` knows replaced, when it holds one (text only; the same bytes
 * else).
 */
export function redactedBytes(bytes: Uint8Array, secrets: Redactor = knownSecrets): Uint8Array {
  if (secrets.size === 0 || bytes.length === 0) return bytes;
  const text = decoder.decode(bytes);
  if (!secrets.holdsSecret(text)) return bytes;
  return encoder.encode(secrets.exact(text));
}
