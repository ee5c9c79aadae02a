// Private files under the data root: directories 0700, files 0600 whatever the umask, atomic
// replacement for records and locked, line-at-a-time appends for logs. Nothing here follows a
// symbolic link out of the data root, and nothing is read that someone else could have written
// (as OpenSSH treats keys: another owner, group/other-writable, or in such a directory). It
// knows nothing of runs or events; the store builds on it. Text written here passes through the
// secrets choke point (redact.ts) first. What a caller remembers between calls (the directories
// it already made private, the logs it keeps open) it owns and passes in (the Store does, per
// data root).
import { DataRootError } from "./errors.ts";
import { redact, redactJsonText } from "./redact.ts";
import { basenameOf, dirnameOf, isInside, joinPath, resolvePath } from "./paths.ts";

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const encoder = new TextEncoder();

/**
 * What a caller already knows of the directories below one data root, so that its hot path does
 * not lstat every segment again: those it made private, and those it found trustworthy. One per
 * open data root (a Store owns one), never shared module state; a caller without one pays the
 * checks every time.
 */
export class CheckedDirs {
  /** Made to exist with mode 0700 by this owner: not looked at again. */
  readonly madePrivate = new Set<string>();
  /** Found trustworthy (see trustProblem): a later check of a file in one stops there. */
  readonly trusted = new Set<string>();
}

/** A file or directory reins will not use: another user owns it, or others may write it. */
export class UntrustedFileError extends DataRootError {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(`Refusing ${JSON.stringify(path)}: ${reason}`, {
      hint: "reins uses only files you alone can write; reins doctor lists them, and " +
        "reins doctor --repair tightens the modes of those you own (check them first)",
    });
    this.name = "UntrustedFileError";
    this.path = path;
    this.reason = reason;
  }
}

let ownUid: number | null | undefined;

/** This process's uid, or null when the sandbox does not tell (then the owner is not checked). */
export function currentUid(): number | null {
  if (ownUid === undefined) {
    try {
      ownUid = Deno.uid();
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
      ownUid = null;
    }
  }
  return ownUid;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/**
 * Why a file or directory with these stats cannot be trusted, or null: owned by someone other
 * than this user (or root), or writable by group or others.
 */
export function distrustOf(info: Deno.FileInfo): string | null {
  const uid = currentUid();
  if (info.uid !== null && uid !== null && info.uid !== uid && info.uid !== 0) {
    return `it is owned by uid ${info.uid}, not by you (uid ${uid})`;
  }
  if (info.mode !== null && (info.mode & 0o022) !== 0) {
    const who = (info.mode & 0o022) === 0o022
      ? "group and others"
      : (info.mode & 0o020) !== 0
      ? "its group"
      : "others";
    return `it is writable by ${who} (mode ${octal(info.mode)})`;
  }
  return null;
}

/** Why a directory from `dir` up to the data root `root` cannot be trusted, or null. */
function distrustOfDirs(root: string, dir: string, checked?: CheckedDirs): string | null {
  const absRoot = resolvePath(root);
  let current = resolvePath(dir, absRoot);
  while (isInside(current, absRoot)) {
    if (checked?.trusted.has(current) || checked?.madePrivate.has(current)) return null;
    let info: Deno.FileInfo | null;
    try {
      info = Deno.statSync(current);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        return null;
      }
      throw error;
    }
    const reason = distrustOf(info);
    if (reason !== null) {
      const shown = current === absRoot ? "the data root" : `its directory ${current}`;
      return reason.replace(/^it is/, `${shown} is`);
    }
    if (current === absRoot) break;
    current = dirnameOf(current);
  }
  // Every directory of the chain passed: later checks of files in them stop early.
  if (checked === undefined) return null;
  for (let at = resolvePath(dir, absRoot); isInside(at, absRoot); at = dirnameOf(at)) {
    checked.trusted.add(at);
    if (at === absRoot) break;
  }
  return null;
}

