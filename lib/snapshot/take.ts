// Takes the snapshot of a run's working directory as the run starts, so a replay can start from
// the state the run started from. Each content is stored once (blobs.ts), so an unchanged tree
// snapshotted again writes no file bytes, only its manifest. A tree over the cap is not
// snapshotted: the manifest says so and why. A file that cannot be read is left out and counted.
// It never changes the working directory. Reads are synchronous, in slices between yields
// (walk.ts's Pacer). The first snapshot of a tree costs about one open, one read and one hash
// per file: a small file is read straight into the pack's buffer, and the index is asked about
// a whole buffer of contents in one query (not one per file) before the buffer is written out,
// by a thread of the runtime, while the next one fills.
//
// Durability, in order: (1) the pack is fsynced; only then (2) the index lists its contents,
// (3) the directory's stat cache and (4) the manifest are written, neither fsynced. So anything
// that names a place in a pack (the index, a cache a later snapshot trusts, a manifest) can only
// reach the disk after the bytes it names; a power cut loses at most this snapshot's manifest
// (a replay then copies the directory, and says so) and some deduplication. All four happen
// after startSnapshot() returns, while the agent runs: the snapshot is what was read, and its
// bytes are in the pack writer's hands by then, whatever the agent does to the directory. A turn
// awaits `written` before it settles, so a finished run has its snapshot on disk as before; a
// crash before that loses only this snapshot (no manifest: a replay says so and copies).
import { nowIso } from "../core/clock.ts";
import { importLazily } from "../core/lazy_import.ts";
import { loadSqlite } from "../core/sqlite.ts";
import { dirnameOf, isInside } from "../core/paths.ts";
import { redactJsonText } from "../core/redact.ts";
import type { DataRoot } from "../store/mod.ts";
import { BlobIndex, type BlobLocation, hasBlobIndex, PackWriter } from "./blobs.ts";
import { type CachedContent, type FileStat, StatCache } from "./stat_cache.ts";
import type { SnapshotEntry, SnapshotManifest } from "./manifest.ts";
import { describeSize } from "./glance.ts";
import { Pacer, walkTree, withoutTrailingSlash } from "./walk.ts";

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
  /** Of leftOut, the names that are not UTF-8 (see Walk.nonUtf8Names). */
  nonUtf8Names: number;
  manifest: string;
}

type FileEntry = Extract<SnapshotEntry, { type: "file" }>;

/** Files up to this size are read whole (into the pack's buffer); bigger ones in chunks. */
const WHOLE_FILE = 4 * 1024 * 1024;
const CHUNK = 1024 * 1024;

type CreateHash = typeof import("node:crypto").createHash;

/**
 * node:crypto, imported when a file's content must be hashed: loading it costs ~19 ms of CPU
 * (`deno task bench startup`), and a run in a tree the stat cache knows, or an empty one, hashes none.
 */
