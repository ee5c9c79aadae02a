// index.sqlite: one row per run (the columns listing and lookup filter on, and the record's JSON),
// so that listing 10,000 runs reads one file, not 10,000. The run files stay the truth: a missing,
// corrupt or stale index is rebuilt from runs/*/run.json without being asked (see refreshIndex),
// and a writer that cannot update it leaves `index.dirty`, which makes the next reader rebuild it.
// The connection is the data root's (connectIndex keeps it on the DataRoot), never this module's.
// A writer with no connection open does not open one to note a run: it appends the run's id to
// `index.pending`, which the next reader applies (see noteRun). So `reins run` never opens the
// database (the file, WAL mode, the schema check, two upserts: a few ms of every run).
// Free of zod and of node:fs/path/util on purpose: `reins runs` must start about as fast as an
// empty `deno run`. (node:sqlite itself costs ~2 ms to import — but reaching it through
// `process.getBuiltinModule` loads Deno's whole Node `process`, ~14 ms of CPU: both measured by
// `deno task bench startup`.) node:sqlite itself is loaded only when a connection is opened
// (lib/store/sqlite.ts): `reins run` does not pay for it.
import { importLazily } from "../core/lazy_import.ts";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { loadSqlite, sqlite } from "../core/sqlite.ts";
import type { RunRecord } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";
import { DataRootError } from "../core/errors.ts";
import { isSafeName } from "../core/ids.ts";
import { exists, isActive } from "./run_files.ts";

export { DIRTY_FILE, INDEX_FILE } from "../core/layout.ts";
const SCHEMA_VERSION = 1;
/** The index's meta key that holds when leftovers were last swept (epoch ms; see liveness.ts). */
export const SWEPT_META_KEY = "leftovers_swept_ms";
const BUSY_TIMEOUT_MS = 5000;

const SCHEMA = `
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  context_id TEXT,
  parent_run_id TEXT,
  status TEXT NOT NULL,
  active INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  record TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_by_start ON runs (started_ms DESC, id DESC);
CREATE INDEX runs_by_session ON runs (session_id, started_ms);
CREATE INDEX runs_by_context ON runs (context_id, started_ms);
CREATE INDEX runs_by_parent ON runs (parent_run_id);
CREATE INDEX runs_active ON runs (active) WHERE active = 1;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = ${SCHEMA_VERSION};
`;

export interface ListQuery {
  contextId?: string;
  sessionId?: string;
  statuses?: readonly string[];
  active?: boolean;
  limit: number;
}

/** Whether an error from SQLite says the database file is damaged or not a database at all. */
export function isCorruption(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown })?.errcode;
  if (errcode === 11 || errcode === 26) return true;
  const message = error instanceof Error ? error.message : String(error);
  return /not a database|malformed|corrupt/i.test(message);
}

/** One open connection to a data root's index. */
export class RunIndex {
  readonly root: DataRoot;
  /** True when the file could not be used and this index lives in memory, rebuilt per process. */
  readonly inMemory: boolean;
  readonly #db: DatabaseSync;
  readonly #inode: number | null;
  readonly #statements = new Map<string, StatementSync>();

  private constructor(root: DataRoot, db: DatabaseSync, inode: number | null) {
    this.root = root;
    this.#db = db;
    this.#inode = inode;
    this.inMemory = inode === null;
  }

  get home(): string {
    return this.root.home;
  }

  /** Opens (creating 0600, or recreating when damaged) the index file. */
  static openFile(root: DataRoot): RunIndex {
    const path = root.layout.index();
    root.ensureDir(root.home);
    preparePrivateFile(path);
    const db = new (sqlite().DatabaseSync)(path);
    try {
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      db.exec("PRAGMA journal_mode = WAL");
      // The index can always be rebuilt, so it need not survive a power cut: no fsync at all, not
      // even when the last connection checkpoints the WAL on close (two fsyncs at the end of
      // every command with NORMAL: see `deno task bench` "a whole reins run"). A file a power
      // cut left corrupt is rebuilt (isCorruption); a row left stale is corrected by the next
      // reconciliation of that run.
      db.exec("PRAGMA synchronous = OFF");
      ensureSchema(db);
      for (const suffix of ["-wal", "-shm"]) tightenIfPresent(`${path}${suffix}`);
    } catch (error) {
      db.close();
      throw error;
    }
    return new RunIndex(root, db, Deno.statSync(path).ino);
  }