/**
 * Why `path` (below the data root `root`) cannot be trusted, or null when it can or does not
 * exist: the file itself (what a link inside the root points at) or a directory between it and
 * the root is owned by another user or writable by group or others. With `checked`, directories
 * it already trusts are not looked at again.
 */
export function trustProblem(root: string, path: string, checked?: CheckedDirs): string | null {
  const absPath = resolvePath(path, resolvePath(root));
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(absPath);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw error;
  }
  return distrustOf(info) ?? distrustOfDirs(root, dirnameOf(absPath), checked);
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

function refuseLinkOut(root: string, path: string): void {
  let target: string;
  try {
    target = Deno.realPathSync(path);
  } catch (error) {
    throw new DataRootError(`Refusing the link ${JSON.stringify(path)}: its target is missing`, {
      hint: "remove the link; reins keeps only plain files and directories in its data root",
      cause: error,
    });
  }
  const realRoot = Deno.realPathSync(root);
  if (!isInside(target, realRoot)) {
    throw new DataRootError(
      `Refusing to follow the link ${JSON.stringify(path)}: it points outside the data root, to ${
        JSON.stringify(target)
      }`,
      { hint: "remove the link; reins writes only inside its data root" },
    );
  }
}

function tighten(path: string, info: Deno.FileInfo, mode: number, tightened?: string[]): void {
  // Tightening another user's directory (root can) would not make it ours: refused instead.
  const uid = currentUid();
  if (info.uid !== null && uid !== null && info.uid !== uid && info.uid !== 0) {
    throw new UntrustedFileError(path, `it is owned by uid ${info.uid}, not by you (uid ${uid})`);
  }
  if (info.mode !== null && (info.mode & 0o777) !== mode && (info.mode & 0o077) !== 0) {
    Deno.chmodSync(path, mode);
    tightened?.push(path);
  }
}

/**
 * Makes `dir` (the data root or a directory below it) exist with mode 0700, creating each missing
 * segment 0700 and tightening any existing one below the root that is wider. Returns the paths it
 * tightened. A link below the root that points outside it is refused. With `checked`, a directory
 * already in it is not looked at again, and one made private is added to it.
 */
export function ensurePrivateDir(root: string, dir: string, checked?: CheckedDirs): string[] {
  const absRoot = resolvePath(root);
  const absDir = resolvePath(dir, absRoot);
  if (checked?.madePrivate.has(absDir)) return [];
  if (!isInside(absDir, absRoot)) {
    throw new DataRootError(`Refusing ${JSON.stringify(absDir)}: it is outside the data root`, {
      hint: `reins writes only below ${absRoot}`,
    });
  }
  const tightened: string[] = [];
  const rootInfo = lstatOrNull(absRoot);
  if (rootInfo === null) {
    Deno.mkdirSync(absRoot, { recursive: true, mode: DIR_MODE });
    Deno.chmodSync(absRoot, DIR_MODE);
  } else if (rootInfo.isSymlink) {
    // The root itself may be a link the user made (~/.reins → /data/reins): follow it.
    const target = Deno.statSync(absRoot);
    if (!target.isDirectory) throw notADirectory(absRoot);
    tighten(absRoot, target, DIR_MODE, tightened);
  } else if (!rootInfo.isDirectory) {
    throw notADirectory(absRoot);
  } else {
    tighten(absRoot, rootInfo, DIR_MODE, tightened);
  }
  let current = absRoot;
  for (const segment of absDir.slice(absRoot.length).split("/").filter(Boolean)) {
    current = joinPath(current, segment);
    const info = lstatOrNull(current);
    if (info === null) {
      try {
        Deno.mkdirSync(current, { mode: DIR_MODE });
      } catch (error) {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      }
      Deno.chmodSync(current, DIR_MODE);
      continue;
    }
    if (info.isSymlink) {
      refuseLinkOut(absRoot, current);
      continue;
    }
    if (!info.isDirectory) throw notADirectory(current);
    tighten(current, info, DIR_MODE, tightened);
  }
  checked?.madePrivate.add(absDir);
  return tightened;
}

