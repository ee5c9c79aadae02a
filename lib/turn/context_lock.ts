// One turn per context at a time: the context's directory, `contexts/<id>/`, held locked (flock,
// exclusive, on the directory's own descriptor) by the turn from before it looks up the context's
// session until its run has settled and the session is remembered. So six turns started at once
// on a new context make one session, not six, and two turns never resume one native session
// together. flock belongs to the open file: it conflicts between processes and between turns of
// one process alike, and the OS drops it when its holder dies, so a crash never leaves a context
// stuck. It makes no file (a lock file was a new context's second file, the dearest thing a turn
// makes: docs/engine.md "What a turn writes and syncs"). A waiter learns the holder's run from
// the index: the context's active run whose owner is alive (before the holder has made its run,
// none). An older reins locked `contexts/<id>/turn.lock` (and wrote its run there): where that
// file is, it is locked too, so a turn of an older reins running meanwhile is waited for.
import { releaseLocks } from "../core/flock.ts";
import { ContextBusyError, ReinsError } from "../core/errors.ts";
import type { Store } from "../store/mod.ts";

const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 100;
/** How many of a context's newest active runs a waiter looks through for the holder's. */
const HOLDER_CANDIDATES = 10;

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
  /**
   * Whether this lock made the context's directory: a new context, with nothing in it — no
   * session to look up (nor to vet), no older reins's turn.lock.
   */
  readonly made: boolean;
  /** The context's directory, locked; and an older reins's turn.lock, when there is one. */
  readonly #files: Deno.FsFile[];
  #released = false;

  private constructor(contextId: string, files: Deno.FsFile[], made: boolean) {
    this.contextId = contextId;
    this.#files = files;
    this.made = made;
  }

  /** Takes the context's lock, waiting for (or refusing, see AcquireOptions) another holder. */
  static async acquire(
    store: Store,
    contextId: string,
    options: AcquireOptions = {},
  ): Promise<ContextLock> {
    const dir = store.layout.context(contextId);
    let told = false;
    let waited = false;
    for (let attempt = 0;; attempt++) {
      // A new context's directory is made at once under contexts/ (once this store has made
      // that private), with nothing in it to look at. Otherwise the entry is vetted before any
      // directory on its way is made private: one planted while others could write there must
      // stay distrusted once the directories are tightened. Made again after the first attempt:
      // the one locked was removed (a context forgotten).
      const made = store.makeDir(dir, { again: attempt > 0 });
      if (!made) {
        store.contexts.vet(contextId);
        store.ensureDir(dir);
        store.ensureDir(store.layout.contexts());
      }
      const files: Deno.FsFile[] = [];
      try {
        try {
          files.push(Deno.openSync(dir, { read: true }));
        } catch (error) {
          // Removed since this store made it (a context forgotten): made again.
          if (error instanceof Deno.errors.NotFound && attempt === 0) continue;
          throw error;
        }
        // An older reins's lock is in a context it used; one made just now has none (an older
        // reins that starts a turn on it meanwhile is not kept out, as on any context a newer
        // reins made: docs/engine.md).
        const legacy = made ? null : openIfThere(store.layout.contextLock(contextId));
        if (legacy !== null) files.push(legacy);
        for (const file of files) {
          let delay = FIRST_POLL_MS;
          while (!file.tryLockSync(true)) {
            waited = true;
            const holder = holderOf(store, contextId);
            if (options.busy === "fail") throw new ContextBusyError(contextId, holder);
            if (!told) {
              told = true;
              options.onBusy?.(holder);
            }
            await pause(delay, options.signal, contextId, holder);
            delay = Math.min(MAX_POLL_MS, delay * 2);
          }
        }
        // The directory locked is still the context's (not one removed while this turn waited).
        // A directory another turn held meanwhile has what that turn wrote in it.
        if (sameFile(files[0], dir)) return new ContextLock(contextId, files, made && !waited);
      } catch (error) {
        releaseLocks(files);
        throw error;
      }
      releaseLocks(files);
    }
  }

  /** The context's directory, held open (and locked) until release(). */
  get directory(): Deno.FsFile {
    return this.#files[0];
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    releaseLocks(this.#files);
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/**
 * The file at `path` opened, or null when there is none: looked at first (an lstat), since there
 * is none in nearly every context, and opening a missing file costs more than the look (Deno
 * walks an opened path's segments, a readlink each, to check it against the sandbox).
 */
function openIfThere(path: string): Deno.FsFile | null {
  try {
    Deno.lstatSync(path);
    return Deno.openSync(path, { read: true });
  } catch {
    return null;
  }
}

function sameFile(file: Deno.FsFile, path: string): boolean {
  try {
    const held = file.statSync();
    const now = Deno.statSync(path);
    return held.ino === now.ino && held.dev === now.dev;
  } catch {
    return false;
  }
}

/**
 * The run of the turn holding the context: its newest active run whose owner is alive (a turn
 * holds its context for its run's whole life), or what an older reins wrote in turn.lock; null
 * before the holder has made its run.
 */
function holderOf(store: Store, contextId: string): string | null {
  try {
    for (const run of store.listRuns({ contextId, active: true, limit: HOLDER_CANDIDATES })) {
      if (store.ownerState(run.id) === "alive") return run.id;
    }
  } catch { /* only a waiter's message depends on it */ }
  try {
    const text = Deno.readTextFileSync(store.layout.contextLock(contextId)).trim();
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
