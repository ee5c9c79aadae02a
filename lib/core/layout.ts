// Every path under the data root, built in one place. An id that becomes a path segment (a run
// id, a context id, an outbox entry, a suite run) goes through safeName() here, so no caller can
// build a path out of an unchecked id. It only names paths: it creates, reads and checks nothing
// on disk. Free of zod and of node: modules, as every command's start-up path imports it.
import { safeName } from "./ids.ts";
import { joinPath } from "./paths.ts";

export const RECORD_FILE = "run.json";
export const EVENTS_FILE = "events.jsonl";
/**
 * Held locked (flock, exclusive) by the process that runs the run, for the run's whole life; it
 * holds that process's pid, then a JSON line for each agent process the run started.
 */
export const OWNER_LOCK_FILE = "owner.lock";
/** Where an older reins noted the agent processes a run started (see Layout.agents). */
export const AGENTS_FILE = "agents.jsonl";
/** The model calls' bodies (see Layout.wire). */
export const WIRE_DIR = "wire";
/**
 * `runs/.<id>.creating`: where a run was made before it was renamed into place, by reins before
 * runs/.staging/ (reins recover still removes such a directory left behind).
 */
export const CREATING_SUFFIX = ".creating";
/** `runs/.staging/`: where each run is made before it is renamed into place (Layout.creatingRun). */
export const STAGING_DIR = ".staging";
/** `runs/.owners/`: the files a process's runs' owner locks are hard links to (Layout.ownerFile). */
export const OWNERS_DIR = ".owners";
export const HARNESS_SESSION_FILE = "harness-session.json";
/** Held locked (flock, exclusive) by the turn running on a context; it names that turn's run. */
export const CONTEXT_LOCK_FILE = "turn.lock";
export const INDEX_FILE = "index.sqlite";
/** Left by a writer that could not update the index: the next reader rebuilds it whole. */
export const DIRTY_FILE = "index.dirty";

/**
 * What reins keeps at the top of a data root, by name: every path below is built from one of
 * these, so this is also the list of what is the data root's own in a directory that holds it
 * (a snapshot of that directory leaves them out).
 */
const TOP = {
  runs: "runs",
  contexts: "contexts",
  outbox: "outbox",
  snapshots: "snapshots",
  suites: "suites",
  tmp: "tmp",
  logs: "logs",
  index: INDEX_FILE,
  indexDirty: DIRTY_FILE,
  indexPending: "index.pending",
  platform: "platform.json",
  platformLock: ".platform.json.lock",
  serveToken: "serve.token",
  config: "config.json",
} as const;
/** SQLite keeps these beside a database in WAL mode (the index's and the blob index's). */
const SQLITE_SIDE_FILES = ["-wal", "-shm"] as const;

export class Layout {
  /** The data root, absolute. */
  readonly home: string;

  constructor(home: string) {
    this.home = home;
  }

  /** The path of the config file of the data root `home`, read before the root is opened. */
  static configOf(home: string): string {
    return joinPath(home, TOP.config);
  }

  /** The names at the top of the data root that are reins's own (see TOP). */
  topLevelNames(): string[] {
    return [
      ...Object.values(TOP),
      ...SQLITE_SIDE_FILES.map((suffix) => `${TOP.index}${suffix}`),
    ];
  }

  runs(): string {
    return joinPath(this.home, TOP.runs);
  }

  /** `runs/<run id>`; the id is checked before it becomes a path segment. */
  run(runId: string): string {
    return joinPath(this.runs(), safeName(runId, "run id"));
  }

  /**
   * `runs/.staging/`: the runs being made. Apart from runs/, so that finding a creation cut short
   * lists this (nearly always empty) directory, not every run.
   */
  stagingRuns(): string {
    return joinPath(this.runs(), STAGING_DIR);
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

  /**
   * `runs/.owners/`: a file for each process that makes runs (and each few hundred runs of it),
   * held locked for the process's life; the `owner.lock` of each of its runs is a hard link to it
   * (lib/store/owner.ts).
   */
  owners(): string {
    return joinPath(this.runs(), OWNERS_DIR);
  }

  /** `runs/.owners/<name>`: one process's owner file; `name` is checked to be a path segment. */
  ownerFile(name: string): string {
    return joinPath(this.owners(), safeName(name, "owner file"));
  }

  attachments(runId: string): string {
    return this.runFile(runId, "attachments");
  }

  /**
   * `runs/<id>/wire/`: the bodies of the model calls the gateway passed on for the run (their
   * requests and answers), each named by its SHA-256 (docs/gateway.md).
   */
  wire(runId: string): string {
    return this.runFile(runId, WIRE_DIR);
  }

  /** `runs/<id>/wire/<sha256>`: one body; the name is checked to be a SHA-256 in hex. */
  wireBody(runId: string, sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) {
      throw new RangeError(`Cannot name a wire body ${JSON.stringify(sha256)}: not a SHA-256`);
    }
    return joinPath(this.wire(runId), sha256);
  }

  /**
   * `runs/<id>/agents.jsonl`: where a run made by an older reins noted its agent processes (pid,
   * process group, start time), one JSON line each. A run now notes them in its owner lock
   * (ownerLock); both are read by a reins that finds the run's owner gone, to stop them.
   */
  agents(runId: string): string {
    return this.runFile(runId, AGENTS_FILE);
  }

