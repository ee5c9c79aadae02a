// Every path under the data root, built in one place. An id that becomes a path segment (a run
// id, a context id, an outbox entry, a suite run) goes through safeName() here, so no caller can
// build a path out of an unchecked id. It only names paths: it creates, reads and checks nothing
// on disk. Free of zod and of node: modules, as every command's start-up path imports it.
import { safeName } from "./ids.ts";
import { joinPath } from "./paths.ts";

export const RECORD_FILE = "run.json";
export const EVENTS_FILE = "events.jsonl";
/** Held locked (flock, exclusive) by the process that runs the run, for the run's whole life. */
export const OWNER_LOCK_FILE = "owner.lock";
/** The agent processes a run started (see Layout.agents). */
export const AGENTS_FILE = "agents.jsonl";
/**
 * `runs/.<id>.creating`: where a run was made before it was renamed into place, by reins before
 * runs/.staging/ (reins recover still removes such a directory left behind).
 */
export const CREATING_SUFFIX = ".creating";
/** `runs/.staging/`: where each run is made before it is renamed into place (Layout.creatingRun). */
export const STAGING_DIR = ".staging";
export const HARNESS_SESSION_FILE = "harness-session.json";
/** Held locked (flock, exclusive) by the turn running on a context; it names that turn's run. */
export const CONTEXT_LOCK_FILE = "turn.lock";
export const INDEX_FILE = "index.sqlite";
/** Left by a writer that could not update the index: the next reader rebuilds it whole. */
export const DIRTY_FILE = "index.dirty";

export class Layout {
  /** The data root, absolute. */
  readonly home: string;

  constructor(home: string) {
    this.home = home;
  }

  runs(): string {
    return joinPath(this.home, "runs");
  }

  /** `runs/<run id>`; the id is checked before it becomes a path segment. */
  run(runId: string): string {
    return joinPath(this.home, "runs", safeName(runId, "run id"));
  }

  /**
   * `runs/.staging/`: the runs being made. Apart from runs/, so that finding a creation cut short
   * lists this (nearly always empty) directory, not every run.
   */
  stagingRuns(): string {
    return joinPath(this.home, "runs", STAGING_DIR);
  }

  /** `runs/.staging/<run id>`: where a run is made before it is renamed to `runs/<run id>`. */
  creatingRun(runId: string): string {
    return joinPath(this.stagingRuns(), safeName(runId, "run id"));
  }

  /** A file of a run's directory (`runs/<run id>/<name>`); `name` is reins's own constant. */
  runFile(runId: string, name: string): string {
    return joinPath(this.run(runId), name);
  }

  record(runId: string): string {
    return this.runFile(runId, RECORD_FILE);
  }

  events(runId: string): string {
    return this.runFile(runId, EVENTS_FILE);
  }

  ownerLock(runId: string): string {
    return this.runFile(runId, OWNER_LOCK_FILE);
  }

  attachments(runId: string): string {
    return this.runFile(runId, "attachments");
  }

  /**
   * `runs/<id>/agents.jsonl`: the agent processes the run started (pid, process group, start
   * time), one JSON line each, so that a reins that finds the run's owner gone can stop them.
   */
  agents(runId: string): string {
    return this.runFile(runId, AGENTS_FILE);
  }

  contexts(): string {
    return joinPath(this.home, "contexts");
  }

  /** `contexts/<context id>`; the id is checked before it becomes a path segment. */
  context(contextId: string): string {
    return joinPath(this.home, "contexts", safeName(contextId, "context id"));
  }

  harnessSession(contextId: string): string {
    return joinPath(this.context(contextId), HARNESS_SESSION_FILE);
  }

  contextLock(contextId: string): string {
    return joinPath(this.context(contextId), CONTEXT_LOCK_FILE);
  }

  index(): string {
    return joinPath(this.home, INDEX_FILE);
  }

  indexDirtyMarker(): string {
    return joinPath(this.home, DIRTY_FILE);
  }

  /** Run ids whose records changed since the index last saw them (see noteRun). */
  indexPending(): string {
    return joinPath(this.home, "index.pending");
  }

  outbox(): string {
    return joinPath(this.home, "outbox");
  }

  /** `outbox/<id>.json`; the id is checked before it becomes a path segment. */
  outboxEntry(id: string): string {
    return joinPath(this.home, "outbox", `${safeName(id, "outbox entry id")}.json`);
  }

  /** `outbox/<id>.lock`: held by the process delivering that entry. */
  outboxLock(id: string): string {
    return joinPath(this.home, "outbox", `${safeName(id, "outbox entry id")}.lock`);
  }

  platformFile(): string {
    return joinPath(this.home, "platform.json");
  }

  /** The sibling lock file platform.json's writers take. */
  platformLock(): string {
    return joinPath(this.home, ".platform.json.lock");
  }

  config(): string {
    return joinPath(this.home, "config.json");
  }

  logs(): string {
    return joinPath(this.home, "logs");
  }

  /** reins's own log of what it could not say anywhere else (a context it could not save). */
  log(): string {
    return joinPath(this.home, "logs", "reins.log");
  }

  suites(): string {
    return joinPath(this.home, "suites");
  }

  /** `suites/<suite run id>`; the id is checked before it becomes a path segment. */
  suite(suiteRunId: string): string {
    return joinPath(this.home, "suites", safeName(suiteRunId, "suite run id"));
  }

  snapshots(): string {
    return joinPath(this.home, "snapshots");
  }

  tmp(): string {
    return joinPath(this.home, "tmp");
  }

  serveToken(): string {
    return joinPath(this.home, "serve.token");
  }
}

/** `runs/<id>/<file>`: how messages name a run's file, short and unambiguous. */
export function shownPath(runId: string, file: string): string {
  return `runs/${runId}/${file}`;
}