let createHash: CreateHash | null = null;
async function loadHashing(): Promise<void> {
  createHash ??= (await importLazily<typeof import("node:crypto")>("node:crypto"))
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

/**
 * Where one content of this snapshot is. A content read into the pack's buffer is only looked
 * up in the index when the buffer is written out (one query for the batch, not one per file),
 * so its place is settled then: in the index (its bytes dropped from the buffer) or in this
 * pack. The manifest's entries are filled in from these once the snapshot is committed.
 */
interface Placed extends BlobLocation {
  sha256: string;
  /** Stored by this snapshot (listed in the index at commit). */
  fresh: boolean;
}

/** One snapshot's view of the store: what the index has, and what this snapshot added. */
class Store {
  readonly #root: DataRoot;
  /** The index, once looked for; null after that when the data root has none yet. */
  #index: BlobIndex | null | undefined = undefined;
  readonly pack: PackWriter;
  /** Every content this snapshot read, by sha256: a file seen twice is stored once. */
  readonly #placed = new Map<string, Placed>();
  /** Contents in the pack's buffer not looked up in the index yet, in pack order. */
  #pending: Placed[] = [];
  storedBytes = 0;

  constructor(root: DataRoot) {
    this.#root = root;
    this.pack = new PackWriter(root);
  }

  #lookups(): BlobIndex | null {
    if (this.#index === undefined) this.#index = BlobIndex.openIfAny(this.#root);
    return this.#index;
  }

  /** What this snapshot or the stat cache's `hint` already places for `sha256`. */
  #known(sha256: string, hint: CachedContent | null): Placed | null {
    const placed = this.#placed.get(sha256);
    if (placed) return placed;
    if (hint?.sha256 === sha256) {
      return { sha256, pack: hint.pack, offset: hint.offset, size: hint.size, fresh: false };
    }
    return null;
  }

  /**
   * Stores a small file's content (unless the store has it): read straight into the pack's
   * buffer, in one read when it still has the `size` bytes the walk saw. Null when it does not
   * fit the buffer's room now (see makeRoom()), or is not small, or has grown (see putLarge()).
   */
  putSmall(path: string, size: number, hint: CachedContent | null): Placed | "large" | "room" {
    if (size > WHOLE_FILE) return "large";
    if (this.pack.room < size + 1) return "room";
    const into = this.pack.tail(size + 1);
    let filled = 0;
    {
      using file = Deno.openSync(path, { read: true });
      // A regular file's read stops short only at its end, so one that fills `size` bytes has
      // been read whole, without a second read to see the end.
      while (filled < into.length) {
        const got = file.readSync(into.subarray(filled));
        if (got === null) break;
        filled += got;
        if (filled === size) break;
      }
    }
    if (filled > size) return "large";
    const sha256 = sha256Of(into.subarray(0, filled));
    const known = this.#known(sha256, hint);
    if (known) return known;
    const placed = { sha256, pack: this.pack.id, offset: this.pack.offset, size: filled };
    this.pack.append(filled);
    const pending = { ...placed, fresh: true };
    this.#pending.push(pending);
    this.#placed.set(sha256, pending);
    return pending;
  }

  /** Makes room in the pack's buffer: settles what it holds and starts writing it out. */
  async makeRoom(): Promise<void> {
    this.#settle();
    await this.pack.flush();
  }

  /** Stores a file of any size in chunks (unless the store has it): read to hash, then copied. */
  async putLarge(path: string, hint: CachedContent | null): Promise<Placed> {
    const first = readChunks(path, () => {});
    const known = this.#known(first.sha256, hint);
    if (known) return known;
    const indexed = this.#lookups()?.find(first.sha256);
    if (indexed) return this.#keep({ sha256: first.sha256, ...indexed, fresh: false });
    // Copied while hashed again: what is stored is named by what was read this time, written
    // straight to the pack once what was buffered before it is out.
    await this.makeRoom();
    await this.pack.drain();
    const offset = this.pack.offset;
    const copied = readChunks(path, (chunk) => this.pack.writeNow(chunk));
    this.storedBytes += copied.size;
    const placed = { sha256: copied.sha256, pack: this.pack.id, offset, size: copied.size };
    return this.#keep({ ...placed, fresh: true });
  }

  #keep(placed: Placed): Placed {
    this.#placed.set(placed.sha256, placed);
    return placed;
  }

  /**
   * Looks the contents read into the buffer up in the index (one query for them all), and
   * drops from the buffer those it has, pointing them there instead.
   */
  #settle(): void {
    const pending = this.#pending;
    this.#pending = [];
    if (pending.length === 0) return;
    const indexed = this.#lookups()?.findMany(pending.map((p) => p.sha256)) ?? new Map();
    const kept = indexed.size === 0 ? pending : pending.filter((p) => !indexed.has(p.sha256));
    if (kept.length !== pending.length) {
      for (const placed of pending) {
        const at = indexed.get(placed.sha256);
        if (at) Object.assign(placed, at, { fresh: false });
      }
      const offsets = this.pack.retain(kept);
      kept.forEach((placed, i) => placed.offset = offsets[i]);
    }
    for (const placed of kept) this.storedBytes += placed.size;
  }

  /** Places every content for good (the last index lookups): storedBytes is final then. */
  seal(): void {
    this.#settle();
  }

  /**
   * Makes what this snapshot added durable (the pack fsynced), then lists it in the index. Every
   * content is placed for good before the fsync starts, and `whileSyncing` runs while the disk
   * syncs: it prepares what is written once the pack is durable, without writing anything.
   */
  async commit(whileSyncing: () => void): Promise<void> {
    this.#settle();
    const synced = this.pack.finish();
    // Awaited below, whatever happens before.
    synced.catch(() => {});
    const fresh: [string, BlobLocation][] = [];
    try {
      for (const placed of this.#placed.values()) {
        if (placed.fresh) fresh.push([placed.sha256, placed]);
      }
      // Opening (or making) the index lists nothing yet.
      if (fresh.length > 0 && (this.#index ?? null) === null) {
        await loadSqlite();
        this.#index = BlobIndex.open(this.#root);
      }
      whileSyncing();
    } finally {
      await synced;
    }
    if (fresh.length > 0) this.#index?.addAll(fresh);
  }

  async close(): Promise<void> {
    await this.pack.abandon();
    this.#index?.close();
  }
}

