// The content-addressed store behind snapshots: each distinct content (by sha256) is stored once,
// whichever run saw it first. Contents are appended to pack files (snapshots/packs/<id>.pack,
// 0600), one per snapshot that had anything new, because creating a file per blob costs more
// than reading the whole tree (measured on our machines: ~0.4 ms of kernel time per created
// file, while `tar c` of a 5,000-file tree takes ~150 ms). A pack is fsynced before its
// contents are listed in snapshots/blobs.sqlite, the index later snapshots look contents up in
// (one query per batch of contents: a query per file cost more than hashing them);
// a manifest also keeps where each of its contents is, so a lost or damaged index costs
// deduplication, never a snapshot. Nothing is ever removed here.
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { sqlite } from "../core/sqlite.ts";
import type { DataRoot } from "../store/mod.ts";

/** Where one content is: a pack and the byte range in it. */
export interface BlobLocation {
  pack: string;
  offset: number;
  size: number;
}

const BUSY_TIMEOUT_MS = 5000;

function tighten(path: string): void {
  try {
    const info = Deno.lstatSync(path);
    if (info.isFile && info.mode !== null && (info.mode & 0o077) !== 0) Deno.chmodSync(path, 0o600);
  } catch { /* absent */ }
}

/**
 * Whether the data root has a blob index to look contents up in: a snapshot loads node:sqlite
 * (lib/core/sqlite.ts, not loaded at start-up) before its walk only then.
 */
export function hasBlobIndex(root: DataRoot): boolean {
  try {
    return Deno.statSync(root.layout.blobIndex()).isFile;
  } catch {
    return false;
  }
}

