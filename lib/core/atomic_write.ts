// Whole files under the data root, 0600 whatever the umask: replaced atomically (a temp file in
// the same directory, renamed over the old one; fsynced with its directory when durable), or
// created new where nobody can be reading yet; and the sweep of the temp files a killed writer
// left. Text written here passes through the secrets choke point (redact.ts) first; bytes are
// written as they are. Appended logs are private_log.ts's.
import { redactJsonText } from "./redact.ts";
import { basenameOf, dirnameOf, joinPath, resolvePath } from "./paths.ts";
import { ensurePrivateDir } from "./private_dir.ts";
import { type CheckedDirs, checkFile, refuseLinkOut } from "./trust.ts";

export const FILE_MODE = 0o600;
const encoder = new TextEncoder();

export function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
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
 * Whether this process's umask takes bits of 0600 off a file it makes: learned from the first file
 * it makes new (its mode read from the open descriptor), as private_dir.ts learns it for
 * directories, so that later ones are not looked at for nothing — a stat of the new file, which
 * Deno also walks the path of (a readlink per segment), on each of the four files a turn makes.
 * The umask can only narrow the mode asked for, and reins never changes it (Deno.umask needs a
 * permission the binary does not have). Where it narrows, every new file is looked at and
 * chmodded.
 */
let umaskNarrowsFiles: boolean | null = null;

/** After `file` was made at `path` with createNew and mode 0600: 0600 whatever the umask. */
function madePrivateFile(file: Deno.FsFile, path: string): void {
  if (umaskNarrowsFiles === false) return;
  const { mode } = file.statSync();
  // No mode (Windows): nothing to narrow or to set.
  const narrowed = mode !== null && (mode & 0o777) !== FILE_MODE;
  umaskNarrowsFiles ??= narrowed;
  if (narrowed) Deno.chmodSync(path, FILE_MODE);
}

/**
 * Creates `path` with mode 0600 (whatever the umask), failing when the name exists at all (a
 * link included): a file this process makes for itself, in a directory it has just made.
 */
export function openNewPrivateFile(
  path: string,
  access: { read?: boolean; append?: boolean; write?: boolean },
) {
  const file = Deno.openSync(path, { ...access, createNew: true, mode: FILE_MODE });
  try {
    madePrivateFile(file, path);
  } catch (error) {
    file.close();
    throw error;
  }
  return file;
}

/**
 * Writes a new file that nobody can be reading yet (one in a directory this process has just
 * made and not yet renamed into place), 0600: no temp file, no rename, nothing looked at first,
 * since the name must not exist (see openNewPrivateFile). Text has its secrets redacted.
 */
