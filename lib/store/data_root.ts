// One open data root: its layout, and the state a process keeps about it between calls — the
// directories already made private, the index connection, the logs kept open. All of it is
// instance state, so any number of data roots (and of turns on them) can be open in one process
// without sharing anything. This is the zod-free base of Store (store.ts): the paths that must
// start fast (`reins runs`, the cheap reconciliation every command does) use it alone.
import { nowIso } from "../core/clock.ts";
import { CheckedDirs, readPrivateText, trustProblem } from "../core/trust.ts";
import { ensurePrivateDir } from "../core/private_dir.ts";
import { writePrivateFileAtomic, writePrivateFileAtomicAsync } from "../core/atomic_write.ts";
import { OpenLogs, PrivateLog } from "../core/private_log.ts";
import { resolvePath } from "../core/paths.ts";
import { openConnection, removeIndexFiles, type RunIndex } from "./index_db.ts";
import { Layout } from "../core/layout.ts";
import { type ListedRuns, listRunJson, type RunFilter } from "./list.ts";
import { reconcileCheaply } from "./liveness.ts";

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
  #index: RunIndex | null = null;
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
   * The index, connected but not refreshed (writers only upsert): this root's one connection,
   * opened on first use and reopened when the file was replaced.
   */
  connectIndex(): RunIndex {
    this.#throwIfClosed();
    const current = this.#index;
    if (current !== null && current.isCurrent()) return current;
    current?.close();
    this.#index = null;
    this.#index = openConnection(this);
    return this.#index;
  }

  /** The index connection, if one is open and current (nothing is opened). */
  openedIndex(): RunIndex | null {
    this.#throwIfClosed();
    return this.#index !== null && this.#index.isCurrent() ? this.#index : null;
  }

  /** Drops a damaged index and connects to a new, empty one (the next refresh fills it). */
  resetIndex(): RunIndex {
    this.#index?.close();
    this.#index = null;
    removeIndexFiles(this);
    return this.connectIndex();
  }

  /** Marks interrupted the active runs whose owner is gone (see liveness.ts). */
  reconcileCheaply(): Promise<string[]> {
    return reconcileCheaply(this);
  }

  /** The matching runs as the index stores them, zod-free (see list.ts). */
  listRunJson(filter: RunFilter = {}, options: { prefixes?: boolean } = {}): Promise<ListedRuns> {
    return listRunJson(this, filter, options);
  }

  /** Closes the index connection and the kept logs. The root can be opened again anew. */
  close(): void {
    this.#closed = true;
    this.#index?.close();
    this.#index = null;
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