function notADirectory(path: string): DataRootError {
  return new DataRootError(`Cannot use ${JSON.stringify(path)}: it is not a directory`, {
    hint: "move the file away, or point REINS_HOME (or --home) at another directory",
  });
}

/**
 * Checks a file path inside the root: an existing link to outside it is refused, and so is a file
 * to be read that cannot be trusted (see trustProblem). Writing replaces an untrusted file with
 * one of ours, so a writer need not ask.
 */
function checkFile(
  root: string,
  path: string,
  purpose: "read" | "write",
  checked?: CheckedDirs,
): Deno.FileInfo | null {
  let info = lstatOrNull(path);
  if (info?.isSymlink) {
    refuseLinkOut(root, path);
    info = Deno.statSync(path);
  }
  if (info !== null && purpose === "read") {
    const reason = distrustOf(info) ?? distrustOfDirs(root, dirnameOf(path), checked);
    if (reason !== null) throw new UntrustedFileError(path, reason);
  }
  return info;
}

function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
}

function tempPrefix(path: string): string {
  return `.${basenameOf(path)}.`;
}

/**
 * Removes temp files a killed writer of `path` left behind. A live writer holds a lock on its
 * temp file, so a temp file whose lock can be taken belongs to nobody.
 */
export function removeStaleTemps(path: string): number {
  const entries = listOrNull(dirnameOf(path));
  return entries === null ? 0 : removeStaleTempsIn(path, entries);
}

/** What writePrivateFileAtomic names its temp files: `.<file>.<pid>.<random>.tmp`. */
const TEMP_NAME = /^\..+\.\d+\.[0-9a-z]+\.tmp$/;

/**
 * Removes every temp file of an atomic write that its writer left in `dir` (whatever file it was
 * replacing): one whose lock can be taken, and that is older than `minAgeMs`, since a writer
 * creates its temp file a moment before it locks it. Returns how many it removed.
 */
export function removeAbandonedTemps(
  dir: string,
  options: { minAgeMs: number; nowMs?: number },
): number {
  const entries = listOrNull(dir);
  if (entries === null) return 0;
  const before = (options.nowMs ?? Date.now()) - options.minAgeMs;
  let removed = 0;
  for (const entry of entries) {
    if (!entry.isFile || !TEMP_NAME.test(entry.name)) continue;
    const tempPath = joinPath(dir, entry.name);
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(tempPath, { read: true });
    } catch {
      continue;
    }
    try {
      const modified = file.statSync().mtime?.getTime() ?? Infinity;
      if (modified <= before && file.tryLockSync(true)) {
        Deno.removeSync(tempPath);
        removed++;
      }
    } catch {
      // gone already, or not ours to remove
    } finally {
      file.close();
    }
  }
  return removed;
}

function listOrNull(dir: string): Deno.DirEntry[] | null {
  try {
    return [...Deno.readDirSync(dir)];
  } catch {
    return null;
  }
}

function removeStaleTempsIn(path: string, entries: Deno.DirEntry[]): number {
  const dir = dirnameOf(path);
  const prefix = tempPrefix(path);
  let removed = 0;
  for (const entry of entries) {
    if (!entry.isFile || !entry.name.startsWith(prefix) || !entry.name.endsWith(".tmp")) continue;
    const tempPath = joinPath(dir, entry.name);
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(tempPath, { read: true });
    } catch {
      continue;
    }
    try {
      if (file.tryLockSync(true)) {
        Deno.removeSync(tempPath);
        removed++;
      }
    } catch {
      // gone already, or not ours to remove
    } finally {
      file.close();
    }
  }
  return removed;
}

/**
 * Before `path` is replaced: refuses it if it is a link out of the root (checkFile), and removes
 * the temp files a killed writer of it left behind — both from one listing of its directory,
 * which the temp files needed anyway: no lstat of a file that is often not there yet, and so
 * no exception, on every atomic write (a run's first run.json is one).
 */
