// What the last snapshot of a directory learned about its files, so the next one (most runs
// start in the directory the last one did) need not read a file whose size, times and inode
// are unchanged: the digest and place of its content are taken from here, as git does with
// its index. A file whose times are within two seconds of the cache's writing is read anyway:
// Deno reports ctime in whole seconds, so a change in that second could leave every time as it
// was. The cache is a hint: a missing, torn or
// foreign one (another directory's, or a file the data root's trust checks refuse) only means
// reading every file again.
import { joinPath } from "../core/paths.ts";
import { readPrivateText } from "../core/trust.ts";
import { ensurePrivateDir } from "../core/private_dir.ts";
import { sha256Hex } from "../core/sha256.ts";
import { snapshotsDir } from "./paths.ts";

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

function cachePath(home: string, cwd: string): string {
  const key = sha256Hex(cwd).slice(0, 32);
  return joinPath(snapshotsDir(home), "cache", `${key}.json`);
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
  static load(home: string, cwd: string): StatCache {
    let raw: unknown;
    try {
      const text = readPrivateText(home, cachePath(home, cwd));
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

  /** Writes a text made by text() as the cache of `cwd` (no fsync: it is only a hint). */
  static write(home: string, cwd: string, text: string): void {
    const path = cachePath(home, cwd);
    const dir = joinPath(snapshotsDir(home), "cache");
    ensurePrivateDir(home, dir);
    const temp = `${path}.${crypto.randomUUID()}.tmp`;
    try {
      try {
        Deno.writeTextFileSync(temp, text, { mode: 0o600 });
      } catch (error) {
        // Removed since this process made it: made again, once.
        if (!(error instanceof Deno.errors.NotFound)) throw error;
        Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
        Deno.writeTextFileSync(temp, text, { mode: 0o600 });
      }
      Deno.renameSync(temp, path);
    } catch (error) {
      // Only a hint: the next snapshot reads the files again.
      if (error instanceof Deno.errors.NotCapable) throw error;
      try {
        Deno.removeSync(temp);
      } catch { /* not written */ }
    }
  }
}
