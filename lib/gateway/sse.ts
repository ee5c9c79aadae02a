// Server-sent events read incrementally from the bytes of a response as they pass through the
// gateway: each complete event handed on with its `event:` name and its `data:` as text (the
// reader parses what it needs: most events of a long stream are text deltas it can read without
// parsing them whole). Lines may be split anywhere across chunks. It keeps only the line being
// read and the event being built, never the stream.

/**
 * `text` as a string of its own: a slice of a longer string (V8 makes one of 13 characters or
 * more) keeps the whole of that string alive, which what is held from one piece to the next must
 * not (a piece's text is tens of KiB, its rest an event's beginning).
 */
export function ownString(text: string): string {
  return text.length < 13 ? text : (" " + text).slice(1);
}

export type SseHandler = (name: string | null, data: string) => void;
/**
 * Reads the whole events at `from` in `text` it knows how to read at once (before `limit`, the
 * end of the last whole event), returning where they end: `from` when it read none.
 */
export type SseRunReader = (text: string, from: number, limit: number) => number;

export class SseReader {
  readonly #decoder = new TextDecoder();
  readonly #handle: SseHandler;
  readonly #run: SseRunReader | null;
  #partial = "";
  #name: string | null = null;
  #data: string[] = [];
  #lastName = "";

  constructor(handle: SseHandler, run: SseRunReader | null = null) {
    this.#handle = handle;
    this.#run = run;
  }

  push(bytes: Uint8Array): void {
    this.pushText(this.#decoder.decode(bytes, { stream: true }));
  }

  /** The next piece of the stream as text, decoded by the caller (a UTF-8 decoder streaming). */
  pushText(decoded: string): void {
    const partial = this.#partial;
    if (partial === "") return this.#read(decoded);
    // The event begun in the last piece mostly ends near this one's start: it is read from the
    // rest of the last piece and this one's beginning, not from both joined whole (a copy).
    const end = decoded.indexOf("\n\n");
    if (end < 0 || end + 2 === decoded.length) return this.#read(partial + decoded);
    this.#read(partial + decoded.slice(0, end + 2));
    this.#read(this.#partial + decoded.slice(end + 2));
  }

  /** Reads `text`: the rest of the stream before it is read (nothing of it held but its end). */
  #read(text: string): void {
    // Whole events at a time (most are one `data:` line, after an `event:` line or not): found by
    // their blank lines with indexOf and handed on as slices of the chunk's text, the rest read
    // line by line. A stream in CRLF is read line by line throughout.
    if (text.includes("\r")) return this.#lines(text);
    let from = 0;
    // An event begun in an earlier chunk (its lines read already) ends at the first blank line.
    if (this.#data.length > 0 || this.#name !== null) {
      const end = text.indexOf("\n\n");
      if (end < 0) return this.#lines(text);
      this.#lines(text.slice(0, end + 2), true);
      from = end + 2;
    }
    const limit = this.#run === null ? 0 : text.lastIndexOf("\n\n") + 2;
    for (;;) {
      if (this.#run !== null && from < limit) {
        const after = this.#run(text, from, limit);
        if (after > from) {
          from = after;
          continue;
        }
      }
      const end = text.indexOf("\n\n", from);
      if (end < 0) break;
      if (text.startsWith("data: ", from) && text.indexOf("\n", from + 6) === end) {
        this.#handle(null, text.slice(from + 6, end));
      } else if (text.startsWith("event: ", from)) {
        const nl = text.indexOf("\n", from + 7);
        if (nl < end && text.startsWith("data: ", nl + 1) && text.indexOf("\n", nl + 7) === end) {
          this.#handle(this.#nameAt(text, from + 7, nl), text.slice(nl + 7, end));
        } else this.#lines(text.slice(from, end + 2), true);
      } else this.#lines(text.slice(from, end + 2), true);
      from = end + 2;
    }
    this.#partial = from === 0 ? text : ownString(text.slice(from));
  }

  /** The event name at `start`…`end` of `text`: the last one again when it repeats (no copy). */
  #nameAt(text: string, start: number, end: number): string {
    const last = this.#lastName;
    if (last.length === end - start && text.startsWith(last, start)) return last;
    return this.#lastName = ownString(text.slice(start, end));
  }

  /** Reads `text` line by line (the partial line kept, unless `whole`). */
  #lines(text: string, whole = false): void {
    let from = 0;
    for (;;) {
      const at = text.indexOf("\n", from);
      if (at < 0) break;
      const end = at > from && text.charCodeAt(at - 1) === 13 ? at - 1 : at;
      this.#line(text.slice(from, end));
      from = at + 1;
    }
    if (!whole) this.#partial = from === 0 ? text : ownString(text.slice(from));
  }

  /** The end of the stream: an event not closed by a blank line is still handed on. */
  end(): void {
    const rest = this.#partial + this.#decoder.decode();
    this.#partial = "";
    if (rest !== "") this.#line(rest.replace(/\r$/, ""));
    this.#dispatch();
  }

  #line(line: string): void {
    if (line === "") return this.#dispatch();
    if (line.charCodeAt(0) === 58) return; // ":" a comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#name = value;
  }

  #dispatch(): void {
    if (this.#data.length === 0) {
      this.#name = null;
      return;
    }
    const raw = this.#data.length === 1 ? this.#data[0] : this.#data.join("\n");
    const name = this.#name;
    this.#data = [];
    this.#name = null;
    this.#handle(name, raw);
  }
}
