// The bodies of a run's model calls, kept out of the event log: each request and each answer is a
// file under the run's `wire/` directory named by its SHA-256 (so a request sent twice is kept
// once), written as it passes, never held whole in memory for an answer, and durable before the
// run settles (`flushed()`). Known secrets are replaced in them, and nothing else is changed.
import type { DataRoot, WireBody } from "../store/mod.ts";
import { knownSecrets } from "../core/redact.ts";
import { joinPath } from "../core/paths.ts";
import { syncDirectoryAsync } from "../core/atomic_write.ts";

/** SHA-256 of `bytes` as hex, by WebCrypto (off this thread; node:crypto is never loaded here). */
async function sha256Of(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** `bytes` with every known secret replaced, when it holds one (text only; the same bytes else). */
export function redactedBytes(bytes: Uint8Array): Uint8Array {
  if (knownSecrets.size === 0 || bytes.length === 0) return bytes;
  const text = decoder.decode(bytes);
  if (!knownSecrets.holdsSecret(text)) return bytes;
  return encoder.encode(knownSecrets.exact(text));
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

  #track(work: Promise<void>): void {
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
      this.#track(this.#root.writeFileAtomicAsync(path, kept));
    }
    return { sha256, bytes: kept.length };
  }

  /** An answer's body, written piece by piece as it streams. */
  answer(callId: string): AnswerBody {
    return new AnswerBody(this.#root, this.#runId, callId, (work) => this.#track(work), (sha) => {
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
 * An answer being written: its pieces go to `.call-N.partial` in the run's wire/ directory (left
 * there, as evidence, should reins die mid-stream), renamed to its SHA-256 once it is whole (the
 * recorder hashes it, off this thread: recorder.ts).
 */
export class AnswerBody {
  readonly #root: DataRoot;
  readonly #runId: string;
  readonly #partial: string;
  readonly #claim: (sha: string) => boolean;
  #file: Deno.FsFile | null = null;
  #writing: Promise<void> = Promise.resolve();
  #bytes = 0;
  #pending = 0;
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
    this.#partial = joinPath(root.layout.wire(runId), `.${callId}.partial`);
    const done = new Promise<WireBody | null>((resolve) => this.#finished.resolve = resolve);
    track(done.then(() => {}));
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Bytes handed to write() and not yet on their way to the disk. */
  get pendingBytes(): number {
    return this.#pending;
  }

  /**
   * Adds a piece as it is kept (redactedBytes), written after the ones before it; returns once
   * it is handed to the disk.
   */
  write(kept: Uint8Array): Promise<void> {
    this.#bytes += kept.length;
    this.#file ??= this.#root.createFile(this.#partial);
    const file = this.#file;
    this.#pending += kept.length;
    this.#writing = this.#writing.then(async () => {
      let written = 0;
      while (written < kept.length) written += await file.write(kept.subarray(written));
      this.#pending -= kept.length;
    });
    return this.#writing;
  }

  /**
   * The body is whole (or cut off) and `sha256` is the hash of what was written: it is synced and
   * named so; null when it was empty.
   */
  finish(sha256: string | null): Promise<WireBody | null> {
    this.#done ??= (async () => {
      try {
        await this.#writing;
        const file = this.#file;
        if (file === null) return null;
        await file.sync();
        file.close();
        this.#file = null;
        // Not hashed (the recorder failed): the partial file stays, as after a crash.
        if (sha256 === null) throw new Error(`it was not hashed (${this.#partial} kept as it is)`);
        const path = this.#root.layout.wireBody(this.#runId, sha256);
        if (this.#claim(sha256)) await Deno.rename(this.#partial, path);
        else await Deno.remove(this.#partial);
        return { sha256, bytes: this.#bytes };
      } finally {
        try {
          this.#file?.close();
        } catch { /* closed */ }
      }
    })();
    this.#done.then(this.#finished.resolve, () => this.#finished.resolve(null));
    return this.#done;
  }
}
