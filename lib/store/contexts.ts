// Context id → harness session: `contexts/<context id>/harness-session.json`, so the next turn on
// a context continues the same conversation. Works in memory when there is no data root, and when
// the file cannot be written it says so once per process and goes on with what it remembers.
// It does not decide whether to resume (the run command does): it only remembers. An entry that
// someone else could have written (another owner, group/other-writable, or in such a directory)
// is not used: it would let them pick the session an agent continues.
import { describeError } from "../core/errors.ts";
import { isSafeName } from "../core/ids.ts";
import { joinPath } from "../core/paths.ts";
import { ensurePrivateDir, trustProblem, writePrivateFileAtomic } from "../core/private_files.ts";
import { HARNESS_SESSION_TYPE, HarnessSession } from "./contracts.ts";

export const HARNESS_SESSION_FILE = "harness-session.json";

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
  readonly #home: string | null;
  readonly #report: (message: string) => void;
  readonly #seen = new Map<string, HarnessSession | null>();
  readonly #distrusted = new Set<string>();
  #reported = false;

  /**
   * `home` is the data root (null: remember in memory only); `report` receives a persistence
   * failure, at most once for the life of this map, and each entry refused as untrusted, once.
   */
  constructor(home: string | null, report: (message: string) => void = () => {}) {
    this.#home = home;
    this.#report = report;
  }

  /** The file of a context, or null with no data root or for an id that is not a safe name. */
  entryPath(contextId: string): string | null {
    if (this.#home === null || !isSafeName(contextId)) return null;
    return joinPath(this.#home, "contexts", contextId, HARNESS_SESSION_FILE);
  }

  get(contextId: string): HarnessSession | null {
    if (this.#seen.has(contextId)) return this.#seen.get(contextId) ?? null;
    const path = this.entryPath(contextId);
    if (path === null) return null;
    const untrusted = this.untrusted(contextId);
    if (untrusted !== null) {
      if (!this.#distrusted.has(path)) {
        this.#distrusted.add(path);
        this.#report(
          `ignoring the session of context '${contextId}' in ${path}: ${untrusted}; its next turn starts a fresh session (reins doctor lists such files)`,
        );
      }
      return null;
    }
    return readHarnessSession(path);
  }

  /** Why the context's entry cannot be trusted, or null (also when there is none). */
  untrusted(contextId: string): string | null {
    const path = this.entryPath(contextId);
    if (path === null || this.#home === null) return null;
    try {
      return trustProblem(this.#home, path);
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
    this.#seen.set(contextId, entry);
    const path = this.entryPath(contextId);
    if (path === null || this.#home === null) return entry;
    try {
      ensurePrivateDir(this.#home, joinPath(this.#home, "contexts", contextId));
      writePrivateFileAtomic(this.#home, path, `${JSON.stringify(entry, null, 2)}\n`);
    } catch (error) {
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
    this.#seen.set(contextId, null);
    const path = this.entryPath(contextId);
    if (path !== null) {
      try {
        Deno.removeSync(path);
        try {
          Deno.removeSync(joinPath(this.#home!, "contexts", contextId));
        } catch { /* not empty: something else lives there */ }
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) {
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
    if (this.#home === null) {
      return [...this.#seen.entries()].flatMap(([contextId, entry]) =>
        entry ? [{ contextId, ...entry }] : []
      );
    }
    const dir = joinPath(this.#home, "contexts");
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