export function writeNewPrivateFile(path: string, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const file = openNewPrivateFile(path, { write: true });
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
  options: { durable?: boolean; sweep?: boolean } = {},
): void {
  // durable: false — still atomic against a crash of this process, but not fsynced: for a file
  // the caller can rebuild from another that is (run.json from its synced events.jsonl).
  const durable = options.durable ?? true;
  const absPath = resolvePath(path, resolvePath(root));
  const dir = dirnameOf(absPath);
  ensurePrivateDir(root, dir, checked);
  // sweep: false — no listing of the directory for a killed writer's temp files (nor so for a
  // link at the name, which the rename replaces rather than follows): for a file written once or
  // twice in a directory of many (a snapshot's manifest), where the listing would cost more with
  // every run and find nothing of this file's.
  if (options.sweep ?? true) prepareReplace(root, absPath);
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const temp = tempPathOf(absPath);
  const file = Deno.openSync(temp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    file.lockSync(true);
    writeAll(file, bytes);
    if (durable) file.syncSync();
    madePrivateFile(file, temp);
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
  options: { sweep?: boolean; dirHandle?: Deno.FsFile } = {},
): Promise<void> {
  const absPath = resolvePath(path, resolvePath(root));
  const dir = dirnameOf(absPath);
  ensurePrivateDir(root, dir, checked);
  // sweep: false — as for writePrivateFileAtomic (a directory the caller has just made, say).
  if (options.sweep ?? true) prepareReplace(root, absPath);
  const bytes = typeof data === "string" ? encoder.encode(redactJsonText(data)) : data;
  const temp = tempPathOf(absPath);
  // Only what waits for the disk goes to the blocking pool (making the inode, the fsyncs): each
  // hand-off costs reins's thread a wake-up of a pool thread, which under load is a switch. The
  // lock of a file just made (nobody else can hold it), the write into the page cache, the stat
  // and the rename are done at once.
  const file = await Deno.open(temp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    file.lockSync(true);
    writeAll(file, bytes);
    await file.sync();
    madePrivateFile(file, temp);
    Deno.renameSync(temp, absPath);
  } catch (error) {
    try {
      await Deno.remove(temp);
    } catch { /* already renamed or gone */ }
    throw error;
  } finally {
    file.close();
  }
  // dirHandle: the directory, held open by the caller (a context's, by its turn's lock).
  if (options.dirHandle === undefined) await syncDirectoryAsync(dir);
  else await syncHeldDirectoryAsync(options.dirHandle, dir);
}

/**
 * Creates `path` anew with what `fill` writes into a temp file beside it, fsynced, 0600, then
 * linked into place: linking fails (AlreadyExists) rather than replace a file of that name made
 * meanwhile. For a copy too large to hold in memory (a file attached to a run).
 */
export async function createPrivateFileAsync(
  root: string,
  path: string,
  fill: (file: Deno.FsFile) => Promise<void>,
  checked?: CheckedDirs,
): Promise<void> {
  const absPath = resolvePath(path, resolvePath(root));
  ensurePrivateDir(root, dirnameOf(absPath), checked);
  const temp = tempPathOf(absPath);
  const file = await Deno.open(temp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    try {
      await file.lock(true);
      await fill(file);
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.chmod(temp, FILE_MODE);
    await Deno.link(temp, absPath);
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
}

/** A temp file's path for a writer of `path`, beside it: `.<file>.<pid>.<random>.tmp`. */
function tempPathOf(path: string): string {
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);
  return joinPath(dirnameOf(path), `${tempPrefix(path)}${Deno.pid}.${random}.tmp`);
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
 * directory does not wait for the disk, and is done at once). Callers at once share fsyncs, as a
 * database's group commit does: each is answered by an fsync of the directory that started after
 * it called — the one about to start, or, while one runs (which may have begun before the caller's
 * change), the next, which all who call meanwhile share. So turns settling together sync `runs/`
 * once or twice rather than once each, and none is answered before its own rename is durable.
 */
export async function syncDirectoryAsync(dir: string): Promise<void> {
  let state = directorySyncs.get(dir);
  if (state === undefined) {
    state = { running: null, next: null };
    directorySyncs.set(dir, state);
  }
  if (state.running === null) {
    state.running = fsyncDirectory(dir, state);
    await state.running;
  } else {
    state.next ??= state.running.then(() => {
      state!.next = null;
      state!.running = fsyncDirectory(dir, state!);
      return state!.running;
    });
    await state.next;
  }
  directorySyncObserver?.(dir);
}

/**
 * syncDirectory for a directory this process holds open (a run's, locked by its owner; a
 * context's, locked by its turn): that descriptor fsynced, rather than the directory opened again
 * by its path, which Deno walks (a readlink per segment) to check it against the sandbox. Any
 * descriptor of a directory makes the names in it durable. Not shared with other callers, as
 * syncDirectoryAsync's are: its holder alone writes there.
 */
export function syncHeldDirectory(handle: Deno.FsFile, dir: string): void {
  try {
    handle.syncSync();
  } catch (error) {
    // Closed already: by its path, then. Otherwise refused: see syncDirectory.
    if (error instanceof Deno.errors.BadResource) return syncDirectory(dir);
  }
  directorySyncObserver?.(dir);
}

/** syncHeldDirectory without holding the thread (the fsync on Deno's blocking pool). */
export async function syncHeldDirectoryAsync(handle: Deno.FsFile, dir: string): Promise<void> {
  try {
    await handle.sync();
  } catch (error) {
    if (error instanceof Deno.errors.BadResource) return await syncDirectoryAsync(dir);
  }
  directorySyncObserver?.(dir);
}

interface DirectorySyncs {
  /** The fsync under way, if any. */
  running: Promise<void> | null;
  /** The one that starts once it ends, shared by whoever asked meanwhile. */
  next: Promise<void> | null;
}

const directorySyncs = new Map<string, DirectorySyncs>();
let directoryFsyncs = 0;

/** Test seam: how many fsyncs syncDirectoryAsync has made (not how many callers it answered). */
export function directoryFsyncCount(): number {
  return directoryFsyncs;
}

async function fsyncDirectory(dir: string, state: DirectorySyncs): Promise<void> {
  try {
    const handle = Deno.openSync(dir, { read: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
  } catch {
    // refused: see syncDirectory
  } finally {
    directoryFsyncs++;
    if (state.next === null) {
      state.running = null;
      if (directorySyncs.get(dir) === state) directorySyncs.delete(dir);
    }
  }
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
