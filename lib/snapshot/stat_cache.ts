// What the last snapshot of a directory learned about its files, so the next one (most runs
// start in the directory the last one did) need not read a file whose size, times and inode
// are unchanged: the digest and place of its content are taken from here, as git does with
// its index. A file whose times are within two seconds of the cache's writing is read anyway:
// Deno reports ctime in whole seconds, so a change in that second could leave every time as it
// was. The cache is a hint: a missing, torn or
// foreign one (another directory's, or a file the data root's trust checks refuse) only means
// reading every file again.
import { sha256Hex } from "../core/sha256.ts";
import type { DataRoot } from "../store/mod.ts";

const CACHE_TYPE = "reins.snapshot-cache";
/** A file modified this close to the cache's writing is not trusted to be unchanged. */
const RACY_MS = 2000;

export interface FileStat {
  size: number;
  mtimeMs: number | null;
  ctimeMs: number | null;
  ino: number | null;
}

export interface CachedContent {
  sha256: string;
  pack: string;
  offset: number;
  size: number;
}

type Row = [number, number, number, number, string, string, number];

const encoder = new TextEncoder();

function cachePath(root: DataRoot, cwd: string): string {
  return root.layout.statCache(sha256Hex(cwd).slice(0, 32));
}

export class StatCache {
  readonly #rows: Map<string, Row>;
  readonly #writtenMs: number;

  private constructor(rows: Map<string, Row>, writtenMs: number) {
    this.#rows = rows;
    this.#writtenMs = writtenMs;
  }

  /** How many files it knows. */
  get size(): number {
    return this.#rows.size;
  }

  static empty(): StatCache {
    return new StatCache(new Map(), 0);
  }

  /** The cache of `cwd`'s last snapshot, or an empty one. */
  static load(root: DataRoot, cwd: string): StatCache {
    let raw: unknown;
    try {
      const text = root.readText(cachePath(root, cwd));
      if (text === null) return StatCache.empty();
      raw = JSON.parse(text);
    } catch {
      // Missing, torn, or not to be trusted (another user's, writable by others, a link out of
      // the data root): a hint either way, so every file is read again, and write() replaces it.
      return StatCache.empty();
    }
    const value = raw as { type?: unknown; cwd?: unknown; writtenMs?: unknown; files?: unknown };
    if (
      value?.type !== CACHE_TYPE || value.cwd !== cwd || typeof value.writtenMs !== "number" ||
      typeof value.files !== "object" || value.files === null
    ) {
      return StatCache.empty();
    }
    const rows = new Map<string, Row>();
    for (const [path, row] of Object.entries(value.files as Record<string, unknown>)) {
      if (
        Array.isArray(row) && row.length === 7 && typeof row[4] === "string" &&
        /^[0-9a-f]{64}$/.test(row[4]) && typeof row[5] === "string" && typeof row[6] === "number"
      ) {
        rows.set(path, row as Row);
      }
    }
    return new StatCache(rows, value.writtenMs);
  }

  /** The content of `path` when its stat says it is the file the cache saw, else null. */
  find(path: string, stat: FileStat): CachedContent | null {
    const row = this.#rows.get(path);
    if (!row || stat.mtimeMs === null || stat.ctimeMs === null || stat.ino === null) return null;
    const [size, mtimeMs, ctimeMs, ino, sha256, pack, offset] = row;
    if (size !== stat.size || mtimeMs !== stat.mtimeMs || ctimeMs !== stat.ctimeMs) return null;
    if (ino !== stat.ino) return null;
    if (Math.max(mtimeMs, ctimeMs) + RACY_MS >= this.#writtenMs) return null;
    return { sha256, pack, offset, size };
  }

  /** What the cache knew of `path`, whatever its stat says now: a hint for where content is. */
  known(path: string): CachedContent | null {
    const row = this.#rows.get(path);
    return row ? { sha256: row[4], pack: row[5], offset: row[6], size: row[0] } : null;
  }

  /**
   * The cache of `cwd` from this snapshot's files, as write() writes it (take.ts makes it while
   * its pack is fsynced). `writtenMs` is when the files were looked at, at the latest: the racy
   * window counts from it.
   */
  static text(
    cwd: string,
    files: Iterable<{ path: string; stat: FileStat; content: CachedContent }>,
    writtenMs: number,
  ): string {
    const out: Record<string, Row> = {};
    for (const { path, stat, content } of files) {
      if (stat.mtimeMs === null || stat.ctimeMs === null || stat.ino === null) continue;
      out[path] = [
        stat.size,
        stat.mtimeMs,
        stat.ctimeMs,
        stat.ino,
        content.sha256,
        content.pack,
        content.offset,
      ];
    }
    return JSON.stringify({ type: CACHE_TYPE, cwd, writtenMs, files: out });
  }

  /**
   * Writes a text made by text() as the cache of `cwd`: atomically, but without the fsyncs (it is
   * only a hint) nor the look for a killed writer's temp files. It is written as it is, not
   * redacted: it must name the directory's paths as they are to match them.
   */
  static write(root: DataRoot, cwd: string, text: string): void {
    const path = cachePath(root, cwd);
    root.ensureDir(root.layout.statCaches());
    const bytes = encoder.encode(text);
    const write = () => root.writeFileAtomic(path, bytes, { durable: false, sweep: false });
    try {
      try {
        write();
      } catch (error) {
        // Its directory was removed since this root made it: made again, once.
        if (!(error instanceof Deno.errors.NotFound)) throw error;
        root.ensureDir(root.layout.statCaches(), { again: true });
        write();
      }
    } catch (error) {
      // Only a hint: the next snapshot reads the files again.
      if (error instanceof Deno.errors.NotCapable) throw error;
    }
  }
}
