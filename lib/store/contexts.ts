// Context id → harness sessions: `contexts/<context id>/harness-session.json`, so the next turn
// on a context continues the same conversation — each driver its own (claude its Claude Code
// session, codex its thread, …), with the one used last at the top (docs/contexts.md). Works in
// memory when there is no data root, and when the file cannot be written it says so once per map
// and goes on with what it remembers. Every write is durable (fsync of the file before its
// rename, of the directory after): a rename a power cut overtook could leave the file empty. The
// first write into a context's directory this process made also syncs `contexts/` (and the data
// root, when `contexts/` was made too): else, on a filesystem that does not order a directory's
// creation before the writes into it, a power cut could lose the whole directory, its synced
// file with it. A context made before costs no more. A
// file that is there but empty or damaged is said once and rebuilt from the context's runs
// (written back by the next put), never taken for a new conversation. The file is read on every
// get(), so a long-lived map (a server's) sees what other processes wrote; only what could not be
// saved is kept in memory. It does not decide whether to resume (the turn
// engine does), nor does it serialise turns (the engine's context lock does): it only remembers.
// An entry that someone else could have written (another owner, group/other-writable, or in such
// a directory) is not used: it would let them pick the session an agent continues.
import { describeError } from "../core/errors.ts";
import { isSafeName } from "../core/ids.ts";
import { dirnameOf } from "../core/paths.ts";
import type { DriverSession, HarnessSession, RunRecord } from "./contracts.ts";
import { HARNESS_SESSION_TYPE, harnessSessionProblem } from "./contract_runtime.ts";
import type { DataRoot } from "./data_root.ts";

export { HARNESS_SESSION_FILE } from "../core/layout.ts";

/** `harness-session.json.damaged`: the bytes of a damaged entry, kept when it was rebuilt. */
export const DAMAGED_SUFFIX = ".damaged";

/** What put() remembers: one driver's session under a context. */
export interface ContextSession {
  sessionId: string;
  nativeSessionId: string | null;
  harness: string;
  driver: string;
}

export interface ContextEntry extends HarnessSession {
  contextId: string;
  /** Every driver's session, the one used last first. */
  sessions: DriverSession[];
}

/** A context's sessions as read: `sessions` always there, one per driver, newest first. */
export type ContextSessions = HarnessSession & { sessions: DriverSession[] };

/** What is at a context's entry: nothing, an entry, or a file that is not one (and why). */
export type HarnessSessionFile =
  | { state: "missing" }
  | { state: "ok"; entry: ContextSessions }
  | { state: "damaged"; why: string; text: string | null };

/**
 * Reads an entry. A file written before reins kept a session per driver (no `sessions`) reads as
 * a map of one. A link reads as missing (the trust checks refuse it before this is asked).
 * `trusted`, asked once the file is known to be there and before it is read, may refuse it
 * (then it reads as missing): so a context without one — every new context — costs one look.
 */
export function readHarnessSessionFile(
  path: string,
  trusted: () => boolean = () => true,
): HarnessSessionFile {
  let text: string;
  try {
    const info = Deno.lstatSync(path);
    if (!trusted() || info.isSymlink) return { state: "missing" };
    text = Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return { state: "missing" };
    }
    return { state: "damaged", why: `it cannot be read (${describeError(error)})`, text: null };
  }
  if (text.trim() === "") return { state: "damaged", why: "it is empty", text };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { state: "damaged", why: `it is not JSON (${(error as Error).message})`, text };
  }
  const problem = harnessSessionProblem(value);
  if (problem !== null) {
    return { state: "damaged", why: `it is not a session entry (${problem})`, text };
  }
  return { state: "ok", entry: withSessions(value as HarnessSession) };
}

/** The entry at `path`, or null for none or one that cannot be used (see readHarnessSessionFile). */
export function readHarnessSession(path: string): ContextSessions | null {
  const file = readHarnessSessionFile(path);
  return file.state === "ok" ? file.entry : null;
}

/**
 * The entry a context's runs make, for a file that was lost: each driver's session is the one of
 * its newest run, with the native id the session's runs recorded (session.linked), created when
 * the session's first run started and updated when its last one ended; the driver of the newest
 * run is on top. Null when there are no runs. `runs` are the context's runs, in any order.
 */
