// Append-only private logs under the data root: each line appended whole under an advisory lock,
// a torn tail (a writer that died mid-line) moved aside first, the handle kept open for the next
// line (PrivateLog), and a set of logs kept open by one owner (OpenLogs). Text appended through
// OpenLogs passes through the secrets choke point (redact.ts) first.
import { redact } from "./redact.ts";
import { dirnameOf, resolvePath } from "./paths.ts";
import { FILE_MODE, openNewPrivateFile, writeAll } from "./atomic_write.ts";
import { ensurePrivateDir } from "./private_dir.ts";
import { type CheckedDirs, checkFile } from "./trust.ts";

const encoder = new TextEncoder();
const NEWLINE = new Uint8Array([0x0a]);

/** What an append callback sees of the file, under its lock. */
export interface LockedTail {
  /** The file's size now (after any torn tail was repaired). */
  readonly size: number;
  /** The size right after this handle's last append, or -1 before its first. */
  readonly knownSize: number;
  /** Reads bytes [start, end) of the file. */
  read(start: number, end: number): Uint8Array;
  /**
   * Sets complete lines aside (see PrivateLog's setAside): their bytes are appended to
   * `evidencePath`, then overwritten with spaces in place.
   */
  setAside(lines: readonly SetAsideLine[], evidencePath: string): void;
}

/** A complete line of a log: bytes [start, end) (the newline at `end` not included). */
export interface SetAsideLine {
  start: number;
  end: number;
  /** Its 1-based line number, for people. */
  line: number;
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
    const file = openNewPrivateFile(resolvePath(at, base), { read: true, append: true });
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
      const setAside = (lines: readonly SetAsideLine[], evidencePath: string) =>
        this.#setAside(file, lines, evidencePath);
      const line = build({ size, knownSize: this.#knownSize, read, setAside });
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

  /**
   * Under the lock: complete lines that cannot be kept in the log (garbage) go to `evidencePath`
   * (0600, appended, fsynced: `<line number>:` and the bytes as they were, one record a line),
   * then each is overwritten with as many spaces, in place and fdatasynced: no byte of any other
   * line moves, so a reader holding an offset, or a crash at any point, loses nothing but the
   * garbage, which is kept. A crash between the two leaves the lines to be set aside again.
   */
  #setAside(file: Deno.FsFile, lines: readonly SetAsideLine[], evidencePath: string): void {
    if (lines.length === 0) return;
    const records: Uint8Array[] = [];
    for (const { start, end, line } of lines) {
      records.push(encoder.encode(`${line}:`), readRange(file, start, end), NEWLINE);
    }
    checkFile(this.#root, evidencePath, "write");
    const evidence = Deno.openSync(evidencePath, { append: true, create: true, mode: FILE_MODE });
    try {
      Deno.chmodSync(evidencePath, FILE_MODE);
      for (const record of records) writeAll(evidence, record);
      evidence.syncDataSync();
    } finally {
      evidence.close();
    }
    // The log's own handle appends (O_APPEND writes go to the end, wherever it seeks): a second
    // handle, not appending, writes in place; the lock this one holds keeps other writers off.
    const inPlace = Deno.openSync(this.path, { write: true });
    try {
      for (const { start, end } of lines) {
        inPlace.seekSync(start, Deno.SeekMode.Start);
        writeAll(inPlace, new Uint8Array(end - start).fill(0x20));
      }
      inPlace.syncDataSync();
    } finally {
      inPlace.close();
    }
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
