// One answer's recording as the gateway passes it on. Its first INLINE_BYTES are read and written
// here, on the thread that passes it on: a model's answer is mostly a few KiB, for which no Worker
// is started and no node:crypto loaded (its hash is WebCrypto's, at its end). An answer that grows
// past them is handed to the recorder (recorder.ts, a Worker of its own), which reads the pieces
// again from the start (telling none of their text twice), appends the rest to the file and
// hashes the whole: a long stream costs the thread that passes it on a copy of each piece.
import { type AnswerBody, sha256Of } from "./bodies.ts";
import { redactedBytes } from "./redacted_bytes.ts";
import type { AnswerRecording, RecordedAnswer, Recorder } from "./recorder.ts";
import { SseReader } from "./sse.ts";
import { ResponseReader, type Wire } from "./wires.ts";

/** An answer longer than this is recorded by the recorder, off the thread that passes it on. */
export const INLINE_BYTES = 256 * 1024;

export interface TapOptions {
  wire: Wire;
  /** How the answer is read: SSE events, a whole JSON body (up to `jsonLimit`), or not at all. */
  format: "sse" | "json" | "none";
  jsonLimit: number;
  answer: AnswerBody;
  /** The process's recorder, started when an answer first needs it. */
  recorder(): Recorder;
  /** The text the answer streams, piece by piece. */
  text(piece: string): void;
  /** Where to hand over (the default: INLINE_BYTES; tests pass 0 to hand over at once). */
  inlineBytes?: number;
}

const decoder = new TextDecoder();

export class AnswerTap {
  readonly #options: TapOptions;
  readonly #reader: ResponseReader;
  readonly #sse: SseReader | null = null;
  #raw: Uint8Array[] = [];
  #kept: Uint8Array[] = [];
  #bytes = 0;
  #keptBytes = 0;
  /** Characters of text told so far (the recorder skips them). */
  #told = 0;
  #recording: AnswerRecording | null = null;
  #failure: string | null = null;

  constructor(options: TapOptions) {
    this.#options = options;
    this.#reader = new ResponseReader(options.wire, (piece) => {
      this.#told += piece.length;
      options.text(piece);
    });
    if (options.format === "sse") {
      const reader = this.#reader;
      this.#sse = new SseReader(
        (name, data) => reader.eventText(name, data),
        (text, from, limit) => reader.textRun(text, from, limit),
      );
    }
  }

  /**
   * One piece, as it was passed on. Returns a promise for the stream to wait for when the
   * recording is too far behind (or being handed over), else null.
   */
  piece(bytes: Uint8Array): Promise<void> | null {
    if (this.#recording !== null) {
      this.#recording.piece(bytes);
      return this.#recording.tooFarBehind();
    }
    if (this.#failure !== null) return null;
    const kept = redactedBytes(bytes);
    this.#options.answer.write(kept);
    this.#raw.push(bytes);
    this.#kept.push(kept);
    this.#bytes += bytes.length;
    this.#keptBytes += kept.length;
    this.#sse?.push(bytes);
    return this.#bytes > (this.#options.inlineBytes ?? INLINE_BYTES) ? this.#handOver() : null;
  }

  async #handOver(): Promise<void> {
    let appends: boolean;
    try {
      ({ appends } = await this.#options.answer.handOver());
    } catch (error) {
      this.#failure = `${this.#options.answer.path} could not be written: ${
        error instanceof Error ? error.message : String(error)
      }`;
      return;
    }
    const { wire, format, jsonLimit, answer, text } = this.#options;
    const recording = this.#options.recorder().begin(wire, format, {
      file: answer.path,
      appends,
      skipText: this.#told,
      jsonLimit,
      text,
    });
    for (const piece of this.#raw) recording.piece(piece, appends);
    this.#raw = [];
    this.#kept = [];
    this.#recording = recording;
  }

  /** The answer is whole (or cut off): what was recorded of it. */
  async finish(): Promise<RecordedAnswer> {
    if (this.#recording !== null) {
      this.#recording.end();
      return await this.#recording.finished;
    }
    this.#sse?.end();
    if (
      this.#options.format === "json" && this.#bytes > 0 && this.#bytes <= this.#options.jsonLimit
    ) {
      let data: unknown = null;
      try {
        data = JSON.parse(decoder.decode(concat(this.#raw, this.#bytes)));
      } catch { /* not JSON: nothing to read in it */ }
      this.#reader.json(data);
    }
    const facts = this.#reader.facts;
    if (this.#failure !== null) {
      return { sha256: null, bytes: this.#keptBytes, facts, error: this.#failure };
    }
    const sha256 = await sha256Of(concat(this.#kept, this.#keptBytes));
    return { sha256, bytes: this.#keptBytes, facts };
  }
}

function concat(parts: readonly Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const all = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all;
}