export function sessionsFromRuns(runs: readonly RunRecord[]): ContextSessions | null {
  const newestFirst = [...runs].sort((a, b) =>
    a.startedAt > b.startedAt ? -1 : a.startedAt < b.startedAt ? 1 : a.id > b.id ? -1 : 1
  );
  const sessions: DriverSession[] = [];
  for (const run of newestFirst) {
    if (sessions.some((session) => session.driver === run.driver)) continue;
    const own = newestFirst.filter((other) => other.sessionId === run.sessionId);
    const times = own.flatMap((other) => [other.startedAt, other.endedAt ?? other.startedAt])
      .map((at) => Date.parse(at)).filter(Number.isFinite);
    sessions.push({
      driver: run.driver,
      harness: run.harness,
      session_id: run.sessionId,
      native_session_id: own.find((other) => other.nativeSessionId)?.nativeSessionId ?? null,
      created_ms: Math.min(...times),
      updated_ms: Math.max(...times),
    });
  }
  const [top] = sessions;
  if (top === undefined) return null;
  return {
    type: HARNESS_SESSION_TYPE,
    session_id: top.session_id,
    native_session_id: top.native_session_id,
    harness: top.harness,
    driver: top.driver,
    created_ms: Math.min(...sessions.map((session) => session.created_ms)),
    updated_ms: top.updated_ms,
    sessions,
  };
}

/** The last-used session as one driver's entry. */
function lastUsed(entry: HarnessSession): DriverSession {
  return {
    driver: entry.driver,
    harness: entry.harness,
    session_id: entry.session_id,
    native_session_id: entry.native_session_id,
    created_ms: entry.created_ms,
    updated_ms: entry.updated_ms,
  };
}

/**
 * `entry` with one session per driver, the one used last first. The top-level fields decide for
 * their driver (they are what a reins of before `sessions` wrote and read); its entry in
 * `sessions`, when it names the same session, keeps that session's own creation time.
 */
function withSessions(entry: HarnessSession): ContextSessions {
  const listed = entry.sessions ?? [];
  const top =
    listed.find((session) =>
      session.driver === entry.driver && session.session_id === entry.session_id &&
      session.native_session_id === entry.native_session_id
    ) ?? lastUsed(entry);
  const byDriver = new Map<string, DriverSession>([[top.driver, top]]);
  for (const session of listed) {
    if (!byDriver.has(session.driver)) byDriver.set(session.driver, session);
  }
  const sessions = [...byDriver.values()].sort((a, b) =>
    a.driver === entry.driver ? -1 : b.driver === entry.driver ? 1 : b.updated_ms - a.updated_ms
  );
  return { ...entry, sessions };
}

export interface ContextMapOptions {
  /**
   * The runs recorded on a context (any order), to rebuild a lost or damaged entry from. Without
   * it such an entry reads as absent.
   */
  contextRuns?: (contextId: string) => RunRecord[];
}

export class ContextMap {
  readonly #root: DataRoot | null;
  readonly #report: (message: string) => void;
  readonly #contextRuns: ((contextId: string) => RunRecord[]) | null;
  /** Files found damaged and rebuilt (said once each), with their bytes to keep when replaced. */
  readonly #rebuilt = new Map<string, string | null>();
  /** Entries this map could not save (all of them with no data root); null: forgotten. */
  readonly #unsaved = new Map<string, ContextSessions | null>();
  readonly #distrusted = new Set<string>();
  #reported = false;

  /**
   * `root` is the data root (null: remember in memory only); `report` receives a persistence
   * failure, at most once for the life of this map, and each entry refused as untrusted, once.
   */
  constructor(
    root: DataRoot | null,
    report: (message: string) => void = () => {},
    options: ContextMapOptions = {},
  ) {
    this.#root = root;
    this.#report = report;
    this.#contextRuns = options.contextRuns ?? null;
    // The directories made for contexts (the turn engine's lock makes each new one) are synced
    // into their parents with the context's first entry (put, putAsync).
    root?.noteMadeDirs(root.layout.contexts());
  }

