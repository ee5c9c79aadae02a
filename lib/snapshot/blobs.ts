// The content-addressed store behind snapshots: each distinct content (by sha256) is stored once,
// whichever run saw it first. Contents are appended to pack files (snapshots/packs/<id>.pack,
// 0600), one per snapshot that had anything new, because creating a file per blob costs more
// than reading the whole tree (measured on our machines: ~0.4 ms of kernel time per created
// file, while `tar c` of a 5,000-file tree takes ~150 ms). A pack is fsynced before its
// contents are listed in snapshots/blobs.sqlite, the index later snapshots look contents up in;
// a manifest also keeps where each of its contents is, so a lost or damaged index costs
// deduplication, never a snapshot. Nothing is ever removed here.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { joinPath } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/private_files.ts";
import { packPath, snapshotsDir } from "./paths.ts";

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

/** The blob index: sha256 → where its content is. */
export class BlobIndex implements Disposable {
  readonly #db: DatabaseSync;
  readonly #find: StatementSync;
  readonly #add: StatementSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
    this.#find = db.prepare("SELECT pack, offset, size FROM blobs WHERE sha256 = ?");
    this.#add = db.prepare(
      "INSERT OR IGNORE INTO blobs (sha256, pack, offset, size) " +
        "SELECT value->>0, value->>1, value->>2, value->>3 FROM json_each(?)",
    );
  }

  /** Opens (creating 0600) the index; a damaged one is set aside and started afresh. */
  static open(home: string): BlobIndex {
    const dir = snapshotsDir(home);
    ensurePrivateDir(home, dir);
    const path = joinPath(dir, "blobs.sqlite");
    for (let attempt = 0;; attempt++) {
      try {
        Deno.openSync(path, { write: true, create: true, mode: 0o600 }).close();
        tighten(path);
        const db = new DatabaseSync(path);
        try {
          db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
          db.exec("PRAGMA journal_mode = WAL");
          // A lost commit only loses deduplication (the packs are fsynced before it): no fsync.
          db.exec("PRAGMA synchronous = NORMAL");
          db.exec(
            "CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, pack TEXT NOT NULL, " +
              "offset INTEGER NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID",
          );
          for (const suffix of ["-wal", "-shm"]) tighten(`${path}${suffix}`);
          return new BlobIndex(db);
        } catch (error) {
          db.close();
          throw error;
        }
      } catch (error) {
        // Only the index is lost (manifests keep their contents' places): move it aside, once.
        if (attempt > 0 || error instanceof Deno.errors.NotCapable) throw error;
        for (const suffix of ["", "-wal", "-shm"]) {
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

/** Appends are gathered up to this many bytes before they are written. */
const BUFFER = 4 * 1024 * 1024;

/** A pack being written: contents appended in order, made durable by finish(). */
export class PackWriter {
  readonly id: string;
  readonly #home: string;
  #file: Deno.FsFile | null = null;
  #size = 0;
  /**
   * Made on the first write: most snapshots (of a tree the stat cache knows) write nothing, and
   * 4 MB zeroed at every run start showed in the profile of many turns in one process.
   */
  #buffer: Uint8Array | null = null;
  #filled = 0;

  constructor(home: string) {
    this.#home = home;
    this.id = crypto.randomUUID();
  }

  #open(): Deno.FsFile {
    if (this.#file === null) {
      const path = packPath(this.#home, this.id);
      ensurePrivateDir(this.#home, joinPath(snapshotsDir(this.#home), "packs"));
      this.#file = Deno.openSync(path, { write: true, createNew: true, mode: 0o600 });
      Deno.chmodSync(path, 0o600);
    }
    return this.#file;
  }

  /** Where the next content will start. */
  get offset(): number {
    return this.#size;
  }

  write(bytes: Uint8Array): void {
    this.#size += bytes.length;
    if (this.#filled + bytes.length > BUFFER) this.#flush();
    if (bytes.length > BUFFER) this.#writeOut(bytes);
    else {
      (this.#buffer ??= new Uint8Array(BUFFER)).set(bytes, this.#filled);
      this.#filled += bytes.length;
    }
  }

  #writeOut(bytes: Uint8Array): void {
    const file = this.#open();
    let written = 0;
    while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
  }

  #flush(): void {
    if (this.#filled === 0 || this.#buffer === null) return;
    this.#writeOut(this.#buffer.subarray(0, this.#filled));
    this.#filled = 0;
  }

  /** Flushes the pack to disk and closes it. */
  finish(): void {
    this.#flush();
    if (this.#file === null) return;
    this.#file.syncSync();
    this.#file.close();
    this.#file = null;
  }

  /** Closes and removes a pack whose snapshot failed. */
  abandon(): void {
    this.#filled = 0;
    if (this.#file === null) return;
    this.#file.close();
    this.#file = null;
    try {
      Deno.removeSync(packPath(this.#home, this.id));
    } catch { /* gone */ }
  }
}