function prepareReplace(root: string, path: string): void {
  const entries = listOrNull(dirnameOf(path));
  if (entries === null) {
    checkFile(root, path, "write");
    return;
  }
  const name = basenameOf(path);
  if (entries.some((entry) => entry.name === name && entry.isSymlink)) refuseLinkOut(root, path);
  removeStaleTempsIn(path, entries);
}

/**
 * Creates `path` with mode 0600 (whatever the umask), failing when the name exists at all (a
 * link included): a file this process makes for itself, in a directory it has just made.
 */
function openNew(path: string, access: { read?: boolean; append?: boolean; write?: boolean }) {
  const file = Deno.openSync(path, { ...access, createNew: true, mode: FILE_MODE });
  try {
    // The umask can only narrow the mode asked for; one stat of the open file tells.
    const { mode } = file.statSync();
    if (mode !== null && (mode & 0o777) !== FILE_MODE) Deno.chmodSync(path, FILE_MODE);
  } catch (error) {
    file.close();
    throw error;
  }
  return file;
}

/**
 * Writes a new file that nobody can be reading yet (one in a directory this process has just
 * made and not yet renamed into place), 0600: no temp file, no rename, nothing looked at first,
 * since the name must not exist (see openNew). Text has its secrets redacted.
 */
export function writeNewPrivateFile(path: string, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const file = openNew(path, { write: true });
  try {
    writeAll(file, bytes);
  } finally {
    file.close();
  }
}

/**
 * Replaces `path` with `data` atomically: a temp file in the same directory, fsync, rename, fsync
 * of the directory. A reader sees the old or the new content, never a mix; the mode is 0600.
 * Text has its secrets redacted; bytes are written as they are.
 */
export function writePrivateFileAtomic(
  root: string,
  path: string,
  data: string | Uint8Array,
  checked?: CheckedDirs,
  options: { durable?: boolean } = {},
): void {
  // durable: false — still atomic against a crash of this process, but not fsynced: for a file
  // the caller can rebuild from another that is (run.json from its synced events.jsonl).
  const durable = options.durable ?? true;
  const absPath = resolvePath(path, resolvePath(root));
  const dir = dirnameOf(absPath);
  ensurePrivateDir(root, dir, checked);
  prepareReplace(root, absPath);
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);
  const temp = joinPath(dir, `${tempPrefix(absPath)}${Deno.pid}.${random}.tmp`);
  const file = Deno.openSync(temp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    file.lockSync(true);
    writeAll(file, bytes);
    if (durable) file.syncSync();
    Deno.chmodSync(temp, FILE_MODE);
    Deno.renameSync(temp, absPath);
  } catch (error) {
    try {
      Deno.removeSync(temp);
    } catch { /* already renamed or gone */ }
    throw error;
  } finally {
    file.close();
  }
  if (durable) syncDirectory(dir);
}

/**
 * writePrivateFileAtomic without blocking: the same checks, temp file, lock, fsync, rename and
 * fsync of the directory, with the waits for the disk awaited rather than held. For writers that
 * save often while other work runs in the same process (a suite saving each scenario's state as
 * other scenarios play).
 */
export async function writePrivateFileAtomicAsync(
  root: string,
  path: string,
  data: string | Uint8Array,
  checked?: CheckedDirs,
): Promise<void> {
  const absPath = resolvePath(path, resolvePath(root));
  const dir = dirnameOf(absPath);
  ensurePrivateDir(root, dir, checked);
  prepareReplace(root, absPath);
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);
  const temp = joinPath(dir, `${tempPrefix(absPath)}${Deno.pid}.${random}.tmp`);
  const file = await Deno.open(temp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    await file.lock(true);
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
    await Deno.chmod(temp, FILE_MODE);
    await Deno.rename(temp, absPath);
  } catch (error) {
    try {
      await Deno.remove(temp);
    } catch { /* already renamed or gone */ }
    throw error;
  } finally {
    file.close();
  }
  await syncDirectoryAsync(dir);
}

/**
 * fsyncs a directory, making the names created or renamed in it durable. Some filesystems refuse
 * fsync on a directory; a rename is still atomic there, so that is not an error.
 */
