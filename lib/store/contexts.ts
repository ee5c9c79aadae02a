// Context id → harness session: `contexts/<context id>/harness-session.json`, so the next turn on
// a context continues the same conversation. Works in memory when there is no data root, and when
// the file cannot be written it says so once per map and goes on with what it remembers. The
// file is read on every get(), so a long-lived map (a server's) sees what other processes wrote;
// only what could not be saved is kept in memory. It does not decide whether to resume (the turn
// engine does), nor does it serialise turns (the engine's context lock does): it only remembers.
// An entry that someone else could have written (another owner, group/other-writable, or in such
// a directory) is not used: it would let them pick the session an agent continues.
import { describeError } from "../core/errors.ts";
import { isSafeName } from "../core/ids.ts";
import { trustProblem } from "../core/private_files.ts";
import { HARNESS_SESSION_TYPE, HarnessSession } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";

export { HARNESS_SESSION_FILE } from "./layout.ts";

export interface ContextEntry extends HarnessSession {
  contextId: string;
}

/** Reads an entry; anything unreadable, foreign or with an empty session reads as absent. */
export function readHarnessSession(path: string): HarnessSession | null {
  let text: string;
  try {
    if (Deno.lstatSync(path).isSymlink) return null;
    text = Deno.readTextFileSync(path);
  } catch {
    return null;
  }
  try {
    const parsed = HarnessSession.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export class ContextMap {
  readonly #root: DataRoot | null;
  readonly #report: (message: string) => void;
  /** Entries this map could not save (all of them with no data root); null: forgotten. */
  readonly #unsaved = new Map<string, HarnessSession | null>();
  readonly #distrusted = new Set<string>();
  #reported = false;

  /**
   * `root` is the data root (null: remember in memory only); `report` receives a persistence
   * failure, at most once for the life of this map, and each entry refused as untrusted, once.
   */
  constructor(root: DataRoot | null, report: (message: string) => void = () => {}) {
    this.#root = root;
    this.#report = report;
  }

  /** The file of a context, or null with no data root or for an id that is not a safe name. */
  entryPath(contextId: string): string | null {
    if (this.#root === null || !isSafeName(contextId)) return null;
    return this.#root.layout.harnessSession(contextId);
  }

  get(contextId: string): HarnessSession | null {
    if (this.#unsaved.has(contextId)) return this.#unsaved.get(contextId) ?? null;
    const path = this.entryPath(contextId);
    if (path === null || !this.vet(contextId)) return null;
    return readHarnessSession(path);
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
      return trustProblem(this.#root.home, path);
    } catch (error) {
      return describeError(error);
    }
  }

  /**
   * Remembers the session of a context. `created_ms` survives updates; `updated_ms` moves. An
   * empty session id is not remembered.
   */
  put(
    contextId: string,
    session: { sessionId: string; nativeSessionId: string | null; harness: string; driver: string },
    nowMs: number = Date.now(),
  ): HarnessSession | null {
    if (session.sessionId === "") return null;
    const previous = this.get(contextId);
    const entry: HarnessSession = {
      type: HARNESS_SESSION_TYPE,
      session_id: session.sessionId,
      native_session_id: session.nativeSessionId || null,
      harness: session.harness,
      driver: session.driver,
      created_ms: previous?.created_ms ?? nowMs,
      updated_ms: Math.max(nowMs, previous?.updated_ms ?? 0),
    };
    const path = this.entryPath(contextId);
    if (path === null || this.#root === null) {
      this.#unsaved.set(contextId, entry);
      return entry;
    }
    try {
      this.#root.writeFileAtomic(path, `${JSON.stringify(entry, null, 2)}\n`);
      this.#unsaved.delete(contextId);
      this.#distrusted.delete(path);
    } catch (error) {
      this.#unsaved.set(contextId, entry);
      this.#reportOnce(
        `the session of context '${contextId}' could not be written to ${path} (${
          describeError(error)
        }); this conversation is remembered only until this process ends`,
      );
    }
    return entry;
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
        try {
          Deno.removeSync(this.#root!.layout.context(contextId));
        } catch { /* not empty: its turn lock, or something else, lives there */ }
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

  /** Every context with a readable entry, most recently used first. */
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
