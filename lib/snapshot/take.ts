// Takes the snapshot of a run's working directory as the run starts, so a replay can start from
// the state the run started from. Each content is stored once (blobs.ts), so an unchanged tree
// snapshotted again writes no file bytes, only its manifest. A tree over the cap is not
// snapshotted: the manifest says so and why. A file that cannot be read is left out and counted.
// It never changes the working directory. Reads are synchronous, in stretches between yields.
import { nowIso } from "../core/clock.ts";
import { importLazily } from "../core/lazy_import.ts";
import { dirnameOf, isInside, joinPath } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/private_files.ts";
import { redactJsonText } from "../core/redact.ts";
import { BlobIndex, type BlobLocation, PackWriter } from "./blobs.ts";
import { type CachedContent, type FileStat, StatCache } from "./stat_cache.ts";
import type { SnapshotManifest } from "./manifest.ts";
import { describeSize, manifestPath } from "./paths.ts";
import { walkTree, yieldNow } from "./walk.ts";

export const DEFAULT_SNAPSHOT_MAX_BYTES = 64 * 1024 * 1024;
export const DEFAULT_SNAPSHOT_MAX_ENTRIES = 100_000;

export interface SnapshotOptions {
  /** Files adding up to more than this are not snapshotted (0: never snapshot). */
  maxBytes?: number;
  /** Trees with more paths than this are not snapshotted. */
  maxEntries?: number;
}

export interface SnapshotSummary {
  state: SnapshotManifest["state"];
  reason: string | null;
  files: number;
  bytes: number;
  /** Bytes written to the blob store this time. */
  storedBytes: number;
  /** Bytes read from files this time (files the last snapshot saw unchanged are not read). */
  readBytes: number;
  leftOut: number;
  manifest: string;
}

/** Files up to this size are read whole; bigger ones are hashed, then copied, in chunks. */
const WHOLE_FILE = 4 * 1024 * 1024;
const CHUNK = 1024 * 1024;
/** Bytes read between two yields to the event loop. */
const STRETCH = 8 * 1024 * 1024;

type CreateHash = typeof import("node:crypto").createHash;

/**
 * node:crypto, imported when a file's content must be hashed: loading it costs ~19 ms of CPU
 * (lib/core/sha256.ts), and a run in a tree the stat cache knows, or an empty one, hashes none.
 */
let createHash: CreateHash | null = null;
async function loadHashing(): Promise<void> {
  createHash ??= (await importLazily<typeof import("node:crypto")>(new URL("node:crypto")))
    .createHash;
}

function hashing(): CreateHash {
  if (createHash === null) throw new Error("node:crypto is not loaded yet (loadHashing)");
  return createHash;
}

function sha256Of(bytes: Uint8Array): string {
  return hashing()("sha256").update(bytes).digest("hex");
}

/** Reads `path` in chunks, giving each to `each`; the sha256 and size of what was read. */
function readChunks(
  path: string,
  each: (chunk: Uint8Array) => void,
): { sha256: string; size: number } {
  const hash = hashing()("sha256");
  let size = 0;
  using file = Deno.openSync(path, { read: true });
  const buffer = new Uint8Array(CHUNK);
  while (true) {
    const got = file.readSync(buffer);
    if (got === null) break;
    const chunk = buffer.subarray(0, got);
    hash.update(chunk);
    each(chunk);
    size += got;
  }
  return { sha256: hash.digest("hex"), size };
}

/** One snapshot's view of the store: what the index has, and what this snapshot added. */
class Store {
  readonly #home: string;
  /** Opened on the first content the stat cache cannot place (a run in a known tree never does). */
  #index: BlobIndex | null = null;
  readonly pack: PackWriter;
  readonly added = new Map<string, BlobLocation>();
  storedBytes = 0;
  /** One byte more than a small file may have, so a file that grew is seen to. */
  /** Made on the first small file read (see PackWriter's buffer). */
  #scratch: Uint8Array | null = null;

  constructor(home: string) {
    this.#home = home;
    this.pack = new PackWriter(home);
  }

