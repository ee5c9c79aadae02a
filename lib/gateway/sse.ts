// Server-sent events read incrementally from the bytes of a response as they pass through the
// gateway: each complete event handed on with its `event:` name and its `data:` as text (the
// reader parses what it needs: most events of a long stream are text deltas it can read without
// parsing them whole). Lines may be split anywhere across chunks. It keeps only the line being
// read and the event being built, never the stream.

export type SseHandler = (name: string | null, data: string) => void;

export class SseReader {
  readonly #decoder = new TextDecoder();
  readonly #handle: SseHandler;
  #partial = "";
  #name: string | null = null;
  #data: string[] = [];

  constructor(handle: SseHandler) {
    this.#handle = handle;
  }

  push(bytes: Uint8Array): void {
    const text = this.#partial + this.#decoder.decode(bytes, { stream: true });
    // Whole events at a time (most are one `data:` line): split natively at their blank lines,
    // the rest read line by line. A stream in CRLF is read line by line throughout.
    if (text.includes("\r")) return this.#lines(text);
    const last = text.lastIndexOf("\n\n");
    if (last < 0) return this.#lines(text);
    const blocks = text.slice(0, last).split("\n\n");
    this.#partial = text.slice(last + 2);
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i];
      // The line in progress before the first block belongs to it.
      if (i === 0 && (this.#data.length > 0 || this.#name !== null)) {
        this.#lines(`${block}\n\n`, true);
        continue;
      }
      if (block.startsWith("data: ") && !block.includes("\n", 6)) {
        this.#handle(null, block.slice(6));
      } else if (block.startsWith("event: ")) {
        const nl = block.indexOf("\n");
        if (nl > 0 && block.startsWith("data: ", nl + 1) && !block.includes("\n", nl + 7)) {
          this.#handle(block.slice(7, nl), block.slice(nl + 7));
        } else this.#lines(`${block}\n\n`, true);
      } else this.#lines(`${block}\n\n`, true);
    }
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
    if (!whole) this.#partial = from === 0 ? text : text.slice(from);
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
