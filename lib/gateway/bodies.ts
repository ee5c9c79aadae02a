// The bodies of a run's model calls, kept out of the event log: each request and each answer is a
// file under the run's `wire/` directory named by its SHA-256 (so a request sent twice is kept
// once), an answer written as it passes (read and hashed by answer_tap.ts), never held whole in
// memory, and durable before the run settles (`flushed()`). Known secrets are replaced in them, and nothing else is changed.
import type { DataRoot, WireBody } from "../store/mod.ts";
import type { ResponseFacts } from "./wires.ts";
import { redactedBytes } from "./redacted_bytes.ts";
import { joinPath, resolvePath } from "../core/paths.ts";
import { syncDirectoryAsync } from "../core/atomic_write.ts";
import { onceAfter } from "../core/clock.ts";

/** SHA-256 of `bytes` as hex, by WebCrypto (off this thread; node:crypto is never loaded here). */
export async function sha256Of(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * What was made of a whole answer: its hash and size as kept, what it said, and why it is not on
 * disk whole if it is not (null sha256: it was not hashed).
 */
export interface RecordedAnswer {
  sha256: string | null;
  bytes: number;
  facts: ResponseFacts;
  error?: string;
}

/** One run's bodies. */
export class RunBodies {
  readonly #root: DataRoot;
  readonly #runId: string;
  readonly #written = new Set<string>();
  readonly #pending = new Set<Promise<void>>();
  #failure: unknown = null;

  constructor(root: DataRoot, runId: string) {
    this.#root = root;
    this.#runId = runId;
  }

  /** Work flushed() waits for (a call's recording, from its answer's head to its end). */
  track(work: Promise<void>): void {
    const tracked = work.catch((error) => {
      this.#failure ??= error;
    }).finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  /** A request's body: named once it is hashed, written in the background. */
  async request(bytes: Uint8Array): Promise<WireBody> {
    const kept = redactedBytes(bytes);
    const sha256 = await sha256Of(kept);
    if (!this.#written.has(sha256)) {
      this.#written.add(sha256);
      const path = this.#root.layout.wireBody(this.#runId, sha256);
      this.track(this.#root.writeFileAtomicAsync(path, kept));
    }
    return { sha256, bytes: kept.length };
  }

  /** An answer's body, written piece by piece as it streams. */
  answer(callId: string): AnswerBody {
    return new AnswerBody(this.#root, this.#runId, callId, (work) => this.track(work), (sha) => {
      if (this.#written.has(sha)) return false;
      this.#written.add(sha);
      return true;
    });
  }

  /** Resolves once every body begun is on disk; rejects with the first write that failed. */
  async flushed(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
    if (this.#failure !== null) throw this.#failure;
    // The answers were renamed into place: the names are made durable with the directory.
    if (this.#written.size > 0) await syncDirectoryAsync(this.#root.layout.wire(this.#runId));
  }
}

/**
 * Pieces of an answer are gathered to this size before they are written: one write of 1 MiB
 * costs the passing thread ~3 ms of CPU per 10 MB where sixteen of 64 KiB (a stream's pieces)
 * cost ~14-27 ms, measured here (Deno 2.9, ext4), for a copy of the pieces (~1 ms per 10 MB).
 */
export const WRITE_BATCH_BYTES = 1024 * 1024;
/** A batch's buffer, reused once its write is done (a new one costs ~5-14 ms per 10 MiB here). */
const BATCH_BUFFER_BYTES = WRITE_BATCH_BYTES + 256 * 1024;
/** Pieces gathered are written this long after the first of them at the latest. */
export const WRITE_AFTER_MS = 100;

/**
 * An answer being written to `.call-N.partial` in the run's wire/ directory (left there, as
 * evidence, should reins die mid-stream: all of the answer but its last pieces, those gathered
 * for the next write — less than WRITE_BATCH_BYTES, of the last WRITE_AFTER_MS — and those
 * waiting for the disk), piece by piece as answer_tap.ts keeps them. Once it is whole the file
 * is renamed to its SHA-256.
 */
export class AnswerBody {
  readonly #root: DataRoot;
  readonly #runId: string;
  readonly #claim: (sha: string) => boolean;
  /** The partial file's absolute path, in the run's wire/ directory (made private here). */
  readonly path: string;
  #file: Deno.FsFile | null = null;
  #writing: Promise<void> = Promise.resolve();
  #pending = 0;
  /** Pieces gathered for the next write (their bytes counted in #pending). */
  #batch: Uint8Array[] = [];
  #batchBytes = 0;
  /** Writes the batch WRITE_AFTER_MS after its first piece (null: no batch). */
  #batchTimer: { cancel(): void } | null = null;
  /** Batch buffers whose writes are done, for the next batches (the answer's own, while it lasts). */
  #spare: Uint8Array[] = [];
  #done: Promise<WireBody | null> | null = null;
  readonly #finished: { resolve: (body: WireBody | null) => void } = { resolve: () => {} };

  constructor(
    root: DataRoot,
    runId: string,
    callId: string,
    track: (work: Promise<void>) => void,
    claim: (sha: string) => boolean,
  ) {
    this.#root = root;
    this.#runId = runId;
    this.#claim = claim;
    const dir = root.layout.wire(runId);
    root.ensureDir(dir);
    this.path = resolvePath(joinPath(dir, `.${callId}.partial`), root.home);
    const done = new Promise<WireBody | null>((resolve) => this.#finished.resolve = resolve);
    track(done.then(() => {}));
  }

  /** Bytes handed to write() and not yet on their way to the disk (gathered or queued). */
  get pendingBytes(): number {
    return this.#pending;
  }

  /**
   * Adds a piece as it is kept (redactedBytes), written after the ones before it: gathered, and
   * written with them once WRITE_BATCH_BYTES are, WRITE_AFTER_MS after the first, or as the
   * answer ends. The piece is not copied until then: the caller must not change it.
   */
  write(kept: Uint8Array): void {
    if (kept.length === 0) return;
    this.#file ??= this.#root.createFile(this.path);
    this.#pending += kept.length;
    this.#batchTimer ??= onceAfter(WRITE_AFTER_MS, () => this.#writeBatch());
    this.#batch.push(kept);
    this.#batchBytes += kept.length;
    if (this.#batchBytes >= WRITE_BATCH_BYTES) this.#writeBatch();
  }

  /** Writes the pieces gathered, as one, after those written before. */
  #writeBatch(): void {
    this.#batchTimer?.cancel();
    this.#batchTimer = null;
    if (this.#batchBytes === 0 || this.#file === null) return;
    const parts = this.#batch;
    const length = this.#batchBytes;
    this.#batch = [];
    this.#batchBytes = 0;
    // One piece is written as it is; more are copied into a buffer of the answer's, reused.
    let buffer: Uint8Array | null = null;
    let bytes = parts[0];
    if (parts.length > 1) {
      buffer = length <= BATCH_BUFFER_BYTES
        ? this.#spare.pop() ?? new Uint8Array(BATCH_BUFFER_BYTES)
        : new Uint8Array(length);
      bytes = buffer.subarray(0, length);
      let at = 0;
      for (const part of parts) {
        bytes.set(part, at);
        at += part.length;
      }
    }
    const file = this.#file;
    this.#writing = this.#writing.then(async () => {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      this.#pending -= bytes.length;
      if (buffer?.length === BATCH_BUFFER_BYTES && this.#file !== null) this.#spare.push(buffer);
    });
  }

  /**
   * Resolves once every piece written so far is handed to the disk (a failed write too: finish
   * says so), for a stream that fell behind to wait for.
   */
  written(): Promise<void> {
    this.#writeBatch();
    return this.#writing.catch(() => {});
  }

  /** Resolves once what was written is on disk and the file closed; rejects when a write failed. */
  async #close(): Promise<void> {
    this.#writeBatch();
    const file = this.#file;
    this.#file = null;
    this.#spare = [];
    try {
      await this.#writing;
      await file?.sync();
    } finally {
      file?.close();
    }
  }

  /**
   * The body is whole (or cut off) and written as `recorded` says: it is named by its SHA-256;
   * null when it was empty. Rejects, leaving the partial file as it is, when it was not written
   * or hashed whole.
   */
  finish(recorded: RecordedAnswer): Promise<WireBody | null> {
    this.#done ??= (async () => {
      await this.#close().catch((error) => {
        const why = error instanceof Error ? error.message : String(error);
        recorded = { ...recorded, error: `${this.path} could not be written: ${why}` };
      });
      const { sha256, bytes, error } = recorded;
      if (error !== undefined || sha256 === null) {
        throw new Error(error ?? `it was not hashed (${this.path} kept as it is)`);
      }
      if (bytes === 0) return null;
      const path = this.#root.layout.wireBody(this.#runId, sha256);
      if (this.#claim(sha256)) await Deno.rename(this.path, path);
      else await Deno.remove(this.path);
      return { sha256, bytes };
    })();
    this.#done.then(this.#finished.resolve, () => this.#finished.resolve(null));
    return this.#done;
  }
}