/** The blob index: sha256 → where its content is. */
export class BlobIndex implements Disposable {
  readonly #db: DatabaseSync;
  readonly #find: StatementSync;
  readonly #findMany: StatementSync;
  readonly #add: StatementSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
    this.#find = db.prepare("SELECT pack, offset, size FROM blobs WHERE sha256 = ?");
    this.#findMany = db.prepare(
      "SELECT sha256, pack, offset, size FROM blobs WHERE sha256 IN (SELECT value FROM json_each(?))",
    );
    this.#add = db.prepare(
      "INSERT OR IGNORE INTO blobs (sha256, pack, offset, size) " +
        "SELECT value->>0, value->>1, value->>2, value->>3 FROM json_each(?)",
    );
  }

  /**
   * The index when there is one, else null (nothing is stored yet, so nothing can be found):
   * the first snapshot in a data root looks nothing up and makes the index only to list what it
   * stored.
   */
  static openIfAny(root: DataRoot): BlobIndex | null {
    try {
      if (!Deno.statSync(root.layout.blobIndex()).isFile) return null;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    }
    return BlobIndex.open(root);
  }

  /** Opens (creating 0600) the index; a damaged one is set aside and started afresh. */
  static open(root: DataRoot): BlobIndex {
    // Looked at again each time, as the packs' directory is: see PackWriter.
    root.ensureDir(root.layout.snapshots(), { again: true });
    const path = root.layout.blobIndex();
    for (let attempt = 0;; attempt++) {
      try {
        Deno.openSync(path, { write: true, create: true, mode: 0o600 }).close();
        tighten(path);
        const db = new (sqlite().DatabaseSync)(path);
        try {
          db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
          // A rollback journal kept between transactions (its header zeroed, not the file
          // removed): a process that stores contents makes no file once the data root's first
          // did. WAL made two (-wal, -shm) in every process that opened the index and removed
          // them at its close (each file made ~0.3–0.9 ms of kernel time here: docs/engine.md).
          // An index left in WAL by an older reins stays so while another connection has it.
          db.exec("PRAGMA journal_mode = PERSIST");
          // Each commit durable and the file never corrupt by a power cut (one fsync more a
          // storing snapshot than WAL's NORMAL, which could lose the last commits): a lost
          // commit would only cost deduplication anyway (the packs are fsynced before it).
          db.exec("PRAGMA synchronous = FULL");
          db.exec(
            "CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, pack TEXT NOT NULL, " +
              "offset INTEGER NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID",
          );
          for (const suffix of ["-journal", "-wal", "-shm"]) tighten(`${path}${suffix}`);
          return new BlobIndex(db);
        } catch (error) {
          db.close();
          throw error;
        }
      } catch (error) {
        // Only the index is lost (manifests keep their contents' places): move it aside, once.
        if (attempt > 0 || error instanceof Deno.errors.NotCapable) throw error;
        for (const suffix of ["", "-journal", "-wal", "-shm"]) {
          try {
            Deno.renameSync(`${path}${suffix}`, `${path}${suffix}.damaged`);
          } catch { /* absent */ }
        }
      }
    }
  }

  find(sha256: string): BlobLocation | null {
    const row = this.#find.get(sha256) as
      | { pack: string; offset: number | bigint; size: number | bigint }
      | undefined;
    return row ? { pack: row.pack, offset: Number(row.offset), size: Number(row.size) } : null;
  }

  /** Which of `sha256s` the index has, and where: one query for a whole batch. */
  findMany(sha256s: readonly string[]): Map<string, BlobLocation> {
    const found = new Map<string, BlobLocation>();
    if (sha256s.length === 0) return found;
    const rows = this.#findMany.all(JSON.stringify(sha256s)) as {
      sha256: string;
      pack: string;
      offset: number | bigint;
      size: number | bigint;
    }[];
    for (const row of rows) {
      found.set(row.sha256, { pack: row.pack, offset: Number(row.offset), size: Number(row.size) });
    }
    return found;
  }

  /** Lists contents of a pack that is on disk for good (fsynced). */
  addAll(blobs: Iterable<[string, BlobLocation]>): void {
    const rows = [...blobs].map(([sha256, at]) => [sha256, at.pack, at.offset, at.size]);
    if (rows.length > 0) this.#add.run(JSON.stringify(rows));
  }

  close(): void {
    this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Appends are gathered in a buffer of this many bytes before they are written; a small file is
 * also read straight into it (take.ts), hashed there and kept there unless the store has the
 * content already, with no copy. There are two such buffers: one is written out by a thread of
 * the runtime (an async write) while the other is filled, so copying a pack into the page cache
 * costs the snapshot's own thread next to nothing.
 */
export const PACK_BUFFER = 4 * 1024 * 1024;

/** A pack being written: contents appended in order, made durable by finish(). */
export class PackWriter {
  readonly id: string;
  readonly #root: DataRoot;
  #file: Deno.FsFile | null = null;
  #size = 0;
  /**
   * Made on first use: most snapshots (of a tree the stat cache knows) write nothing, and
   * zeroing buffers at every run start showed in the profile of many turns in one process.
   */
  #buffer: Uint8Array | null = null;
  #spare: Uint8Array | null = null;
  #filled = 0;
  /** The write of the other buffer, while it is under way. */
  #writing: Promise<void> | null = null;

  constructor(root: DataRoot) {
    this.id = crypto.randomUUID();
    this.#root = root;
  }

  #open(): Deno.FsFile {
    if (this.#file === null) {
      // Looked at again for every pack: snapshots/ is the user's to remove (nothing else ever
      // is), and a long-lived reins (a server) then makes it again.
      this.#root.ensureDir(this.#root.layout.snapshotPacks(), { again: true });
      this.#file = this.#root.createFile(this.#root.layout.snapshotPack(this.id));
    }
    return this.#file;
  }

  /** Where the next content will start. */
  get offset(): number {
    return this.#size;
  }

  /** Where the contents not written out yet (still in the buffer) start. */
  get unwritten(): number {
    return this.#size - this.#filled;
  }

  /** How many bytes tail() can give before the buffer must be flushed. */
  get room(): number {
    return PACK_BUFFER - this.#filled;
  }

  /** The next `n` (at most room) bytes of the buffer, to read a content into; see append(). */
  tail(n: number): Uint8Array {
    if (n > this.room) throw new RangeError(`${n} bytes do not fit the pack buffer`);
    const buffer = this.#buffer ??= new Uint8Array(PACK_BUFFER);
    return buffer.subarray(this.#filled, this.#filled + n);
  }

  /** Takes the first `n` bytes last given by tail() as the next content. */
  append(n: number): void {
    this.#filled += n;
    this.#size += n;
  }

  /**
   * Keeps, of the contents not written out yet, only `keep` (ranges in pack order, each one
   * content): moves them together where the unwritten part starts, drops the rest, and returns
   * their new offsets.
   */
  retain(keep: readonly { offset: number; size: number }[]): number[] {
    const base = this.unwritten;
    const buffer = this.#buffer;
    let cursor = 0;
    const offsets: number[] = [];
    for (const piece of keep) {
      const from = piece.offset - base;
      if (from < cursor || from + piece.size > this.#filled || buffer === null) {
        throw new RangeError(`pack range ${piece.offset}+${piece.size} is not unwritten, in order`);
      }
      if (from !== cursor) buffer.copyWithin(cursor, from, from + piece.size);
      offsets.push(base + cursor);
      cursor += piece.size;
    }
    this.#size = base + cursor;
    this.#filled = cursor;
    return offsets;
  }

  /**
   * Starts writing out what the buffer holds, and goes on with the other one. Waits only for
   * the write before it (writes go out in order, and that buffer is the next to fill).
   */
  async flush(): Promise<void> {
    if (this.#filled === 0 || this.#buffer === null) return;
    await this.drain();
    const file = this.#open();
    const full = this.#buffer;
    const bytes = full.subarray(0, this.#filled);
    this.#writing = (async () => {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
    })();
    // Handled by drain(); a failure until then is not unhandled.
    this.#writing.catch(() => {});
    this.#buffer = this.#spare;
    this.#spare = full;
    this.#filled = 0;
  }

  /** Waits until everything flushed is written out. */
  async drain(): Promise<void> {
    while (this.#writing !== null) {
      const writing = this.#writing;
      try {
        await writing;
      } finally {
        if (this.#writing === writing) this.#writing = null;
      }
    }
  }

  /** Appends `chunk` at once (the buffer must be empty and drained: see drain()). */
  writeNow(chunk: Uint8Array): void {
    if (this.#filled !== 0 || this.#writing !== null) {
      throw new Error("PackWriter.writeNow() with buffered or unwritten contents");
    }
    const file = this.#open();
    let written = 0;
    while (written < chunk.length) written += file.writeSync(chunk.subarray(written));
    this.#size += chunk.length;
  }

  /** Writes the pack out, syncs it to disk (fsync) and closes it. */
  async finish(): Promise<void> {
    await this.flush();
    await this.drain();
    if (this.#file === null) return;
    await this.#file.sync();
    this.#file.close();
    this.#file = null;
  }

  /** Closes and removes a pack whose snapshot failed. */
  async abandon(): Promise<void> {
    this.#filled = 0;
    try {
      await this.drain();
    } catch { /* removed below */ }
    if (this.#file === null) return;
    this.#file.close();
    this.#file = null;
    try {
      this.#root.remove(this.#root.layout.snapshotPack(this.id));
    } catch { /* not ours to remove */ }
  }
}
