// The bodies of a run's model calls, kept out of the event log: each request and each answer is a
// file under the run's `wire/` directory named by its SHA-256 (so a request sent twice is kept
// once), written as it passes, never held whole in memory for an answer, and durable before the
// run settles (`flushed()`). Known secrets are replaced in them, and nothing else is changed.
import type { DataRoot, WireBody } from "../store/mod.ts";
import { knownSecrets } from "../core/redact.ts";
import { importLazily } from "../core/lazy_import.ts";
import { joinPath } from "../core/paths.ts";
import { syncDirectoryAsync } from "../core/atomic_write.ts";

type CreateHash = typeof import("node:crypto").createHash;
let createHash: CreateHash | null = null;

/** Loads the hashing (node:crypto, ~19 ms of CPU) once, before the first body. */
export async function loadBodyHashing(): Promise<void> {
  createHash ??= (await importLazily<typeof import("node:crypto")>("node:crypto")).createHash;
}

function hasher() {
  if (createHash === null) throw new Error("node:crypto is not loaded yet (loadBodyHashing)");
  return createHash("sha256");
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

  /** A request's body: named now, written in the background. */
  request(bytes: Uint8Array): WireBody {
    const kept = redactedBytes(bytes);
    const sha256 = hasher().update(kept).digest("hex");
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
 * there, as evidence, should reins die mid-stream), renamed to its SHA-256 once it is whole.
 */
export class AnswerBody {
  readonly #root: DataRoot;
  readonly #runId: string;
  readonly #hash = hasher();
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

  /** Adds a piece (written after the ones before it); returns once it is handed to the disk. */
  write(piece: Uint8Array): Promise<void> {
    const kept = redactedBytes(piece);
    this.#hash.update(kept);
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

  /** The body is whole (or cut off): it is synced and named; null when it was empty. */
  finish(): Promise<WireBody | null> {
    this.#done ??= (async () => {
      try {
        await this.#writing;
        const file = this.#file;
        if (file === null) return null;
        await file.sync();
        file.close();
        this.#file = null;
        const sha256 = this.#hash.digest("hex");
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
