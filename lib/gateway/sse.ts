// Server-sent events read incrementally from the bytes of a response as they pass through the
// gateway: each complete event handed on with its `event:` name and its `data:` parsed as JSON
// (a `data` that is not JSON, such as Chat Completions' `[DONE]`, is handed on as null). Lines
// may be split anywhere across chunks. It keeps only the line being read and the event being
// built, never the stream.

export type SseHandler = (name: string | null, data: unknown) => void;

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
    let from = 0;
    for (;;) {
      const at = text.indexOf("\n", from);
      if (at < 0) break;
      const end = at > from && text.charCodeAt(at - 1) === 13 ? at - 1 : at;
      this.#line(text.slice(from, end));
      from = at + 1;
    }
    this.#partial = from === 0 ? text : text.slice(from);
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
    let data: unknown = null;
    try {
      data = JSON.parse(raw);
    } catch {
      // Not JSON ([DONE], a keep-alive): nothing to read in it.
    }
    this.#handle(name, data);
  }
}
