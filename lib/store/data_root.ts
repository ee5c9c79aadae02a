// One open data root: its layout, and the state a process keeps about it between calls — the
// directories already made private, the logs kept open, and what the modules below keep open on
// it (the index connection, index_db.ts). All of it is instance state, so any number of data
// roots (and of turns on them) can be open in one process without sharing anything. Every module
// that touches the data root takes this object and goes through it: its layout for paths, its
// trust checks for reads, its atomic writes and its logs. It knows nothing of runs, the index or
// any other store module (they all build on it); Store (store.ts) is the whole store on top, and
// the paths that must start fast (`reins runs`, the cheap reconciliation) use this alone.
import { nowIso } from "../core/clock.ts";
import { writePrivateFileAtomic, writePrivateFileAtomicAsync } from "../core/atomic_write.ts";
import { Layout } from "../core/layout.ts";
import { resolvePath } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/private_dir.ts";
import { OpenLogs, PrivateLog } from "../core/private_log.ts";
import { CheckedDirs, readPrivateText, trustProblem } from "../core/trust.ts";

export interface DataRootOptions {
  /**
   * Receives what the store has to tell people and cannot put anywhere else (a context it could
   * not save); it is also appended to logs/reins.log. Default: the log alone.
   */
  warn?: (message: string) => void;
}

export class DataRoot implements Disposable {
  /** The data root, absolute. */
  readonly home: string;
  readonly layout: Layout;
  readonly #checked = new CheckedDirs();
  readonly #logs: OpenLogs;
  readonly #warn: (message: string) => void;
  readonly #said = new Set<string>();
  readonly #kept = new Map<symbol, Disposable>();
  #closed = false;

  constructor(home: string, options: DataRootOptions = {}) {
    this.home = resolvePath(home);
    this.layout = new Layout(this.home);
    this.#logs = new OpenLogs(this.home, this.#checked);
    this.#warn = options.warn ?? (() => {});
  }

  /** Makes `dir` (the root or a directory below it) exist, 0700 (see ensurePrivateDir). */
  ensureDir(dir: string): string[] {
    return ensurePrivateDir(this.home, dir, this.#checked);
  }

  /**
   * Notes that `dir`, below a directory already checked, was just made 0700 by this process (a
   * run's directory, renamed into place with its lock held), so writes into it need not check it
   * again: every run's first write did, three lstats and a chmod (opening a run's log took
   * 1.2–3 ms, 0.6 without, by performance marks in the whole `reins run` of `deno task bench
   * engine`, on a busy machine).
   */
  madePrivate(dir: string): void {
    this.#checked.madePrivate.add(resolvePath(dir, this.home));
  }

  /** Replaces a file below the root atomically, 0600 (see writePrivateFileAtomic). */
  writeFileAtomic(path: string, data: string | Uint8Array, options?: { durable?: boolean }): void {
    writePrivateFileAtomic(this.home, path, data, this.#checked, options);
  }

  /** writeFileAtomic, durable, without holding the thread (see writePrivateFileAtomicAsync). */
  writeFileAtomicAsync(path: string, data: string | Uint8Array): Promise<void> {
    return writePrivateFileAtomicAsync(this.home, path, data, this.#checked);
  }

  /** A file below the root as text, or null when it does not exist (links out refused). */
  readText(path: string): string | null {
    return readPrivateText(this.home, path, this.#checked);
  }

  /** Why a file below the root cannot be trusted, or null (see trustProblem). */
  trustProblem(path: string): string | null {
    return trustProblem(this.home, path, this.#checked);
  }

  /** Opens a private append-only file below the root. */
  openLog(path: string): PrivateLog {
    return PrivateLog.open(this.home, path, this.#checked);
  }

  /**
   * Creates a private log below the root that must not exist yet, at `at` for now (see
   * PrivateLog.create): a run's events.jsonl, made in its staging directory.
   */
  createLog(path: string, at?: string): PrivateLog {
    return PrivateLog.create(this.home, path, at);
  }

  /** Appends a line to a private log below the root, keeping the handle for the next line. */
  appendLine(path: string, line: string): void {
    this.#logs.append(path, line);
  }

  /**
   * True the first time this data root is asked about `key`, false after: for what a long-lived
   * process (a server, a suite) says once however many turns meet it, per store rather than per
   * process, so that two stores in one process (tests, two data roots) each say it.
   */
  firstTime(key: string): boolean {
    if (this.#said.has(key)) return false;
    this.#said.add(key);
    return true;
  }

  /** Tells people `message` (see DataRootOptions.warn) and keeps it in logs/reins.log. */
  warn(message: string): void {
    this.#warn(message);
    try {
      this.appendLine(this.layout.log(), `${nowIso()} ${message}`);
    } catch { /* the log is as unwritable as the rest */ }
  }

  /**
   * What a module below keeps open on this root under its own `key` between calls (index_db.ts
   * keeps the index connection so), or null. Throws StoreClosedError once the root is closed.
   */
  kept<T extends Disposable>(key: symbol): T | null {
    this.#throwIfClosed();
    return (this.#kept.get(key) as T | undefined) ?? null;
  }

  /** Keeps `value` under `key` until close(), disposing of what was kept there; null forgets. */
  keep(key: symbol, value: Disposable | null): void {
    this.#throwIfClosed();
    const previous = this.#kept.get(key);
    this.#kept.delete(key);
    previous?.[Symbol.dispose]();
    if (value !== null) this.#kept.set(key, value);
  }

  /** Closes what is kept open on it (the index connection) and the kept logs. It can be opened again anew. */
  close(): void {
    this.#closed = true;
    for (const kept of this.#kept.values()) kept[Symbol.dispose]();
    this.#kept.clear();
    this.#logs.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #throwIfClosed(): void {
    if (this.#closed) throw new StoreClosedError(this.home);
  }
}

/** A store used after close(): a bug in the caller, never a state of the data root. */
export class StoreClosedError extends Error {
  constructor(home: string) {
    super(`The store of ${home} was used after it was closed`);
    this.name = "StoreClosedError";
  }
}