function unreadable(error: unknown): boolean {
  return error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.IsADirectory;
}

/**
 * The paths under `cwd` that are the data root's (none when it is elsewhere): never part of a
 * snapshot. At the root itself, what its layout keeps there (Layout.topLevelNames); reading
 * reins's own sqlite files from the process that has them open would even drop that
 * connection's locks (closing any descriptor of a file releases the process's POSIX locks on it).
 */
function dataRootIn(root: DataRoot, cwd: string): Set<string> {
  let real: string;
  let dir: string;
  try {
    real = Deno.realPathSync(root.home);
    dir = Deno.realPathSync(cwd);
  } catch {
    return new Set();
  }
  if (real === dir) return new Set(root.layout.topLevelNames());
  if (!isInside(real, dir)) return new Set();
  return new Set([real.slice(dir === "/" ? 1 : dir.length + 1)]);
}

const encoder = new TextEncoder();

/** A manifest as written: one line of JSON, redacted like every file reins writes. */
function manifestBytesOf(manifest: SnapshotManifest): Uint8Array {
  return encoder.encode(redactJsonText(`${JSON.stringify(manifest)}\n`));
}

/**
 * Writes a manifest in place atomically (temp file, rename), 0600, but without the fsyncs of a
 * run's record: they cost more than the rest of a small tree's snapshot, on the start of every
 * run, and a manifest lost to a power cut only means a replay in a copy, said as such. Nor is
 * manifests/ (one file per run) listed for a killed writer's temp files: a manifest is written
 * once. snapshots/ is the user's to remove (see PackWriter): a directory removed since this root
 * made it is made again, once, as the stat cache's is — rather than looked at again (an lstat of
 * each of its segments) before every run's manifest.
 */
function writeManifest(root: DataRoot, path: string, bytes: Uint8Array): void {
  const dir = dirnameOf(path);
  root.ensureDir(dir);
  const write = () => root.writeFileAtomic(path, bytes, { durable: false, sweep: false });
  try {
    write();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    root.ensureDir(dir, { again: true });
    write();
  }
}

/** "64 MiB". */
function sizeOf(bytes: number): string {
  return describeSize(0, bytes).slice("0 files, ".length);
}

/** A snapshot whose files are all read, while what it read is still being written. */
export interface StartedSnapshot {
  summary: SnapshotSummary;
  /**
   * Settles once the snapshot is on disk: its pack fsynced, then the index, the stat cache and
   * the manifest written, in that order. Rejects when that fails (the snapshot is then lost).
   */
  written: Promise<void>;
}

/**
 * Snapshots `cwd` for run `runId`: the contents of its files, then the manifest. Returns what it
 * did; a tree over the caps gets a manifest that says it was skipped and why.
 */
export async function takeSnapshot(
  root: DataRoot,
  runId: string,
  cwd: string,
  options: SnapshotOptions = {},
): Promise<SnapshotSummary> {
  const started = await startSnapshot(root, runId, cwd, options);
  await started.written;
  return started.summary;
}

/**
 * Reads the snapshot of `cwd` for run `runId`, and returns once every file is read: the agent
 * may change the directory from then on. Writing it out (the fsync above all) goes on meanwhile,
 * until `written` settles; a turn waits for that before it settles (lib/turn/run_turn.ts), so a
 * finished run has its snapshot on disk as before, and its start does not wait for the disk.
 */