  contexts(): string {
    return joinPath(this.home, TOP.contexts);
  }

  /** `contexts/<context id>`; the id is checked before it becomes a path segment. */
  context(contextId: string): string {
    return joinPath(this.contexts(), safeName(contextId, "context id"));
  }

  /**
   * `contexts/<context id>/harness/<driver>`: a confined harness's own state for the context
   * (bound into its sandbox as ~/.claude and the like: docs/confinement.md).
   */
  harnessState(contextId: string, driver: string): string {
    return joinPath(this.context(contextId), "harness", safeName(driver, "driver"));
  }

  /** `runs/<run id>/harness/<driver>`: the same for a run with no context. */
  runHarnessState(runId: string, driver: string): string {
    return joinPath(this.run(runId), "harness", safeName(driver, "driver"));
  }

  harnessSession(contextId: string): string {
    return joinPath(this.context(contextId), HARNESS_SESSION_FILE);
  }

  contextLock(contextId: string): string {
    return joinPath(this.context(contextId), CONTEXT_LOCK_FILE);
  }

  index(): string {
    return joinPath(this.home, TOP.index);
  }

  indexDirtyMarker(): string {
    return joinPath(this.home, TOP.indexDirty);
  }

  /** Run ids whose records changed since the index last saw them (see noteRun). */
  indexPending(): string {
    return joinPath(this.home, TOP.indexPending);
  }

  outbox(): string {
    return joinPath(this.home, TOP.outbox);
  }

  /** `outbox/<id>.json`; the id is checked before it becomes a path segment. */
  outboxEntry(id: string): string {
    return joinPath(this.outbox(), `${safeName(id, "outbox entry id")}.json`);
  }

  /** `outbox/<id>.lock`: held by the process delivering that entry. */
  outboxLock(id: string): string {
    return joinPath(this.outbox(), `${safeName(id, "outbox entry id")}.lock`);
  }

  /** `outbox/otlp/`: trace exports not yet acknowledged, apart from the platform's reports. */
  otlpOutbox(): string {
    return joinPath(this.outbox(), "otlp");
  }

  /** `outbox/otlp/<id>.json`; the id is checked before it becomes a path segment. */
  otlpEntry(id: string): string {
    return joinPath(this.otlpOutbox(), `${safeName(id, "outbox entry id")}.json`);
  }

  /** `outbox/otlp/<id>.requests.jsonl`: the export's requests, one a line, as they are sent. */
  otlpRequests(id: string): string {
    return joinPath(this.otlpOutbox(), `${safeName(id, "outbox entry id")}.requests.jsonl`);
  }

  /** `outbox/otlp/<id>.lock`: held by the process sending that export. */
  otlpLock(id: string): string {
    return joinPath(this.otlpOutbox(), `${safeName(id, "outbox entry id")}.lock`);
  }

  platformFile(): string {
    return joinPath(this.home, TOP.platform);
  }

  /** The sibling lock file platform.json's writers take. */
  platformLock(): string {
    return joinPath(this.home, TOP.platformLock);
  }

  config(): string {
    return Layout.configOf(this.home);
  }

  logs(): string {
    return joinPath(this.home, TOP.logs);
  }

  /** reins's own log of what it could not say anywhere else (a context it could not save). */
  log(): string {
    return joinPath(this.logs(), "reins.log");
  }

  suites(): string {
    return joinPath(this.home, TOP.suites);
  }

  /** `suites/<suite run id>`; the id is checked before it becomes a path segment. */
  suite(suiteRunId: string): string {
    return joinPath(this.suites(), safeName(suiteRunId, "suite run id"));
  }

  snapshots(): string {
    return joinPath(this.home, TOP.snapshots);
  }

  /** `snapshots/packs/`: the content-addressed packs snapshots share. */
  snapshotPacks(): string {
    return joinPath(this.snapshots(), "packs");
  }

  /** `snapshots/packs/<pack id>.pack`; the id is checked before it becomes a path segment. */
  snapshotPack(packId: string): string {
    return joinPath(this.snapshotPacks(), `${safeName(packId, "pack id")}.pack`);
  }

  /** `snapshots/manifests/<run id>.json`: what a run's snapshot holds. */
  snapshotManifest(runId: string): string {
    return joinPath(this.snapshots(), "manifests", `${safeName(runId, "run id")}.json`);
  }

  /** `snapshots/blobs.sqlite`: where each content is, by sha256. */
  blobIndex(): string {
    return joinPath(this.snapshots(), "blobs.sqlite");
  }

  /** `snapshots/cache/`: what the last snapshot of each directory learned of its files. */
  statCaches(): string {
    return joinPath(this.snapshots(), "cache");
  }

  /** `snapshots/cache/<key>.json`, `key` a digest of the directory (checked as a name). */
  statCache(key: string): string {
    return joinPath(this.statCaches(), `${safeName(key, "stat cache key")}.json`);
  }

  tmp(): string {
    return joinPath(this.home, TOP.tmp);
  }

  serveToken(): string {
    return joinPath(this.home, TOP.serveToken);
  }
}

/** `runs/<id>/<file>`: how messages name a run's file, short and unambiguous. */
export function shownPath(runId: string, file: string): string {
  return `runs/${runId}/${file}`;
}
