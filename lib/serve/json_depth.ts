// How deeply a JSON text nests, found by one pass over its bytes before it is parsed. JSON.parse
// itself copes with any depth, but every walk over the value afterwards (validation, copying,
// stringifying) recurses, and a megabyte of `[` would take the stack down with it: a text that
// nests deeper than the limit is refused before it becomes a value.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * The byte offset at which `bytes` (UTF-8 JSON, valid or not) first nests deeper than
 * `maxDepth` arrays and objects, or -1 when it never does. Brackets inside strings do not count.
 */
export function depthExceededAt(bytes: Uint8Array, maxDepth: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > maxDepth) return i;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (depth > 0) depth--;
    }
  }
  return -1;
}