export async function startSnapshot(
  root: DataRoot,
  runId: string,
  cwd: string,
  options: SnapshotOptions = {},
): Promise<StartedSnapshot> {
  const startedMs = Date.now();
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
  const path = root.layout.snapshotManifest(runId);
  const pacer = new Pacer();
  const walk = maxBytes <= 0
    ? { entries: [], files: 0, bytes: 0, leftOut: 0, nonUtf8Names: 0, stopped: "off" as const }
    : await walkTree(cwd, { maxBytes, maxEntries, exclude: dataRootIn(root, cwd), pacer });
  manifest.leftOut = walk.leftOut;
  if (walk.nonUtf8Names > 0) manifest.nonUtf8Names = walk.nonUtf8Names;
  let readBytes = 0;
  const summary = (): SnapshotSummary => ({
    state: manifest.state,
    reason: manifest.reason,
    files: manifest.files,
    bytes: manifest.bytes,
    storedBytes: manifest.storedBytes,
    readBytes,
    leftOut: manifest.leftOut,
    nonUtf8Names: walk.nonUtf8Names,
    manifest: path,
  });
  if (walk.stopped !== null) {
    manifest.state = "skipped";
    manifest.reason = walk.stopped === "off"
      ? "snapshots are turned off (snapshot.maxBytes is 0 in config.json)"
      : walk.stopped === "bytes"
      ? `its files add up to more than the ${sizeOf(maxBytes)} cap ` +
        "(snapshot.maxBytes in config.json)"
      : `it has more than ${maxEntries} paths (snapshot.maxEntries in config.json)`;
    writeManifest(root, path, manifestBytesOf(manifest));
    return { summary: summary(), written: Promise.resolve() };
  }
  // A tree without files (an empty working directory, say) has no contents to look up or read,
  // and nothing for the stat cache to know: neither the blob index nor the cache is looked for
  // (each a missing file on a fresh data root, and an exception to make and catch).
  // Reading the files looks contents up in the blob index synchronously: its module loaded first.
  if (walk.files > 0 && hasBlobIndex(root)) await loadSqlite();
  const store = new Store(root);
  const cache = walk.files > 0 ? StatCache.load(root, cwd) : StatCache.empty();
  const base = withoutTrailingSlash(cwd);
  // A content read this time is placed for good only once the store is sealed (see Placed):
  // its entries in the manifest and the cache are filled in then.
  const read: { entry: FileEntry; placed: Placed; stat: FileStat | null }[] = [];
  const seen: { path: string; stat: FileStat; content: CachedContent }[] = [];
  try {
    for (const entry of walk.entries) {
      if (entry.type !== "file") {
        manifest.entries.push(entry);
        continue;
      }
      const { path, mode, ...stat } = entry;
      const cached = cache.find(path, stat);
      if (cached) {
        seen.push({ path, stat, content: cached });
        const { sha256, pack, offset } = cached;
        manifest.entries.push({ type: "file", path, mode, size: stat.size, sha256, pack, offset });
        manifest.files++;
        manifest.bytes += stat.size;
        continue;
      }
      if (createHash === null) await loadHashing();
      let placed: Placed;
      try {
        const full = `${base}/${path}`;
        const hint = cache.known(path);
        let small = store.putSmall(full, stat.size, hint);
        if (small === "room") {
          await store.makeRoom();
          small = store.putSmall(full, stat.size, hint);
        }
        placed = typeof small === "string" ? await store.putLarge(full, hint) : small;
      } catch (error) {
        if (!unreadable(error)) throw error;
        manifest.leftOut++;
        continue;
      }
      // Read as it is now, which may differ from what the walk saw (then it is not cached).
      const size = placed.size;
      const file: FileEntry = { type: "file", path, mode, size, sha256: "", pack: "", offset: 0 };
      manifest.entries.push(file);
      read.push({ entry: file, placed, stat: size === stat.size ? stat : null });
      manifest.files++;
      manifest.bytes += size;
      readBytes += size;
      const due = pacer.due();
      if (due !== null) await due;
    }
    store.seal();
    manifest.storedBytes = store.storedBytes;
  } catch (error) {
    await store.close();
    throw error;
  }
  const written = (async () => {
    let cacheText: string | null = null;
    let manifestBytes: Uint8Array = new Uint8Array();
    try {
      await store.commit(() => {
        for (const { entry, placed, stat } of read) {
          entry.sha256 = placed.sha256;
          entry.pack = placed.pack;
          entry.offset = placed.offset;
          if (stat !== null) seen.push({ path: entry.path, stat, content: { ...placed } });
        }
        // Every file as the cache had it (and no other files): it is still right as it is.
        // Its time is the walk's start: what changed since then is not trusted next time.
        if (read.length > 0 || seen.length !== cache.size) {
          cacheText = StatCache.text(cwd, seen, startedMs);
        }
        manifestBytes = manifestBytesOf(manifest);
      });
    } finally {
      await store.close();
    }
    if (cacheText !== null) StatCache.write(root, cwd, cacheText);
    writeManifest(root, path, manifestBytes);
  })();
  // Whoever started the snapshot handles its failure; until then it is not unhandled.
  written.catch(() => {});
  return { summary: summary(), written };
}
