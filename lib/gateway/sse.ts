// Server-sent events read incrementally from the bytes of a response as they pass through the
// gateway: each complete event handed on with its `event:` name and its `data:` as text (the
// reader parses what it needs: most events of a long stream are text deltas it can read without
// parsing them whole). Lines may be split anywhere across chunks. It keeps only the line being
// read and the event being built, never the stream: an event is read once its blank line has
// come (the pieces before it are kept aside, not joined and searched again piece by piece, which
// made a long event cost time in the square of its length), and one that grows past
// EVENT_LIMIT characters without ending (an upstream that is not SSE, say) is not read at all:
// what follows its blank line is.

/**
 * `text` as a string of its own: a slice of a longer string (V8 makes one of 13 characters or
 * more) keeps the whole of that string alive, which what is held from one piece to the next must
 * not (a piece's text is tens of KiB, its rest an event's beginning).
 */
export function ownString(text: string): string {
  return text.length < 13 ? text : (" " + text).slice(1);
}

/** An event longer than this (in characters) is passed over, not read: what is held stays bounded. */
export const EVENT_LIMIT = 16 * 1024 * 1024;

/** Whether `text` holds a blank line (after `before`, the text that came before it). */
function endsAnEvent(before: string, text: string): boolean {
  if (text.includes("\n\n") || text.includes("\n\r\n")) return true;
  const first = text.charCodeAt(0);
  const last = before.charCodeAt(before.length - 1);
  if (last === 10) return first === 10 || (first === 13 && text.charCodeAt(1) === 10);
  return last === 13 && before.charCodeAt(before.length - 2) === 10 && first === 10;
}

/** Where the first blank line in `text` (after `before`) ends, or -1. */
function afterBlankLine(before: string, text: string): number {
  const joined = before.slice(-2) + text;
  const match = /\n\r?\n/.exec(joined);
  return match === null
    ? -1
    : Math.max(0, match.index + match[0].length - (joined.length - text.length));
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
  /** Pieces after `#partial` that end no event: read with the piece that does. */
  #aside: string[] = [];
  #asideChars = 0;
  /** The end of what came before (two characters): a blank line may begin in it. */
  #tail = "";
  /** Passing over an event past the limit, up to its blank line. */
  #skipping = false;
  /** The data lines of the event being read, in characters; past the limit it is not kept. */
  #dataChars = 0;
  #over = false;
  readonly #limit: number;

  constructor(handle: SseHandler, run: SseRunReader | null = null, limit = EVENT_LIMIT) {
    this.#handle = handle;
    this.#run = run;
    this.#limit = limit;
  }

  push(bytes: Uint8Array): void {
    this.pushText(this.#decoder.decode(bytes, { stream: true }));
  }

  /** The next piece of the stream as text, decoded by the caller (a UTF-8 decoder streaming). */
  pushText(text: string): void {
    let decoded = text;
    if (decoded === "") return;
    const before = this.#tail;
    this.#tail = decoded.length >= 2 ? decoded.slice(-2) : before.slice(-1) + decoded;
    if (this.#skipping) {
      const after = afterBlankLine(before, decoded);
      if (after < 0) return;
      this.#skipping = false;
      decoded = ownString(decoded.slice(after));
      if (decoded === "") return;
    }
    // Handlers are called only at a blank line: a piece with none is kept aside as it is.
    if ((this.#partial !== "" || this.#aside.length > 0) && !endsAnEvent(before, decoded)) {
      this.#aside.push(decoded);
      this.#asideChars += decoded.length;
      if (this.#partial.length + this.#asideChars > this.#limit) this.#skip();
      return;
    }
    if (this.#aside.length > 0) {
      this.#partial += this.#aside.join("");
      this.#aside = [];
      this.#asideChars = 0;
    }
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
    if (this.#data.length > 0 || this.#name !== null || this.#over) {
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

  /** The event being read is past the limit: it is dropped, and passed over to its blank line. */
  #skip(): void {
    this.#partial = "";
    this.#aside = [];
    this.#asideChars = 0;
    this.#data = [];
    this.#dataChars = 0;
    this.#over = false;
    this.#name = null;
    this.#skipping = true;
  }

  /** The end of the stream: an event not closed by a blank line is still handed on. */
  end(): void {
    if (this.#skipping) return;
    const rest = this.#partial + this.#aside.join("") + this.#decoder.decode();
    this.#partial = "";
    this.#aside = [];
    this.#asideChars = 0;
    // (It may be more than one line: the pieces kept aside, or an unended event read at once.)
    if (rest !== "") this.#lines(rest.endsWith("\n") ? rest : `${rest}\n`, true);
    this.#dispatch();
  }

  #line(line: string): void {
    if (line === "") return this.#dispatch();
    if (line.charCodeAt(0) === 58) return; // ":" a comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") {
      if (this.#over) return;
      this.#dataChars += value.length;
      if (this.#dataChars <= this.#limit) return void this.#data.push(value);
      this.#over = true;
      this.#data = [];
    } else if (field === "event") this.#name = value;
  }

  #dispatch(): void {
    this.#dataChars = 0;
    if (this.#over) this.#data = [];
    this.#over = false;
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
