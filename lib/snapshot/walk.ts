// The paths of a working directory a snapshot keeps: everything but `.git` (a directory or a
// worktree's file, at any depth) and what the project's .gitignore files ignore, without
// following links. Sockets, devices and FIFOs are counted as left out. Sorted, so two walks of
// the same tree list it the same way. The file system is read synchronously (an async lstat
// costs ~4× a sync one here), yielding to other work between slices of a few milliseconds.
import { joinPath } from "../core/paths.ts";
import { IgnoreRules, parseIgnoreFile } from "./gitignore.ts";

export type WalkedEntry =
  | {
    type: "file";
    path: string;
    mode: number;
    size: number;
    mtimeMs: number | null;
    ctimeMs: number | null;
    ino: number | null;
  }
  | { type: "dir"; path: string; mode: number }
  | { type: "symlink"; path: string; target: string };

export interface Walk {
  entries: WalkedEntry[];
  files: number;
  bytes: number;
  leftOut: number;
  /**
   * Of leftOut, the names that are not UTF-8: Deno hands them over with U+FFFD in place of their
   * bytes, a name that does not exist, so nothing can be read or restored by it.
   */
  nonUtf8Names: number;
  /** Set when the walk stopped early: the limit it went over. */
  stopped: "bytes" | "entries" | null;
}

export interface WalkLimits {
  /** Stop once the files add up to more than this. */
  maxBytes: number;
  /** Stop once more than this many paths were seen. */
  maxEntries: number;
  /** Paths (relative, "/"-separated) left out with everything below them. */
  exclude?: ReadonlySet<string>;
  /** Shares its slices with the work that follows the walk (take.ts reads the files). */
  pacer?: Pacer;
}

class Stop extends Error {
  constructor(readonly limit: "bytes" | "entries") {
    super(`over the ${limit} limit`);
  }
}

/** Lets timers and I/O callbacks run between stretches of synchronous work. */
export function yieldNow(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** How long synchronous work runs before it lets the event loop in. */
const SLICE_MS = 40;

/**
 * Paces long synchronous work by time, not by count: a yield costs 1-4 ms here (setTimeout(0)
 * is clamped once timers nest), so yielding every 256 entries spent ~45 ms of a 5,000-file
 * walk waiting, while 40 ms slices keep timers and requests of the same process (reins serve
 * runs turns in-process) answered without a delay a person notices.
 */
export class Pacer {
  #since = performance.now();

  /** A promise to await when the slice is used up, else null (nothing to wait for). */
  due(): Promise<void> | null {
    if (performance.now() - this.#since < SLICE_MS) return null;
    return yieldNow().then(() => {
      this.#since = performance.now();
    });
  }
}

/** `dir` normalized, without a trailing "/" ("/" itself becomes ""), to append "/name" to. */
export function withoutTrailingSlash(dir: string): string {
  const normalized = joinPath(dir);
  return normalized.endsWith("/") ? normalized.slice(0, -1) : normalized;
}

function compareNames(a: Deno.DirEntry, b: Deno.DirEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Whether `path` names something (a link counts, whatever it points at). */
export function nameExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Walks `root` (an existing directory) and lists what a snapshot keeps of it. */
export async function walkTree(root: string, limits: WalkLimits): Promise<Walk> {
  const walk: Walk = {
    entries: [],
    files: 0,
    bytes: 0,
    leftOut: 0,
    nonUtf8Names: 0,
    stopped: null,
  };
  const rules = new IgnoreRules();
  const pacer = limits.pacer ?? new Pacer();
  const base = withoutTrailingSlash(root);
  const visit = async (relative: string): Promise<void> => {
    const absolute = relative === "" ? base : `${base}/${relative}`;
    const children = [...Deno.readDirSync(absolute)].sort(compareNames);
    if (children.some((entry) => entry.name === ".gitignore" && entry.isFile)) {
      let text = "";
      try {
        text = Deno.readTextFileSync(joinPath(absolute, ".gitignore"));
      } catch { /* unreadable: no rules from it */ }
      rules.add(relative, parseIgnoreFile(text));
    }
    for (const entry of children) {
      const due = pacer.due();
      if (due !== null) await due;
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (walk.entries.length >= limits.maxEntries) throw new Stop("entries");
      if (
        entry.name === ".git" || limits.exclude?.has(path) || rules.ignores(path, entry.isDirectory)
      ) {
        walk.leftOut++;
        continue;
      }
      // A name from readdir has no "/" and is never "." or "..": no normalizing needed.
      const full = `${absolute}/${entry.name}`;
      if (entry.name.includes("\uFFFD") && !nameExists(full)) {
        walk.nonUtf8Names++;
        walk.leftOut++;
        continue;
      }
      if (entry.isSymlink) {
        walk.entries.push({ type: "symlink", path, target: Deno.readLinkSync(full) });
      } else if (entry.isDirectory) {
        const info = Deno.lstatSync(full);
        walk.entries.push({ type: "dir", path, mode: (info.mode ?? 0o755) & 0o7777 });
        await visit(path);
      } else if (entry.isFile) {
        const info = Deno.lstatSync(full);
        walk.files++;
        walk.bytes += info.size;
        if (walk.bytes > limits.maxBytes) throw new Stop("bytes");
        walk.entries.push({
          type: "file",
          path,
          mode: (info.mode ?? 0o644) & 0o7777,
          size: info.size,
          mtimeMs: info.mtime?.getTime() ?? null,
          ctimeMs: info.ctime?.getTime() ?? null,
          ino: info.ino,
        });
      } else {
        walk.leftOut++;
      }
    }
  };
  try {
    await visit("");
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    walk.stopped = error.limit;
  }
  return walk;
}