  /** The file of a context, or null with no data root or for an id that is not a safe name. */
  entryPath(contextId: string): string | null {
    if (this.#root === null || !isSafeName(contextId)) return null;
    return this.#root.layout.harnessSession(contextId);
  }

  /**
   * The context's sessions (the one used last at the top), or null for none. `fresh`: the caller
   * made the context's directory just now and holds its lock (the turn engine's ContextLock
   * `made`), so there is no file to read yet.
   */
  get(contextId: string, options: { fresh?: boolean } = {}): ContextSessions | null {
    if (this.#unsaved.has(contextId)) return this.#unsaved.get(contextId) ?? null;
    if (options.fresh) return null;
    const path = this.entryPath(contextId);
    if (path === null) return null;
    // Vetted only when there is a file (vetting none finds nothing to distrust).
    const file = readHarnessSessionFile(path, () => this.vet(contextId));
    if (file.state === "ok") return file.entry;
    if (file.state === "missing") return null;
    return this.#rebuild(contextId, path, file);
  }

  /** A damaged entry rebuilt from the context's runs (and said, once per file), or null. */
  #rebuild(
    contextId: string,
    path: string,
    file: Extract<HarnessSessionFile, { state: "damaged" }>,
  ): ContextSessions | null {
    let runs: RunRecord[] = [];
    let lookup: string | null = null;
    try {
      runs = this.#contextRuns?.(contextId) ?? [];
    } catch (error) {
      lookup = describeError(error);
    }
    const entry = sessionsFromRuns(runs);
    if (!this.#rebuilt.has(path)) {
      this.#rebuilt.set(path, file.text);
      const rebuilt = entry === null
        ? `${
          lookup ?? "the context has no runs"
        } to rebuild it from: its next turn starts a fresh session`
        : `rebuilt from the context's ${runs.length} run${runs.length === 1 ? "" : "s"} (${
          entry.sessions.map((session) => `${session.driver} session ${session.session_id}`)
            .join(", ")
        }), written back at its next turn`;
      this.#report(`the session file ${path} of context '${contextId}': ${file.why}; ${rebuilt}`);
    }
    return entry;
  }

  /** The session `driver` keeps under the context, or null when it has none there. */
  session(contextId: string, driver: string): DriverSession | null {
    return this.get(contextId)?.sessions.find((session) => session.driver === driver) ?? null;
  }

  /**
   * Whether the context's entry may be used. One found untrusted is ignored from then on (and
   * reported once) until this map writes its own, even if its modes are tightened meanwhile: so
   * call this before anything tightens the context's directory (the turn engine's lock does).
   */
  vet(contextId: string): boolean {
    const path = this.entryPath(contextId);
    if (path === null) return true;
    if (this.#distrusted.has(path)) return false;
    const untrusted = this.untrusted(contextId);
    if (untrusted === null) return true;
    this.#distrusted.add(path);
    this.#report(
      `ignoring the session of context '${contextId}' in ${path}: ${untrusted}; its next turn starts a fresh session (reins doctor lists such files)`,
    );
    return false;
  }

  /** Why the context's entry cannot be trusted, or null (also when there is none). */
  untrusted(contextId: string): string | null {
    const path = this.entryPath(contextId);
    if (path === null || this.#root === null) return null;
    try {
      return this.#root.trustProblem(path);
    } catch (error) {
      return describeError(error);
    }
  }

  /**
   * Remembers `session` as its driver's session under the context, and as the one used last.
   * Each driver's `created_ms` survives its updates; `updated_ms` moves. The other drivers'
   * sessions are kept. An empty session id is not remembered.
   */
  put(
    contextId: string,
    session: ContextSession,
    nowMs: number = Date.now(),
  ): ContextSessions | null {
    const next = this.#next(contextId, session, nowMs);
    if (next === null) return null;
    if (next.path === null) return next.entry;
    try {
      this.#keepDamaged(next.path);
      this.#root!.writeFileAtomic(next.path, next.text);
      this.#root!.syncMadeDirsNow(dirnameOf(next.path));
      this.#saved(next.path, contextId);
    } catch (error) {
      this.#unsavable(contextId, next.entry, next.path, error);
    }
    return next.entry;
  }

  /**
   * put() without holding the thread for the disk: the write's two fsyncs (the file before its
   * rename, then the directory; a new context's `contexts/` too) run on Deno's blocking pool, so
   * concurrent turns overlap them.
   * Resolves once the entry is in place and durable; never rejects (a failure is reported as put() reports it). The caller serialises its writes to one
   * context (the turn engine holds the context's lock and chains them). `fresh`: as for get(),
   * for the first write into a directory the caller made (nothing to merge with is read, and no
   * killed writer's temp file looked for); `dir`: the context's directory, held open by the
   * caller (its lock), fsynced after the rename rather than opened again.
   */
  async putAsync(
    contextId: string,
    session: ContextSession,
    nowMs: number = Date.now(),
    options: { fresh?: boolean; dir?: Deno.FsFile } = {},
  ): Promise<ContextSessions | null> {
    const next = this.#next(contextId, session, nowMs, options);
    if (next === null) return null;
    if (next.path === null) return next.entry;
    try {
      this.#keepDamaged(next.path);
      // A new context's directory synced into contexts/ meanwhile (nothing for one made before).
      await Promise.all([
        this.#root!.writeFileAtomicAsync(next.path, next.text, {
          sweep: !options.fresh,
          dirHandle: options.dir,
        }),
        this.#root!.syncMadeDirs(dirnameOf(next.path)),
      ]);
      this.#saved(next.path, contextId);
    } catch (error) {
      this.#unsavable(contextId, next.entry, next.path, error);
    }
    return next.entry;
  }