export function syncDirectory(dir: string): void {
  try {
    const handle = Deno.openSync(dir, { read: true });
    try {
      handle.syncSync();
    } finally {
      handle.close();
    }
  } catch {
    // refused: see above
  }
  directorySyncObserver?.(dir);
}

/**
 * syncDirectory without holding the thread (the fsync runs on Deno's blocking pool; opening the
 * directory does not wait for the disk, and is done at once).
 */
export async function syncDirectoryAsync(dir: string): Promise<void> {
  try {
    const handle = Deno.openSync(dir, { read: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
  } catch {
    // refused: see syncDirectory
  }
  directorySyncObserver?.(dir);
}

let directorySyncObserver: ((dir: string) => void) | null = null;

/**
 * Test seam: `observer` is told of every directory syncDirectory syncs, after it does, until
 * the returned handle is disposed. The syncs themselves happen as ever.
 */
export function observeDirectorySyncs(observer: (dir: string) => void): Disposable {
  directorySyncObserver = observer;
  return {
    [Symbol.dispose]() {
      if (directorySyncObserver === observer) directorySyncObserver = null;
    },
  };
}

/**
 * Reads a file below the root as text, or null when it does not exist. Links out are refused, and
 * so is a file someone else could have written (UntrustedFileError). `checked`: see CheckedDirs.
 */
export function readPrivateText(
  root: string,
  path: string,
  checked?: CheckedDirs,
): string | null {
  const absPath = resolvePath(path, resolvePath(root));
  if (checkFile(root, absPath, "read", checked) === null) return null;
  try {
    return Deno.readTextFileSync(absPath);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** What an append callback sees of the file, under its lock. */
export interface LockedTail {
  /** The file's size now (after any torn tail was repaired). */
  readonly size: number;
  /** The size right after this handle's last append, or -1 before its first. */
  readonly knownSize: number;
  /** Reads bytes [start, end) of the file. */
  read(start: number, end: number): Uint8Array;
}

/**
 * An append-only private file kept open for many appends. Each append takes an advisory lock,
 * repairs a torn tail (a last line with no newline, left by a writer that died mid-line: its bytes
 * go to `<file>.torn`), writes one line with one write, and releases the lock.
 */
export class PrivateLog {
  readonly path: string;
  readonly #root: string;
  #file: Deno.FsFile | null;
  #knownSize = -1;
  #buffer = new Uint8Array(4096);
  /** Locked by hold(): 'fresh' until the first append under it has looked at the file's end. */
  #hold: "none" | "fresh" | "checked" = "none";
  /** Written to since the last sync(). */
  #unsynced = false;
  /** The fdatasync a syncAsync() is waiting for, if one is. */
  #syncing: Promise<void> | null = null;

  private constructor(root: string, path: string, file: Deno.FsFile) {
    this.#root = root;
    this.path = path;
    this.#file = file;
  }

  static open(root: string, path: string, checked?: CheckedDirs): PrivateLog {
    const absPath = resolvePath(path, resolvePath(root));
    // A log is read as it is appended to (sequences, the outcome): it must be trustworthy, and
    // is checked before its directory is tightened.
    checkFile(root, absPath, "read", checked);
    ensurePrivateDir(root, dirnameOf(absPath), checked);
    const file = Deno.openSync(absPath, {
      read: true,
      append: true,
      create: true,
      mode: FILE_MODE,
    });
    const info = file.statSync();
    if (info.mode !== null && (info.mode & 0o777) !== FILE_MODE) Deno.chmodSync(absPath, FILE_MODE);
    return new PrivateLog(root, absPath, file);
  }

  /**
   * Creates the log anew at `at` (by default `path`), in a directory this process has just made
   * and that nobody else has seen yet (a run's staging directory, later renamed so that the file
   * is at `path`): it must not exist, so nothing there is looked at first — creating it fails on
   * any name already taken, a link included, and the file made is this process's own.
   */
  static create(root: string, path: string, at = path): PrivateLog {
    const base = resolvePath(root);
    const file = openNew(resolvePath(at, base), { read: true, append: true });
    return new PrivateLog(root, resolvePath(path, base), file);
  }

  /** Appends `line` (no newline in it) as one line. */
  append(line: string): void {
    this.appendWith(() => line);
  }

  /**
   * Appends the line `build` returns, calling it under the lock so that what it reads of the
   * file (a last sequence number, say) cannot change before the line is written. Returning null
   * writes nothing. Returns the offset the line was written at, or -1. `afterWrite`, if given, runs
   * after the line is written and before the lock is released, with the file's new size: what
   * must follow the line and not interleave with another writer (a record derived from the log).
   */
  appendWith(
    build: (tail: LockedTail) => string | null,
    afterWrite?: (size: number) => void,
  ): number {
    const file = this.#handle();
    const held = this.#hold !== "none";
    if (!held) file.lockSync(true);
    try {
      let size = this.#knownSize;
      // Under a hold, once the end was looked at, nobody else can have written since.
      if (this.#hold !== "checked") {
        // The end offset (one lseek) is all we need to notice another writer's lines or a torn
        // tail; fstat would cost twice as much on this hot path.
        size = file.seekSync(0, Deno.SeekMode.End);
        if (size !== this.#knownSize && size > 0) size = this.#repairTornTail(file, size);
        if (held) this.#hold = "checked";
      }
      const read = (start: number, end: number) => readRange(file, start, end);
      const line = build({ size, knownSize: this.#knownSize, read });
      if (line === null) {
        this.#knownSize = size;
        return -1;
      }
      const bytes = this.#encodeLine(line);
      this.#unsynced = true;
      writeAll(file, bytes);
      this.#knownSize = size + bytes.length;
      afterWrite?.(this.#knownSize);
      return size;
    } catch (error) {
      // A failed write may have left part of a line: the next append looks at the end again.
      if (held) this.#hold = "fresh";
      throw error;
    } finally {
      if (!held) file.unlockSync();
    }
  }

  /**
   * Takes the lock and keeps it across appends until release(), for a writer with a burst of
   * lines: each then costs no lock, unlock or end-offset check. Others wait meanwhile, so hold
   * only for a burst (the run store releases at the end of the current task). Another handle on
   * the same file, even in this process, blocks until release().
   */
  hold(): void {
    if (this.#hold !== "none") return;
    this.#handle().lockSync(true);
    this.#hold = "fresh";
  }

  /** Releases what hold() took; nothing when not holding. */
  release(): void {
    if (this.#hold === "none") return;
    this.#hold = "none";
    this.#file?.unlockSync();
  }

  /**
   * Flushes what this handle wrote to disk; nothing to do (no fdatasync) when it wrote nothing
   * since the last flush. What other handles write they flush themselves.
   */
  sync(): void {
    // A syncAsync() still running has not yet made its lines durable: this one must.
    if (!this.#unsynced && this.#syncing === null) return;
    this.#handle().syncDataSync();
    this.#unsynced = false;
  }

  /**
   * sync() without holding the thread: the fdatasync runs on Deno's blocking pool, so concurrent
   * writers in one process overlap their waits for the disk and the event loop stays free. What
   * is written while it runs is left for the next sync (it may or may not be covered by this one).
   */
  async syncAsync(): Promise<void> {
    if (!this.#unsynced) {
      // Nothing new, but what was written may still be on its way to the disk.
      if (this.#syncing !== null) await this.#syncing;
      return;
    }
    const file = this.#handle();
    this.#unsynced = false;
    const syncing = file.syncData();
    this.#syncing = syncing;
    try {
      await syncing;
    } catch (error) {
      this.#unsynced = true;
      throw error;
    } finally {
      if (this.#syncing === syncing) this.#syncing = null;
    }
  }

  close(): void {
    this.#hold = "none";
    this.#file?.close();
    this.#file = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** Encodes `line` + "\n" into a reused buffer: allocation is most of a line's encoding cost. */
  #encodeLine(line: string): Uint8Array {
    // UTF-8 needs at most 3 bytes per UTF-16 code unit.
    const need = line.length * 3 + 1;
    if (this.#buffer.length < need) this.#buffer = new Uint8Array(Math.max(need, 4096));
    const { written } = encoder.encodeInto(line, this.#buffer);
    this.#buffer[written] = 0x0a;
    return this.#buffer.subarray(0, written + 1);
  }

  #handle(): Deno.FsFile {
    if (this.#file === null) throw new Error(`The log ${this.path} is closed`);
    return this.#file;
  }

  #repairTornTail(file: Deno.FsFile, size: number): number {
    const last = readRange(file, size - 1, size);
    if (last[0] === 0x0a) return size;
    // Walk back to the last newline; everything after it is the torn line.
    let end = size;
    let keep = 0;
    while (end > 0) {
      const start = Math.max(0, end - 65536);
      const chunk = readRange(file, start, end);
      const at = chunk.lastIndexOf(0x0a);
      if (at >= 0) {
        keep = start + at + 1;
        break;
      }
      end = start;
    }
    const torn = readRange(file, keep, size);
    // The torn bytes are kept verbatim, one record a line, as evidence of what was lost.
    const tornPath = `${this.path}.torn`;
    checkFile(this.#root, tornPath, "write");
    const evidence = Deno.openSync(tornPath, { append: true, create: true, mode: FILE_MODE });
    try {
      Deno.chmodSync(tornPath, FILE_MODE);
      const record = new Uint8Array(torn.length + 1);
      record.set(torn);
      record[torn.length] = 0x0a;
      writeAll(evidence, record);
    } finally {
      evidence.close();
    }
    file.truncateSync(keep);
    return keep;
  }
}

function readRange(file: Deno.FsFile, start: number, end: number): Uint8Array {
  const out = new Uint8Array(Math.max(0, end - start));
  file.seekSync(start, Deno.SeekMode.Start);
  let got = 0;
  while (got < out.length) {
    const n = file.readSync(out.subarray(got));
    if (n === null || n === 0) break;
    got += n;
  }
  return out.subarray(0, got);
}

/**
 * Logs kept open for appending line after line (reins.log, say), so a caller appending many lines
 * does not pay an open and a close per line. A kept handle is checked against the path (same
 * inode) at most every 250 ms, so a log that was removed or replaced is reopened rather than
 * written into the void. One per owner (a Store has one); close() closes them all.
 */
export class OpenLogs implements Disposable {
  readonly #root: string;
  readonly #checked: CheckedDirs | undefined;
  readonly #logs = new Map<string, { log: PrivateLog; ino: number | null; checkedMs: number }>();

  constructor(root: string, checked?: CheckedDirs) {
    this.#root = root;
    this.#checked = checked;
  }

  /** Appends one line to the private file at `path` under its lock, repairing a torn tail. */
  append(path: string, line: string): void {
    const now = Date.now();
    let entry = this.#logs.get(path);
    if (entry && now - entry.checkedMs > 250) {
      if (inodeOf(entry.log.path) !== entry.ino || entry.ino === null) {
        entry.log.close();
        this.#logs.delete(path);
        entry = undefined;
      } else {
        entry.checkedMs = now;
      }
    }
    if (!entry) {
      if (this.#logs.size >= MAX_OPEN_LOGS) {
        const [oldest, value] = this.#logs.entries().next().value!;
        value.log.close();
        this.#logs.delete(oldest);
      }
      const log = PrivateLog.open(this.#root, path, this.#checked);
      entry = { log, ino: inodeOf(log.path), checkedMs: now };
      this.#logs.set(path, entry);
    }
    entry.log.append(redact(line));
  }

  close(): void {
    for (const { log } of this.#logs.values()) log.close();
    this.#logs.clear();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

const MAX_OPEN_LOGS = 16;

function inodeOf(path: string): number | null {
  try {
    return Deno.statSync(path).ino;
  } catch {
    return null;
  }
}
