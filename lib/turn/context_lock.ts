// One turn per context at a time: `contexts/<id>/turn.lock`, held locked (flock, exclusive) by
// the turn from before it looks up the context's session until its run has settled and the
// session is remembered. So six turns started at once on a new context make one session, not
// six, and two turns never resume one native session together. flock belongs to the open file:
// it conflicts between processes and between turns of one process alike, and the OS drops it
// when its holder dies, so a crash never leaves a context stuck. The file names the holder's run
// (written once the run exists), for the waiter's message.
import { ContextBusyError, ReinsError } from "../core/errors.ts";
import type { Store } from "../store/mod.ts";

const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 100;
const encoder = new TextEncoder();

export interface AcquireOptions {
  /** "wait" (default): until the holder lets go; "fail": throw ContextBusyError at once. */
  busy?: "wait" | "fail";
  /** Gives up waiting when aborted: throws a ReinsError that nothing was started. */
  signal?: AbortSignal;
  /** Called once, when the context is found busy and the turn is about to wait. */
  onBusy?: (holderRunId: string | null) => void;
}

export class ContextLock implements Disposable {
  readonly contextId: string;
  readonly #file: Deno.FsFile;
  #released = false;

  private constructor(contextId: string, file: Deno.FsFile) {
    this.contextId = contextId;
    this.#file = file;
  }

  /** Takes the context's lock, waiting for (or refusing, see AcquireOptions) another holder. */
  static async acquire(
    store: Store,
    contextId: string,
    options: AcquireOptions = {},
  ): Promise<ContextLock> {
    const path = store.layout.contextLock(contextId);
    // Before the context's directory is made private: an entry planted while others could write
    // there must stay distrusted once the directory is tightened.
    store.contexts.vet(contextId);
    store.ensureDir(store.layout.context(contextId));
    const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
    try {
      let delay = FIRST_POLL_MS;
      let told = false;
      while (!file.tryLockSync(true)) {
        const holder = holderOf(path);
        if (options.busy === "fail") throw new ContextBusyError(contextId, holder);
        if (!told) {
          told = true;
          options.onBusy?.(holder);
        }
        await pause(delay, options.signal, contextId, holder);
        delay = Math.min(MAX_POLL_MS, delay * 2);
      }
      // Whatever a previous holder wrote is not this turn's run.
      file.truncateSync(0);
      return new ContextLock(contextId, file);
    } catch (error) {
      file.close();
      throw error;
    }
  }

  /** Names the run of the turn holding the lock, for anyone who finds the context busy. */
  holdFor(runId: string): void {
    if (this.#released) return;
    try {
      this.#file.truncateSync(0);
      this.#file.seekSync(0, Deno.SeekMode.Start);
      this.#file.writeSync(encoder.encode(`${runId}\n`));
    } catch { /* only a waiter's message depends on it */ }
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    try {
      this.#file.truncateSync(0);
    } catch { /* the next holder truncates it anyway */ }
    // Unlocked before it is closed: a child being spawned meanwhile holds a copy of every
    // descriptor until it execs, and an flock lives as long as any copy of it.
    try {
      this.#file.unlockSync();
    } catch { /* closing releases it anyway */ }
    this.#file.close();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** The run id the holder wrote, or null (it has not created its run yet). */
function holderOf(path: string): string | null {
  try {
    const text = Deno.readTextFileSync(path).trim();
    return text === "" ? null : text;
  } catch {
    return null;
  }
}

function pause(
  ms: number,
  signal: AbortSignal | undefined,
  contextId: string,
  holder: string | null,
): Promise<void> {
  const stopped = () =>
    new ReinsError(
      "run_failed",
      `Stopped while waiting for context '${contextId}' (busy with run ${
        holder ?? "being started"
      }): no run was started`,
    );
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(stopped());
    const onAbort = () => {
      clearTimeout(timer);
      reject(stopped());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