  /**
   * The entry `session` makes of the context's, and how to write it: path null when there is
   * nothing to write to (kept in memory); null for an empty session id.
   */
  #next(
    contextId: string,
    session: ContextSession,
    nowMs: number,
    options: { fresh?: boolean } = {},
  ): { entry: ContextSessions; path: string | null; text: string } | null {
    if (session.sessionId === "") return null;
    const previous = this.get(contextId, options);
    const own = previous?.sessions.find((entry) => entry.driver === session.driver);
    const current: DriverSession = {
      driver: session.driver,
      harness: session.harness,
      session_id: session.sessionId,
      native_session_id: session.nativeSessionId || null,
      created_ms: own?.created_ms ?? nowMs,
      updated_ms: Math.max(nowMs, own?.updated_ms ?? 0, previous?.updated_ms ?? 0),
    };
    const others = (previous?.sessions ?? []).filter((entry) => entry.driver !== session.driver);
    const entry: ContextSessions = {
      type: HARNESS_SESSION_TYPE,
      session_id: current.session_id,
      native_session_id: current.native_session_id,
      harness: current.harness,
      driver: current.driver,
      // The context's first use, whichever driver it was.
      created_ms: Math.min(previous?.created_ms ?? current.created_ms, current.created_ms),
      updated_ms: current.updated_ms,
      sessions: [current, ...others],
    };
    const path = this.entryPath(contextId);
    if (path === null || this.#root === null) {
      this.#unsaved.set(contextId, entry);
      return { entry, path: null, text: "" };
    }
    // Always durable, a resumed turn's too: unsynced, the rename can reach the disk before the
    // bytes do, and a power cut then leaves the file empty — the conversation lost, not only
    // its `updated_ms` (see `deno task bench` "a run with --context" for what the fsyncs cost).
    return { entry, path, text: `${JSON.stringify(entry, null, 2)}\n` };
  }

  /** Before a rebuilt entry replaces its damaged file: the damaged bytes kept beside it, once. */
  #keepDamaged(path: string): void {
    const text = this.#rebuilt.get(path);
    if (text === undefined) return;
    this.#rebuilt.delete(path);
    if (text === null || text.trim() === "") return;
    const copy = `${path}${DAMAGED_SUFFIX}`;
    try {
      Deno.lstatSync(copy);
      return; // the first damaged file is the evidence
    } catch { /* none yet */ }
    this.#root!.writeFileAtomic(copy, text);
  }

  #saved(path: string, contextId: string): void {
    this.#unsaved.delete(contextId);
    this.#distrusted.delete(path);
  }

  #unsavable(contextId: string, entry: ContextSessions, path: string, error: unknown): void {
    this.#unsaved.set(contextId, entry);
    this.#reportOnce(
      `the session of context '${contextId}' could not be written to ${path} (${
        describeError(error)
      }); this conversation is remembered only until this process ends`,
    );
  }

  /** Forgets a context; returns the session id it dropped, or null (forgetting none is fine). */
  forget(contextId: string): string | null {
    const dropped = this.get(contextId)?.session_id ?? null;
    const path = this.entryPath(contextId);
    if (path === null) {
      this.#unsaved.set(contextId, null);
    } else {
      try {
        Deno.removeSync(path);
        this.#unsaved.delete(contextId);
        removeIfFree(this.#root!.layout.context(contextId));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          this.#unsaved.delete(contextId);
        } else {
          this.#unsaved.set(contextId, null);
          this.#reportOnce(
            `the session of context '${contextId}' could not be removed from ${path} (${
              describeError(error)
            }); it is forgotten only until this process ends`,
          );
        }
      }
    }
    return dropped;
  }

  /** Every context with a readable entry (and all its drivers' sessions), most recently used first. */
  list(): ContextEntry[] {
    if (this.#root === null) {
      return [...this.#unsaved.entries()].flatMap(([contextId, entry]) =>
        entry ? [{ contextId, ...entry }] : []
      );
    }
    const dir = this.#root.layout.contexts();
    const entries: ContextEntry[] = [];
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).map((e) => e.name);
    } catch {
      names = [];
    }
    for (const contextId of names) {
      if (!isSafeName(contextId)) continue;
      const entry = this.get(contextId);
      if (entry) entries.push({ contextId, ...entry });
    }
    return entries.sort((a, b) => b.updated_ms - a.updated_ms);
  }

  #reportOnce(message: string): void {
    if (this.#reported) return;
    this.#reported = true;
    this.#report(message);
  }
}

/**
 * Removes a context's directory when it is empty and no turn holds it (the turn engine's lock is
 * an flock on the directory itself, lib/turn/context_lock.ts): removed under that lock, so a turn
 * waiting for it finds the directory gone and makes it anew.
 */
function removeIfFree(dir: string): void {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(dir, { read: true });
  } catch {
    return;
  }
  try {
    if (!file.tryLockSync(true)) return;
    try {
      Deno.removeSync(dir);
    } catch { /* not empty: an older reins's turn lock, or something else, lives there */ }
    file.unlockSync();
  } catch {
    /* left as it is */
  } finally {
    file.close();
  }
}
