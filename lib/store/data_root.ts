// One open data root: its layout, and the state a process keeps about it between calls — the
// directories already made private, the logs kept open, and what the modules below keep open on
// it (the index connection, index_db.ts). All of it is instance state, so any number of data
// roots (and of turns on them) can be open in one process without sharing anything. Every module
// that touches the data root takes this object and goes through it: its layout for paths, its
// trust checks for reads, its atomic writes and its logs. It knows nothing of runs, the index or
// any other store module (they all build on it); Store (store.ts) is the whole store on top, and
// the paths that must start fast (`reins runs`, the cheap reconciliation) use this alone.
import { nowIso } from "../core/clock.ts";
import {
  createPrivateFileAsync,
  openNewPrivateFile,
  syncDirectory,
  syncDirectoryAsync,
  writePrivateFileAtomic,
  writePrivateFileAtomicAsync,
} from "../core/atomic_write.ts";
import { Layout } from "../core/layout.ts";
import { dirnameOf, isInside, resolvePath } from "../core/paths.ts";
import { ensurePrivateDir, madePrivate as madeDirPrivate } from "../core/private_dir.ts";
import { OpenLogs, PrivateLog } from "../core/private_log.ts";
import { CheckedDirs, openPrivateFile, readPrivateText, trustProblem } from "../core/trust.ts";