  #indexed(): BlobIndex {
    return this.#index ??= BlobIndex.open(this.#home);
  }

  /** Where content `sha256` is stored, if it is; `hint` is where the stat cache last saw it. */
  find(sha256: string, hint: CachedContent | null): BlobLocation | null {
    const added = this.added.get(sha256);
    if (added) return added;
    if (hint?.sha256 === sha256) return { pack: hint.pack, offset: hint.offset, size: hint.size };
    return this.#indexed().find(sha256);
  }

  /** Reads a small file whole into a buffer kept for the purpose; null when it is not small. */
  #readSmall(path: string): Uint8Array | null {
    using file = Deno.openSync(path, { read: true });
    const scratch = this.#scratch ??= new Uint8Array(WHOLE_FILE + 1);
    let filled = 0;
    while (true) {
      const got = file.readSync(scratch.subarray(filled));
      if (got === null) return scratch.subarray(0, filled);
      filled += got;
      if (filled === scratch.length) return null;
    }
  }

  /** Stores a file's content (unless the store has it) and returns its digest and place. */
  put(
    path: string,
    size: number,
    hint: CachedContent | null,
  ): { sha256: string; size: number; at: BlobLocation } {
    const small = size <= WHOLE_FILE ? this.#readSmall(path) : null;
    if (small !== null) {
      const bytes = small;
      const sha256 = sha256Of(bytes);
      const known = this.find(sha256, hint);
      if (known) return { sha256, size: bytes.length, at: known };
      const at = { pack: this.pack.id, offset: this.pack.offset, size: bytes.length };
      this.pack.write(bytes);
      this.added.set(sha256, at);
      this.storedBytes += bytes.length;
      return { sha256, size: bytes.length, at };
    }
    const first = readChunks(path, () => {});
    const known = this.find(first.sha256, hint);
    if (known) return { ...first, at: known };
    // Copied while hashed again: what is stored is named by what was read this time.
    const offset = this.pack.offset;
    const copied = readChunks(path, (chunk) => this.pack.write(chunk));
    const at = { pack: this.pack.id, offset, size: copied.size };
    this.added.set(copied.sha256, at);
    this.storedBytes += copied.size;
    return { ...copied, at };
  }

  /** Makes what this snapshot added durable, then lists it in the index. */
  commit(): void {
    this.pack.finish();
    if (this.added.size > 0) this.#indexed().addAll(this.added);
  }

  close(): void {
    this.pack.abandon();
    this.#index?.close();
  }
}

function unreadable(error: unknown): boolean {
  return error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.IsADirectory;
}

// What reins keeps at the top of its data root: never part of a snapshot. Reading reins's own
// sqlite files from the process that has them open would even drop that connection's locks
// (closing any descriptor of a file releases the process's POSIX locks on it).
const DATA_ROOT_ENTRIES = [
  "runs",
  "contexts",
  "outbox",
  "snapshots",
  "suites",
  "tmp",
  "logs",
  "index.sqlite",
  "index.sqlite-wal",
  "index.sqlite-shm",
  "index.dirty",
  "platform.json",
  ".platform.json.lock",
  "serve.token",
  "config.json",
];

/** The paths under `cwd` that are the data root's (none when it is elsewhere). */
function dataRootIn(home: string, cwd: string): Set<string> {
  let root: string;
  let dir: string;
  try {
    root = Deno.realPathSync(home);
    dir = Deno.realPathSync(cwd);
  } catch {
    return new Set();
  }
  if (root === dir) return new Set(DATA_ROOT_ENTRIES);
  if (!isInside(root, dir)) return new Set();
  return new Set([root.slice(dir === "/" ? 1 : dir.length + 1)]);
}

/**
 * Writes a manifest in place atomically (temp file, rename), 0600 and redacted like every file
 * reins writes, but without the fsyncs of a run's record: they cost more than the rest of a
 * small tree's snapshot, on the start of every run, and a manifest lost to a power cut only
 * means a replay in a copy, said as such.
 */
