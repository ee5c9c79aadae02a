// One answer's recording as the gateway passes it on, on the gateway's own thread: each piece is
// kept with known secrets replaced (one cut between pieces too: the end of what came that may
// begin one is kept with the next piece, redacted_bytes.ts) and written to the answer's partial
// file (bodies.ts), read for what it says (SSE events through their text runs, or a whole JSON body: the streamed text, model,
// stop reason, usage) and hashed. A model's answer is mostly a few KiB: its kept pieces are held
// and hashed by WebCrypto at its end, and node:crypto is not loaded. Only an answer that passes
// HASH_INLINE_BYTES loads node:crypto (lazily, once a process: ~19 ms of CPU) and is hashed piece
// by piece from then on, so that no answer is held whole in memory however long it is. The stream
// waits for the disk only when the writing falls WRITE_AHEAD_BYTES behind.
import { importLazily } from "../core/lazy_import.ts";
import { type AnswerBody, type RecordedAnswer, sha256Of } from "./bodies.ts";
import { joined, RedactedStream } from "./redacted_bytes.ts";
import { SseReader } from "./sse.ts";
import { ResponseReader, type Wire } from "./wires.ts";

/** An answer longer than this is hashed piece by piece (node:crypto), not whole at its end. */
export const HASH_INLINE_BYTES = 256 * 1024;
/** How far the writing of an answer may fall behind passing it on before the stream waits. */
export const WRITE_AHEAD_BYTES = 4 * 1024 * 1024;

export interface TapOptions {
  wire: Wire;
  /** How the answer is read: SSE events, a whole JSON body (up to `jsonLimit`), or not at all. */
  format: "sse" | "json" | "none";
  jsonLimit: number;
  answer: AnswerBody;
  /** The text the answer streams, piece by piece. */
  text(piece: string): void;
}

type Hash = ReturnType<typeof import("node:crypto").createHash>;
type CreateHash = typeof import("node:crypto").createHash;
let createHash: CreateHash | null = null;
let loading: Promise<CreateHash> | null = null;

/** node:crypto's createHash, loaded on first use (the first answer past HASH_INLINE_BYTES). */
function loadCreateHash(): Promise<CreateHash> {
  return loading ??= importLazily<typeof import("node:crypto")>("node:crypto").then((crypto) =>
    createHash = crypto.createHash
  );
}

const decoder = new TextDecoder();

export class AnswerTap {
  readonly #options: TapOptions;
  readonly #reader: ResponseReader;
  readonly #sse: SseReader | null = null;
  /** The pieces as passed on, for a JSON answer (up to jsonLimit). */
  #json: Uint8Array[] | null;
  #jsonBytes = 0;
  /** The pieces as kept, until the answer is hashed piece by piece. */
  #kept: Uint8Array[] = [];
  #keptBytes = 0;
  #hash: Hash | null = null;
  #hashFailure: string | null = null;
  /** An SSE answer's decoder, as it streams. */
  readonly #decoder = new TextDecoder();
  /** What is kept of the pieces: known secrets replaced, even one cut between pieces. */
  readonly #secrets = new RedactedStream();

  constructor(options: TapOptions) {
    this.#options = options;
    this.#reader = new ResponseReader(options.wire, options.text);
    this.#json = options.format === "json" ? [] : null;
    if (options.format === "sse") {
      const reader = this.#reader;
      this.#sse = new SseReader(
        (name, data) => reader.eventText(name, data),
        (text, from, limit) => reader.textRun(text, from, limit),
      );
    }
  }

  /**
   * One piece, as it was passed on. Returns a promise for the stream to wait for when the writing
   * is too far behind (or node:crypto is being loaded), else null.
   */
  piece(bytes: Uint8Array): Promise<void> | null {
    // An SSE answer is decoded once: read as events, and looked through for secrets.
    const sse = this.#sse;
    const text = sse === null ? null : this.#decoder.decode(bytes, { stream: true });
    const kept = this.#secrets.piece(bytes, text ?? undefined);
    const answer = this.#options.answer;
    if (text !== null) sse!.pushText(text);
    if (this.#json !== null && this.#jsonBytes + bytes.length <= this.#options.jsonLimit) {
      this.#json.push(bytes);
      this.#jsonBytes += bytes.length;
    }
    const hashing = this.#keep(kept);
    const behind = answer.pendingBytes > WRITE_AHEAD_BYTES ? answer.written() : null;
    if (hashing === null) return behind;
    return behind === null ? hashing : Promise.all([hashing, behind]).then(() => {});
  }

  /** Writes and hashes (or holds, to hash at the end) a part of the answer as it is kept. */
  #keep(kept: Uint8Array): Promise<void> | null {
    if (kept.length === 0) return null;
    this.#options.answer.write(kept);
    this.#keptBytes += kept.length;
    if (this.#hash !== null) this.#hash.update(kept);
    else {
      this.#kept.push(kept);
      if (this.#keptBytes > HASH_INLINE_BYTES && this.#hashFailure === null) {
        return this.#hashFromNowOn();
      }
    }
    return null;
  }

  /** Hashes what is held, and every piece after it as it comes (node:crypto, loaded if need be). */
  #hashFromNowOn(): Promise<void> | null {
    const start = (make: CreateHash) => {
      if (this.#hash !== null) return;
      this.#hash = make("sha256");
      for (const part of this.#kept) this.#hash.update(part);
      this.#kept = [];
    };
    if (createHash !== null) {
      start(createHash);
      return null;
    }
    return loadCreateHash().then(start, (error) => {
      this.#hashFailure = `node:crypto could not be loaded to hash it: ${
        error instanceof Error ? error.message : String(error)
      }`;
      this.#kept = [];
    });
  }

  /** The answer is whole (or cut off): what was recorded of it. */
  async finish(): Promise<RecordedAnswer> {
    // The end that was held back, in case a secret began in it (none did: it is kept as it came).
    await this.#keep(this.#secrets.end());
    if (this.#sse !== null) {
      this.#sse.pushText(this.#decoder.decode());
      this.#sse.end();
    }
    if (this.#json !== null && this.#jsonBytes > 0) {
      let data: unknown = null;
      try {
        data = JSON.parse(decoder.decode(joined(this.#json)));
      } catch { /* not JSON: nothing to read in it */ }
      this.#json = null;
      this.#reader.json(data);
    }
    const facts = this.#reader.facts;
    const bytes = this.#keptBytes;
    if (this.#hashFailure !== null) {
      return { sha256: null, bytes, facts, error: this.#hashFailure };
    }
    // A hash being started (node:crypto loading as the answer ended) is waited for.
    if (this.#hash === null && this.#keptBytes > HASH_INLINE_BYTES) {
      await this.#hashFromNowOn();
    }
    const sha256 = this.#hash !== null
      ? this.#hash.digest("hex")
      : await sha256Of(joined(this.#kept));
    this.#kept = [];
    return { sha256, bytes, facts };
  }
}