  /** An index in memory, for a data root whose index file cannot be used. */
  static openMemory(root: DataRoot): RunIndex {
    const db = new (sqlite().DatabaseSync)(":memory:");
    ensureSchema(db);
    return new RunIndex(root, db, null);
  }

  /** Whether this connection still has the file at its path (not one removed and recreated). */
  isCurrent(): boolean {
    if (this.#inode === null) return true;
    try {
      return Deno.statSync(this.root.layout.index()).ino === this.#inode;
    } catch {
      return false;
    }
  }

  close(): void {
    this.#statements.clear();
    try {
      this.#db.close();
    } catch { /* already closed */ }
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs `fn` in one write transaction, holding SQLite's write lock throughout. */
  transaction<T>(fn: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      try {
        this.#db.exec("ROLLBACK");
      } catch { /* the transaction is already gone */ }
      throw error;
    }
  }

  upsert(record: RunRecord): void {
    const startedMs = Date.parse(record.startedAt);
    this.#statement(
      `INSERT OR REPLACE INTO runs (id, session_id, context_id, parent_run_id, status, active,
         started_ms, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      record.id,
      record.sessionId,
      record.contextId,
      record.parentRunId,
      record.status,
      isActive(record.status) ? 1 : 0,
      Number.isFinite(startedMs) ? startedMs : 0,
      JSON.stringify(record),
    );
  }

  remove(id: string): void {
    this.#statement("DELETE FROM runs WHERE id = ?").run(id);
  }

  clear(): void {
    this.#db.exec("DELETE FROM runs; DELETE FROM meta;");
  }

  count(): number {
    return (this.#statement("SELECT count(*) AS n FROM runs").get() as { n: number }).n;
  }

  ids(): string[] {
    return this.#column("SELECT id FROM runs");
  }

  activeIds(): string[] {
    return this.#column("SELECT id FROM runs WHERE active = 1");
  }

  /** Ids of the runs that started at or after `startedMs` (epoch ms), through runs_by_start. */
  idsStartedSince(startedMs: number): string[] {
    return this.#column("SELECT id FROM runs WHERE started_ms >= ?", [startedMs]);
  }

  /** The record JSON of one run, or null. */
  get(id: string): string | null {
    const row = this.#statement("SELECT record FROM runs WHERE id = ?").get(id) as
      | { record: string }
      | undefined;
    return row?.record ?? null;
  }

  /** Record JSON texts, newest first. */
  list(query: ListQuery): string[] {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (query.contextId !== undefined) {
      where.push("context_id = ?");
      params.push(query.contextId);
    }
    if (query.sessionId !== undefined) {
      where.push("session_id = ?");
      params.push(query.sessionId);
    }
    if (query.statuses !== undefined && query.statuses.length > 0) {
      where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
      params.push(...query.statuses);
    }
    if (query.active) where.push("active = 1");
    const sql = `SELECT record FROM runs${where.length ? ` WHERE ${where.join(" AND ")}` : ""}` +
      " ORDER BY started_ms DESC, id DESC LIMIT ?";
    params.push(query.limit);
    return (this.#statement(sql).all(...params) as { record: string }[]).map((row) => row.record);
  }

  /** The id of the run that started last, or null with no runs. */
  newestId(): string | null {
    return this.#column("SELECT id FROM runs ORDER BY started_ms DESC, id DESC LIMIT 1")[0] ??
      null;
  }

  /** Ids starting with `prefix` (a safe name, so it holds no GLOB wildcard), at most `limit`. */
  idsWithPrefix(prefix: string, limit: number): string[] {
    return this.#column("SELECT id FROM runs WHERE id GLOB ? ORDER BY id LIMIT ?", [
      `${prefix}*`,
      limit,
    ]);
  }

  /** Every id, sorted. */
  sortedIds(): string[] {
    return this.#column("SELECT id FROM runs ORDER BY id");
  }

  /**
   * Every id from the one sorting just before `low` to the one just after `high`, sorted: the
   * neighbours of every id between them, in one query. Null when there are more than `limit`.
   */
  idsAround(low: string, high: string, limit: number): string[] | null {
    const ids = this.#column(
      "SELECT id FROM runs WHERE id >= coalesce((SELECT max(id) FROM runs WHERE id < ?1), ?1)" +
        " AND id <= coalesce((SELECT min(id) FROM runs WHERE id > ?2), ?2) ORDER BY id LIMIT ?3",
      [low, high, limit + 1],
    );
    return ids.length > limit ? null : ids;
  }

  /** The ids sorting just before and just after `id`: enough to find its shortest unique prefix. */
  neighbours(id: string): [string | null, string | null] {
    const before = this.#column("SELECT max(id) AS id FROM runs WHERE id < ?", [id])[0] ?? null;
    const after = this.#column("SELECT min(id) AS id FROM runs WHERE id > ?", [id])[0] ?? null;
    return [before, after];
  }

  /** Record JSON of the runs whose parent is `parentId`. */
  children(parentId: string): string[] {
    return (this.#statement("SELECT record FROM runs WHERE parent_run_id = ?").all(
      parentId,
    ) as { record: string }[]).map((row) => row.record);
  }

  /** Record JSON of a session's runs, oldest first. */
  sessionRuns(sessionId: string): string[] {
    return (this.#statement(
      "SELECT record FROM runs WHERE session_id = ? ORDER BY started_ms, id",
    ).all(sessionId) as { record: string }[]).map((row) => row.record);
  }

  getMeta(key: string): string | null {
    const row = this.#statement("SELECT value FROM meta WHERE key = ?").get(key) as
      | { value: string }
      | undefined;
    return row?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.#statement("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run(key, value);
  }

  #column(sql: string, params: (string | number)[] = []): string[] {
    return (this.#statement(sql).all(...params) as Record<string, string | null>[])
      .map((row) => Object.values(row)[0])
      .filter((value): value is string => value !== null);
  }
}

function ensureSchema(db: DatabaseSync): void {
  const { user_version: version } = db.prepare("PRAGMA user_version").get() as {
    user_version: number;
  };
  if (version === SCHEMA_VERSION) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Another process may have created it while we waited for the lock.
    const again = db.prepare("PRAGMA user_version").get() as { user_version: number };
    if (again.user_version !== SCHEMA_VERSION) {
      db.exec("DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS meta;");
      db.exec(SCHEMA);
    }
    db.exec("COMMIT");
  } catch (error) {
    try {
      db.exec("ROLLBACK");
    } catch { /* nothing to roll back */ }
    throw error;
  }
}

/**
 * Creates the database file 0600 before SQLite does, because SQLite gives its -wal and -shm
 * files the database file's mode: so all three stay private whatever the umask.
 */
function preparePrivateFile(path: string): void {
  let info: Deno.FileInfo | null = null;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (info?.isSymlink) {
    throw new DataRootError(`Refusing the link ${JSON.stringify(path)}: the index must be a file`, {
      hint: "remove the link; reins rebuilds the index by itself",
    });
  }
  if (info === null) {
    Deno.openSync(path, { write: true, create: true, mode: 0o600 }).close();
    Deno.chmodSync(path, 0o600);
  } else {
    tightenIfPresent(path);
  }
}

function tightenIfPresent(path: string): void {
  try {
    const info = Deno.lstatSync(path);
    if (info.isFile && info.mode !== null && (info.mode & 0o077) !== 0) Deno.chmodSync(path, 0o600);
  } catch { /* absent */ }
}

/** Removes the index files, for a damaged index that is about to be rebuilt. */
export function removeIndexFiles(root: DataRoot): void {
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      Deno.removeSync(`${root.layout.index()}${suffix}`);
    } catch { /* absent */ }
  }
}

/** What the data root keeps its index connection under (DataRoot.keep). */
const CONNECTION = Symbol("index connection");

/**
 * The index, connected but not refreshed (writers only upsert): the root's one connection,
 * opened on first use and reopened when the file was replaced.
 */
export function connectIndex(root: DataRoot): RunIndex {
  const current = root.kept<RunIndex>(CONNECTION);
  if (current !== null && current.isCurrent()) return current;
  root.keep(CONNECTION, null);
  const index = openConnection(root);
  root.keep(CONNECTION, index);
  return index;
}

/** The root's index connection, if one is open and current (nothing is opened). */
export function openedIndex(root: DataRoot): RunIndex | null {
  const current = root.kept<RunIndex>(CONNECTION);
  return current !== null && current.isCurrent() ? current : null;
}

/** Drops a damaged index and connects to a new, empty one (the next refresh fills it). */
export function resetIndex(root: DataRoot): RunIndex {
  root.keep(CONNECTION, null);
  removeIndexFiles(root);
  return connectIndex(root);
}

/**
 * A new connection to the data root's index (connectIndex keeps it). A damaged file is
 * replaced; a file that cannot be used at all gives an index in memory.
 */
export function openConnection(root: DataRoot): RunIndex {
  try {
    return RunIndex.openFile(root);
  } catch (error) {
    // A data root that is not a directory, or a link out of it, is the user's to fix.
    if (error instanceof DataRootError) throw error;
    if (!isCorruption(error)) return RunIndex.openMemory(root);
    removeIndexFiles(root);
    try {
      return RunIndex.openFile(root);
    } catch {
      return RunIndex.openMemory(root);
    }
  }
}

/** Reads the records of the given runs for the index (run_record.ts has the one the store uses). */
export type RecordReader = (root: DataRoot, runIds: readonly string[]) => RunRecord[];

/**
 * The index, refreshed (see refreshIndex), for code that has a record reader at hand: null when
 * the data root does not exist (no runs, and nothing created).
 */
export function openIndexSync(root: DataRoot, reader: RecordReader): RunIndex | null {
  if (!exists(root.home)) return null;
  let index = connectIndex(root);
  try {
    refreshIndex(index, { reader });
  } catch (error) {
    if (!isCorruption(error)) throw error;
    index = resetIndex(root);
    refreshIndex(index, { reader });
  }
  return index;
}

/**
 * The index, refreshed, for the zod-free paths (`reins runs`, the cheap reconciliation): the
 * record reader is loaded only when the index lacks rows.
 */
export async function openIndex(root: DataRoot): Promise<RunIndex | null> {
  if (!exists(root.home)) return null;
  await loadSqlite();
  let index = connectIndex(root);
  try {
    if (!refreshIndex(index)) await refreshWithReader(index);
  } catch (error) {
    if (!isCorruption(error)) throw error;
    index = resetIndex(root);
    await refreshWithReader(index);
  }
  return index;
}

async function refreshWithReader(index: RunIndex): Promise<void> {
  const { recordsForIndex } = await importLazily<typeof import("./run_record.ts")>(
    "store/run_record.ts",
  );
  refreshIndex(index, { reader: recordsForIndex });
}

/**
 * Records a run's new state in the index: at once with the connection this data root has open,
 * else through `index.pending`, for the next reader (a writer does not open the index just for
 * this). A failure marks the index for rebuilding instead.
 */
export function noteRun(root: DataRoot, record: RunRecord): void {
  try {
    const index = openedIndex(root);
    if (index === null) {
      root.appendLine(root.layout.indexPending(), record.id);
      return;
    }
    index.upsert(record);
  } catch (error) {
    if ((error as Error)?.name === "StoreClosedError") throw error;
    if (isCorruption(error)) {
      // A fresh index has no directory signature, so the next reader fills it from the files.
      try {
        resetIndex(root);
        return;
      } catch { /* fall through to the marker */ }
    }
    markIndexDirty(root);
  }
}

export function markIndexDirty(root: DataRoot): void {
  try {
    Deno.openSync(root.layout.indexDirtyMarker(), { write: true, create: true, mode: 0o600 })
      .close();
  } catch { /* the data root refuses writes: the index cannot be updated either way */ }
}

/** Takes the dirty marker for this process (so a writer marking it anew is not lost). */
function claimDirtyMarker(root: DataRoot): string | null {
  const marker = root.layout.indexDirtyMarker();
  const claimed = `${marker}.${Deno.pid}.${Date.now()}`;
  try {
    Deno.renameSync(marker, claimed);
    return claimed;
  } catch {
    return null;
  }
}

/** What changes when a run directory is added or removed: the runs/ directory's mtime and links. */
function runsSignature(root: DataRoot): string {
  try {
    const info = Deno.statSync(root.layout.runs());
    return `${info.mtime?.getTime() ?? 0}:${info.nlink ?? 0}:${info.ino ?? 0}`;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "absent";
    throw error;
  }
}

/** The run ids that have a directory under runs/ (ignoring runs being created and strays). */
export function runDirectoryNames(root: DataRoot): string[] {
  const names: string[] = [];
  try {
    for (const entry of Deno.readDirSync(root.layout.runs())) {
      if (entry.isDirectory && isSafeName(entry.name)) names.push(entry.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names;
}

/**
 * Brings the index in line with runs/: rows for directories it lacks, none for directories that
 * are gone, all of it anew after a writer failed to update it (or with `full`). It costs one stat
 * when nothing was added or removed. Returns false, having changed nothing, when rows must be
 * read and no reader was given. A record rewritten behind reins's back is not noticed: that is
 * what `reins recover --reindex` is for.
 */
export function refreshIndex(
  index: RunIndex,
  options: { full?: boolean; reader?: RecordReader } = {},
): boolean {
  const root = index.root;
  if (!applyPending(index, options.reader)) return false;
  const dirty = exists(root.layout.indexDirtyMarker());
  const full = options.full === true || dirty;
  const signature = runsSignature(root);
  if (!full && index.getMeta("runs") === signature) return true;
  const names = runDirectoryNames(root);
  const known = full ? new Set<string>() : new Set(index.ids());
  const missing = names.filter((name) => !known.has(name));
  if (missing.length > 0 && options.reader === undefined) return false;
  const claimed = dirty ? claimDirtyMarker(root) : null;
  const present = new Set(names);
  try {
    index.transaction(() => {
      if (full) index.clear();
      for (const id of known) if (!present.has(id)) index.remove(id);
      // Files are read while SQLite's write lock is held, so a writer's newer row cannot be
      // overwritten by an older file read here: its upsert waits for this transaction.
      if (missing.length > 0) {
        for (const record of options.reader!(root, missing)) index.upsert(record);
      }
      index.setMeta("runs", signature);
    });
  } catch (error) {
    // Not rebuilt after all: the marker goes back for the next reader.
    if (claimed !== null) {
      try {
        Deno.renameSync(claimed, root.layout.indexDirtyMarker());
      } catch { /* gone */ }
    }
    throw error;
  }
  if (claimed !== null) {
    try {
      Deno.removeSync(claimed);
    } catch { /* gone */ }
  }
  return true;
}

/**
 * Applies `index.pending` (runs writers noted without opening the index): their records are read
 * and upserted, then the file is emptied — all under its lock, so an id appended meanwhile waits
 * for the next reader, and a failure leaves the ids for it. Returns false, having changed
 * nothing, when there are ids and no reader was given.
 */
function applyPending(index: RunIndex, reader: RecordReader | undefined): boolean {
  const root = index.root;
  const path = root.layout.indexPending();
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true, write: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true;
    throw error;
  }
  try {
    if (file.statSync().size === 0) return true;
    file.lockSync(true);
    const text = new TextDecoder().decode(Deno.readFileSync(path));
    const ids = [...new Set(text.split("\n").filter(isSafeName))];
    if (ids.length > 0) {
      if (reader === undefined) return false;
      index.transaction(() => {
        for (const record of reader(root, ids)) index.upsert(record);
      });
    }
    file.truncateSync(0);
    return true;
  } finally {
    try {
      file.unlockSync(); // before close: see RunWriter.close
    } catch { /* not locked */ }
    file.close();
  }
}