function writeManifest(home: string, path: string, text: string): void {
  ensurePrivateDir(home, dirnameOf(path));
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    Deno.writeTextFileSync(temp, redactJsonText(text), { mode: 0o600, createNew: true });
    Deno.renameSync(temp, path);
  } catch (error) {
    try {
      Deno.removeSync(temp);
    } catch { /* not written */ }
    throw error;
  }
}

/** "64 MiB". */
function sizeOf(bytes: number): string {
  return describeSize(0, bytes).slice("0 files, ".length);
}

/**
 * Snapshots `cwd` for run `runId`: the contents of its files, then the manifest. Returns what it
 * did; a tree over the caps gets a manifest that says it was skipped and why.
 */
export async function takeSnapshot(
  home: string,
  runId: string,
  cwd: string,
  options: SnapshotOptions = {},
): Promise<SnapshotSummary> {
  const maxBytes = options.maxBytes ?? DEFAULT_SNAPSHOT_MAX_BYTES;
  const maxEntries = options.maxEntries ?? DEFAULT_SNAPSHOT_MAX_ENTRIES;
  const manifest: SnapshotManifest = {
    type: "reins.snapshot",
    version: 1,
    runId,
    cwd,
    takenAt: nowIso(),
    state: "taken",
    reason: null,
    files: 0,
    bytes: 0,
    leftOut: 0,
    storedBytes: 0,
    entries: [],
  };
  const walk = maxBytes <= 0
    ? { entries: [], files: 0, bytes: 0, leftOut: 0, stopped: "off" as const }
    : await walkTree(cwd, { maxBytes, maxEntries, exclude: dataRootIn(home, cwd) });
  manifest.leftOut = walk.leftOut;
  let readBytes = 0;
  if (walk.stopped !== null) {
    manifest.state = "skipped";
    manifest.reason = walk.stopped === "off"
      ? "snapshots are turned off (snapshot.maxBytes is 0 in config.json)"
      : walk.stopped === "bytes"
      ? `its files add up to more than the ${sizeOf(maxBytes)} cap ` +
        "(snapshot.maxBytes in config.json)"
      : `it has more than ${maxEntries} paths (snapshot.maxEntries in config.json)`;
  } else {
    const store = new Store(home);
    const cache = StatCache.load(home, cwd);
    const seen: { path: string; stat: FileStat; content: CachedContent }[] = [];
    let misses = 0;
    let stretch = 0;
    try {
      for (const entry of walk.entries) {
        if (entry.type !== "file") {
          manifest.entries.push(entry);
          continue;
        }
        const { path, mode, ...stat } = entry;
        const cached = cache.find(path, stat);
        let content: CachedContent;
        let size = stat.size;
        if (cached) content = cached;
        else {
          misses++;
          await loadHashing();
          try {
            const put = store.put(joinPath(cwd, path), stat.size, cache.known(path));
            content = { sha256: put.sha256, ...put.at };
            // Read as it is now, which may differ from what the walk saw.
            if (put.size !== stat.size) size = put.size;
            else seen.push({ path, stat, content });
          } catch (error) {
            if (!unreadable(error)) throw error;
            manifest.leftOut++;
            continue;
          }
          readBytes += size;
          stretch += size;
        }
        if (cached) seen.push({ path, stat, content });
        manifest.entries.push({
          type: "file",
          path,
          mode,
          size,
          sha256: content.sha256,
          pack: content.pack,
          offset: content.offset,
        });
        manifest.files++;
        manifest.bytes += size;
        if (stretch >= STRETCH) {
          stretch = 0;
          await yieldNow();
        }
      }
      store.commit();
      manifest.storedBytes = store.storedBytes;
    } finally {
      store.close();
    }
    // Every file as the cache had it (and no other files): it is still right as it is.
    if (misses > 0 || seen.length !== cache.size) StatCache.save(home, cwd, seen);
  }
  const path = manifestPath(home, runId);
  writeManifest(home, path, `${JSON.stringify(manifest)}\n`);
  return {
    state: manifest.state,
    reason: manifest.reason,
    files: manifest.files,
    bytes: manifest.bytes,
    storedBytes: manifest.storedBytes,
    readBytes,
    leftOut: manifest.leftOut,
    manifest: path,
  };
}