/** What readText throws for a file someone else could have written. */
export { UntrustedFileError } from "../core/trust.ts";

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
  /** Directories at or below which the directories this root makes are noted (noteMadeDirs). */
  readonly #noting: string[] = [];
  /**
   * Directories made by this root (below one it notes) whose name in their parent is not synced
   * yet, with the sync of the parent once one is under way.
   */
  readonly #unsynced = new Map<string, Promise<void> | null>();
  #closed = false;

  constructor(home: string, options: DataRootOptions = {}) {
    this.home = resolvePath(home);
    this.layout = new Layout(this.home);
    this.#logs = new OpenLogs(this.home, this.#checked);
    this.#warn = options.warn ?? (() => {});
  }

  /**
   * Makes `dir` (the root or a directory below it) exist, 0700 (see ensurePrivateDir). A
   * directory this root already made is not looked at again, unless `again` (one that may have
   * been removed since).
   */
  ensureDir(dir: string, options: { again?: boolean } = {}): string[] {
    if (options.again) this.#checked.madePrivate.delete(resolvePath(dir, this.home));
    if (this.#noting.length === 0) return ensurePrivateDir(this.home, dir, this.#checked);
    const made: string[] = [];
    try {
      return ensurePrivateDir(this.home, dir, this.#checked, made);
    } finally {
      for (const path of made) {
        if (this.#noting.some((noted) => isInside(path, noted))) this.#unsynced.set(path, null);
      }
    }
  }

  /**
   * Makes `dir`, a new name in a directory this root made private before, 0700: true when this
   * call made it — so nothing can be in it yet, and nothing in it needs looking at. One mkdir,
   * where ensureDir would look at the root and every segment first (an lstat each, and an
   * exception for the missing one), as stageRun makes a run's directory. False, with nothing
   * done, when it was there already, or this root knows it (made or checked it before) and not
   * `again` (one that may have been removed since), or its parent is not one this root has made
   * private (yet, or any more): the caller then looks at it all, as ensureDir does.
   */
  makeDir(dir: string, options: { again?: boolean } = {}): boolean {
    const absDir = resolvePath(dir, this.home);
    if (options.again) this.#checked.madePrivate.delete(absDir);
    else if (this.#checked.madePrivate.has(absDir)) return false;
    const parent = dirnameOf(absDir);
    if (!this.#checked.madePrivate.has(parent)) return false;
    try {
      Deno.mkdirSync(absDir, { mode: 0o700 });
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      // The parent was removed since this root made it.
      this.#checked.madePrivate.delete(parent);
      return false;
    }
    madeDirPrivate(absDir);
    this.#checked.madePrivate.add(absDir);
    if (this.#noting.some((noted) => isInside(absDir, noted))) this.#unsynced.set(absDir, null);
    return true;
  }

  /**
   * From now on, each directory this root makes at or below `dir` (the directory itself
   * included) is remembered until syncMadeDirs() makes its name durable in its parent. For a
   * store whose files must survive a power cut with the directories they are in (a context's
   * session, contexts.ts): a new directory costs one fsync of its parent, once; one made before,
   * or by another process, costs nothing.
   */
  noteMadeDirs(dir: string): void {
    const noted = resolvePath(dir, this.home);
    if (!this.#noting.includes(noted)) this.#noting.push(noted);
  }

  /**
   * Makes durable the names of the directories this root made (see noteMadeDirs) on the way to
   * `dir`: `dir` and its ancestors, each one's parent fsynced once, on Deno's blocking pool.
   * Callers at once share the fsyncs (syncDirectoryAsync), and one who calls while the sync of a
   * directory is under way waits for that sync. Nothing to do (no fsync) for a directory made
   * before, or by another process.
   */
  async syncMadeDirs(dir: string): Promise<void> {
    if (this.#unsynced.size === 0) return;
    const target = resolvePath(dir, this.home);
    const waits: Promise<void>[] = [];
    for (const [made, syncing] of this.#unsynced) {
      if (!isInside(target, made)) continue;
      if (syncing !== null) {
        waits.push(syncing);
        continue;
      }
      const started: Promise<void> = syncDirectoryAsync(dirnameOf(made)).finally(() => {
        // Made again meanwhile (removed, then made anew): that one still needs its sync.
        if (this.#unsynced.get(made) === started) this.#unsynced.delete(made);
      });
      this.#unsynced.set(made, started);
      waits.push(started);
    }
    await Promise.all(waits);
  }

  /** syncMadeDirs(), holding the thread for the fsyncs. */
  syncMadeDirsNow(dir: string): void {
    if (this.#unsynced.size === 0) return;
    const target = resolvePath(dir, this.home);
    for (const made of [...this.#unsynced.keys()]) {
      if (!isInside(target, made)) continue;
      syncDirectory(dirnameOf(made));
      this.#unsynced.delete(made);
    }
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

  /**
   * Replaces a file below the root atomically, 0600, fsynced with its directory unless not
   * `durable`; text has its secrets redacted, bytes are written as they are. `sweep: false`
   * skips looking for a killed writer's temp files (see writePrivateFileAtomic).
   */
  writeFileAtomic(
    path: string,
    data: string | Uint8Array,
    options?: { durable?: boolean; sweep?: boolean },
  ): void {
    this.#ensureNoted(path);
    writePrivateFileAtomic(this.home, path, data, this.#checked, options);
  }

  /**
   * writeFileAtomic, durable, without holding the thread (see writePrivateFileAtomicAsync):
   * `sweep: false` as for writeFileAtomic; `dirHandle`, the file's directory held open by the
   * caller, is what is fsynced after the rename.
   */
  writeFileAtomicAsync(
    path: string,
    data: string | Uint8Array,
    options?: { sweep?: boolean; dirHandle?: Deno.FsFile },
  ): Promise<void> {
    this.#ensureNoted(path);
    return writePrivateFileAtomicAsync(this.home, path, data, this.#checked, options);
  }

  /**
   * Before a write below a noted directory (noteMadeDirs): its directory made here, so that one
   * the write makes is noted too (the write itself then finds it made and looks no further).
   */
  #ensureNoted(path: string): void {
    if (this.#noting.length === 0) return;
    const dir = dirnameOf(resolvePath(path, this.home));
    if (this.#noting.some((noted) => isInside(dir, noted))) this.ensureDir(dir);
  }

  /**
   * Creates a file below the root anew from what `fill` writes into it, fsynced, 0600; fails
   * (AlreadyExists) rather than replace a file of that name (see createPrivateFileAsync).
   */
  createFileAsync(path: string, fill: (file: Deno.FsFile) => Promise<void>): Promise<void> {
    return createPrivateFileAsync(this.home, path, fill, this.#checked);
  }

  /**
   * Opens a new file below the root for writing, 0600, its directory made private first; fails
   * when the name is taken at all (a link included). The caller closes it.
   */
  createFile(path: string): Deno.FsFile {
    const absPath = resolvePath(path, this.home);
    this.ensureDir(dirnameOf(absPath));
    return openNewPrivateFile(absPath, { write: true });
  }

  /**
   * A file below the root as text, or null when it does not exist. A link out of the root is
   * refused, and so is a file someone else could have written (UntrustedFileError).
   */
  readText(path: string): string | null {
    return readPrivateText(this.home, path, this.#checked);
  }

  /**
   * A file below the root opened for reading, or null when it does not exist; the same checks
   * as readText. Closed by disposing of it.
   */
  openForReading(path: string): Deno.FsFile | null {
    return openPrivateFile(this.home, path, this.#checked);
  }

  /** The entries of a directory below the root, as listed; none when it does not exist. */
  list(dir: string): Deno.DirEntry[] {
    try {
      return [...Deno.readDirSync(resolvePath(dir, this.home))];
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw error;
    }
  }

  /** Removes a file below the root; one already gone is no error. */
  remove(path: string): void {
    try {
      Deno.removeSync(resolvePath(path, this.home));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }

  /**
   * Takes an exclusive lock (flock) on a lock file below the root, made 0600 in a private
   * directory when missing: waiting for it, or, with `wait: false`, null when another holds it.
   * The OS drops it if this process dies; disposing of the result releases it.
   */
  lock(path: string, options: { wait?: boolean } = {}): Disposable | null {
    const absPath = resolvePath(path, this.home);
    this.ensureDir(dirnameOf(absPath));
    const file = Deno.openSync(absPath, { read: true, write: true, create: true, mode: 0o600 });
    let locked = false;
    try {
      if (options.wait ?? true) {
        file.lockSync(true);
        locked = true;
      } else {
        locked = file.tryLockSync(true);
      }
    } finally {
      if (!locked) file.close();
    }
    if (!locked) return null;
    return { [Symbol.dispose]: () => file.close() };
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
