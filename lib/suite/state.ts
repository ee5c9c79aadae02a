// A suite run's state in the data root, so a crash loses nothing and a resume knows what is left:
// suites/<id>/suite-run.json (the suite file's digest, the options, the scenarios in order),
// replaced atomically and fsynced like run.json, and suites/<id>/begun.jsonl, a scenario's state
// appended (and fdatasynced) as each attempt's conversation begins and as the scenario ends (or was
// stopped): the last line of a scenario is its state, so a crash mid-scenario leaves it findable
// and no file is made per scenario. 0600 in 0700 directories. Suite runs of older reinses have a
// file per scenario, suites/<id>/scenarios/<instance>.json, which is still read. One process
// drives a suite run at a time: it holds suites/<id>/lock, which the OS drops when the process dies.
import { z } from "zod";
import { NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { deviceNameOf, idTimeMs, isSafeName, newId } from "../core/ids.ts";
import { nowIso } from "../core/clock.ts";
import { joinPath } from "../core/paths.ts";
import type { DataRoot } from "../store/mod.ts";
import { syncDirectory } from "../core/atomic_write.ts";
import { redactValue } from "../core/redact.ts";
import type { PrivateLog } from "../core/mod.ts";
import { CheckResult, ScenarioStatus } from "./results.ts";

export const SUITE_RUN_TYPE = "reins.suite-run";
export const SCENARIO_STATE_TYPE = "reins.suite-scenario";

const IsoTime = z.iso.datetime({ offset: true });

export const Instance = z.object({
  /**
   * The row's name, which names its state file: `key`, `key.N` for the Nth epoch of several
   * (--epochs, --repeat); in a matrix `key.AGENT`, `key.AGENT.N` (instanceIdOf, start.ts).
   */
  id: z.string(),
  key: z.string(),
  /** The epoch, from 1 (the Nth of --epochs N). */
  repeat: z.number().int().positive(),
  /** The agent of `agents:` that plays it; null: a suite without agents. */
  agent: z.string().nullable().default(null),
  /** The scenario's place in the suite file. */
  index: z.number().int().nonnegative(),
}).strict();
export type Instance = z.infer<typeof Instance>;

export const ShardInfo = z.object({
  planId: z.string(),
  /** 1-based, as in `--shard 2/3`. */
  index: z.number().int().positive(),
  count: z.number().int().positive(),
  /** Scenarios in the whole plan, so a merge can tell when shards are missing. */
  total: z.number().int().nonnegative(),
}).strict();
export type ShardInfo = z.infer<typeof ShardInfo>;

export const SuiteRunOptions = z.object({
  jobs: z.number().int().positive(),
  filter: z.string().nullable(),
  /** The epochs (--epochs, --repeat, `epochs:`). */
  repeat: z.number().int().positive(),
  /** The agents of `agents:` played (--agent; all by default); null: a suite without agents. */
  agents: z.array(z.string()).nullable().default(null),
  report: z.boolean(),
  shard: ShardInfo.nullable(),
  rerunOf: z.object({
    suiteRunId: z.string(),
    which: z.array(z.enum(["failed", "error"])),
  }).strict().nullable(),
  /** The suite run this one regrades (reins suite regrade: no agent ran, the checks ran anew). */
  regradeOf: z.string().optional(),
}).strict();
export type SuiteRunOptions = z.infer<typeof SuiteRunOptions>;

/** A platform report of a suite run: its outbox entry, and each row's scenario key in it. */
export const ReportRef = z.object({
  outboxId: z.string(),
  keys: z.record(z.string(), z.string()),
}).strict();
export type ReportRef = z.infer<typeof ReportRef>;

export const SuiteRunFile = z.object({
  type: z.literal(SUITE_RUN_TYPE),
  version: z.literal(1),
  id: z.string(),
  suite: z.string(),
  /** The suite file, absolute, and the sha256 of its bytes when this suite run began. */
  file: z.string(),
  digest: z.string(),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  options: SuiteRunOptions,
  instances: z.array(Instance),
  /** running: being driven, or was when its process died; stopped: by a signal; finished. */
  state: z.enum(["running", "stopped", "finished"]),
  finishedAt: IsoTime.nullable(),
  /** The processes that drove it, the first and each resume. */
  sessions: z.array(
    z.object({
      pid: z.number().int(),
      startedAt: IsoTime,
      endedAt: IsoTime.nullable(),
      resumed: z.boolean(),
    }).strict(),
  ),
  /** The platform report's outbox entry, and each scenario's key in it, when it is reported. */
  report: ReportRef.nullable(),
  /**
   * A matrix's reports, one per agent and epoch (`AGENT.N`): each agent is a test of its own on
   * the platform, each epoch an execution of it (docs/platform.md).
   */
  reports: z.record(z.string(), ReportRef).default({}),
}).strict();
export type SuiteRunFile = z.infer<typeof SuiteRunFile>;

export const Attempt = z.object({
  attempt: z.number().int().positive(),
  startedAt: IsoTime,
  endedAt: IsoTime.nullable(),
  /** null: cut short (stopped, or its process died). */
  status: z.enum(["passed", "failed", "error"]).nullable(),
  reason: z.string().nullable(),
  runIds: z.array(z.string()),
  /** The scenario's copy of the workdir (kept when it did not pass). */
  workdir: z.string().nullable(),
  /**
   * true: its working directory was empty when the conversation ended, and no end-state snapshot
   * was written for it (`reins suite regrade` checks anew in an empty folder). Absent otherwise.
   */
  emptyEnd: z.literal(true).optional(),
}).strict();
export type Attempt = z.infer<typeof Attempt>;

export const ScenarioState = z.object({
  type: z.literal(SCENARIO_STATE_TYPE),
  version: z.literal(1),
  instance: Instance,
  name: z.string(),
  status: ScenarioStatus,
  /** Why it erred or was skipped. */
  reason: z.string().nullable(),
  attempts: z.array(Attempt),
  /** The runs of the last attempt: one per turn, the first the family's parent. */
  runIds: z.array(z.string()),
  turns: z.number().int().nonnegative(),
  /** The agent's cost; null when a turn reported none. */
  costUsd: z.number().nonnegative().nullable(),
  /** Input + output tokens over its turns; null when a turn reported none (absent from older state files). */
  tokens: z.number().nonnegative().nullable().optional(),
  durationMs: z.number().nonnegative().nullable(),
  checks: z.array(CheckResult),
  /** How the conversation ended (the simulated user's reason, the last scripted turn). */
  ended: z.string().nullable(),
  startedAt: IsoTime.nullable(),
  endedAt: IsoTime.nullable(),
}).strict();
export type ScenarioState = z.infer<typeof ScenarioState>;

function headerPath(dir: string): string {
  return joinPath(dir, "suite-run.json");
}

/** Where the scenarios whose conversation began are told, one state a line (see noteBegun). */
function begunPath(dir: string): string {
  return joinPath(dir, "begun.jsonl");
}

/** States of begun attempts, by instance id: the last line of each wins. */
export type BegunStates = ReadonlyMap<string, ScenarioState>;

/**
 * The states of begun.jsonl, the latest per instance. A last line without its newline is one its
 * writer died writing (never fdatasynced, never answered): it is left out. Any other line that is
 * not a scenario's state is said, as a damaged state file is.
 */
export function readBegun(root: DataRoot, dir: string): BegunStates {
  const begun = new Map<string, ScenarioState>();
  const path = begunPath(dir);
  const text = root.readText(path);
  if (text === null) return begun;
  const lines = text.split("\n");
  lines.pop(); // "" after the last newline, or a torn line
  for (const [i, line] of lines.entries()) {
    if (line === "") continue;
    const state = parseJson(ScenarioState, line, `line ${i + 1} of ${path}`);
    begun.set(state.instance.id, state);
  }
  return begun;
}

export function scenarioPath(dir: string, instanceId: string): string {
  if (!isSafeName(instanceId)) {
    throw new ReinsError(
      "data_root",
      `Cannot use ${JSON.stringify(instanceId)} as the name of a scenario's state file in ${dir}`,
      { hint: UNREADABLE_HINT },
    );
  }
  return joinPath(dir, "scenarios", `${instanceId}.json`);
}

const UNREADABLE_HINT =
  "move the suite run's folder out of the data root (reins suite list names the ones it skips), or fix the file";

/**
 * Why a header's instances cannot name their state files, or null: each id one safe file name
 * (not a device name such as CON), no two the same (in any case, as macOS and Windows see them).
 */
function instancesProblem(instances: readonly Instance[]): string | null {
  const seen = new Map<string, number>();
  for (const [i, instance] of instances.entries()) {
    const id = JSON.stringify(instance.id);
    if (!isSafeName(instance.id)) {
      const device = deviceNameOf(instance.id);
      return `instances[${i}].id ${id} cannot name a state file${
        device ? ` (${device.toUpperCase()} is a device name on Windows)` : ""
      }`;
    }
    const earlier = seen.get(instance.id.toLowerCase());
    if (earlier !== undefined) {
      return `instances[${i}].id ${id} names the same state file as instances[${earlier}]`;
    }
    seen.set(instance.id.toLowerCase(), i);
  }
  return null;
}

function parseJson<T extends z.ZodType>(schema: T, text: string, what: string): z.infer<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ReinsError(
      "data_root",
      `Cannot read ${what}: it is not JSON (${(error as Error).message})`,
    );
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReinsError(
      "data_root",
      `Cannot read ${what}: ${issue.message} at ${issue.path.join(".") || "(top)"}`,
      { hint: UNREADABLE_HINT },
    );
  }
  return parsed.data;
}

/** A fresh scenario state: pending, nothing run yet. */
export function pendingScenario(instance: Instance, name: string): ScenarioState {
  return {
    type: SCENARIO_STATE_TYPE,
    version: 1,
    instance,
    name,
    status: "pending",
    reason: null,
    attempts: [],
    runIds: [],
    turns: 0,
    costUsd: null,
    durationMs: null,
    checks: [],
    ended: null,
    startedAt: null,
    endedAt: null,
  };
}

/**
 * A suite run being driven by this process: its folder, its lock and its files. Written from one
 * process only (the lock says which); each scenario's file by the task running that scenario.
 */
export class SuiteRunHandle implements Disposable {
  readonly root: DataRoot;
  readonly dir: string;
  header: SuiteRunFile;
  readonly #lock: Deno.FsFile;
  /** What begun.jsonl held when a resume opened it (empty for a fresh suite run). */
  #begun: BegunStates;
  /** The scenarios saved since #begun was read: a read of one of them reads begun.jsonl again. */
  readonly #saved = new Set<string>();
  /** Whether the suite run has an older reins's scenarios/ (none is made now). */
  readonly #files: boolean;
  #journal: PrivateLog | null = null;

  private constructor(
    root: DataRoot,
    header: SuiteRunFile,
    lock: Deno.FsFile,
    begun: BegunStates = new Map(),
    files = false,
  ) {
    this.root = root;
    this.dir = root.layout.suite(header.id);
    this.header = header;
    this.#lock = lock;
    this.#begun = begun;
    this.#files = files;
  }

  get id(): string {
    return this.header.id;
  }

  static #takeLock(root: DataRoot, dir: string, id: string): Deno.FsFile {
    root.ensureDir(dir);
    const lock = Deno.openSync(joinPath(dir, "lock"), {
      read: true,
      write: true,
      create: true,
      mode: 0o600,
    });
    if (!lock.tryLockSync(true)) {
      lock.close();
      throw new ReinsError("conflict", `Suite run ${id} is being run by another reins process`, {
        hint: "wait for it to end (reins suite show ID follows its progress)",
      });
    }
    return lock;
  }

  /** Creates a suite run: its header and a pending state for every instance. */
  static create(
    root: DataRoot,
    init: {
      suite: string;
      file: string;
      digest: string;
      options: SuiteRunOptions;
      instances: readonly (Instance & { name: string })[];
    },
  ): SuiteRunHandle {
    const id = newId();
    const dir = root.layout.suite(id);
    const lock = SuiteRunHandle.#takeLock(root, dir, id);
    const now = nowIso();
    const header: SuiteRunFile = {
      type: SUITE_RUN_TYPE,
      version: 1,
      id,
      suite: init.suite,
      file: init.file,
      digest: init.digest,
      createdAt: now,
      updatedAt: now,
      options: init.options,
      instances: init.instances.map(({ id, key, repeat, agent, index }) => ({
        id,
        key,
        repeat,
        agent,
        index,
      })),
      state: "running",
      finishedAt: null,
      sessions: [{ pid: Deno.pid, startedAt: now, endedAt: null, resumed: false }],
      report: null,
      reports: {},
    };
    const handle = new SuiteRunHandle(root, header, lock);
    // A scenario has a line in begun.jsonl once it has begun: one the header lists without one is
    // pending. (scenarios/ is made by no suite run now; older ones' files there are still read.)
    handle.saveHeader();
    return handle;
  }

  /** Opens an existing suite run to resume it. */
  static resume(root: DataRoot, id: string): SuiteRunHandle {
    const dir = root.layout.suite(id);
    const header = readSuiteRun(root, id);
    const lock = SuiteRunHandle.#takeLock(root, dir, id);
    let handle: SuiteRunHandle;
    try {
      handle = new SuiteRunHandle(root, header, lock, readBegun(root, dir), hasScenarioFiles(dir));
    } catch (error) {
      lock.close();
      throw error;
    }
    header.state = "running";
    header.finishedAt = null;
    header.sessions.push({ pid: Deno.pid, startedAt: nowIso(), endedAt: null, resumed: true });
    handle.saveHeader();
    return handle;
  }

  saveHeader(): void {
    this.header.updatedAt = nowIso();
    this.root.writeFileAtomic(headerPath(this.dir), `${JSON.stringify(this.header, null, 2)}\n`);
  }

  /**
   * Saves a scenario's state — its end, or a stop cut its attempt short — as one more line of
   * begun.jsonl, fdatasynced before this resolves; the last line of a scenario is its state. No
   * file is made per scenario: the filesystem's cost is in making files (an inode each, and the
   * directory's fsync), and one journal costs one fdatasync a save. The other scenarios' saves are
   * not held up meanwhile (the wait for the disk is awaited).
   */
  async writeScenario(state: ScenarioState): Promise<void> {
    await this.#save(state);
  }

  /**
   * Saves the state of a scenario whose attempt's conversation has just begun (its first run
   * exists), as writeScenario does: one line appended to begun.jsonl and fdatasynced.
   */
  async noteBegun(state: ScenarioState): Promise<void> {
    await this.#save(state);
  }

  async #save(state: ScenarioState): Promise<void> {
    if (this.#journal === null) {
      this.#journal = this.root.openLog(begunPath(this.dir));
      // The file's name is made durable once; its lines each by their fdatasync.
      syncDirectory(this.dir);
    }
    // Through the secrets choke point, as a file written whole is; still one line. Not kept in
    // memory (thousands of scenarios' states would be): readScenario reads the file again.
    this.#journal.append(JSON.stringify(redactValue(state)));
    this.#saved.add(state.instance.id);
    await this.#durable();
  }

  /** The fdatasync of begun.jsonl in flight, and the one to start once it ends. */
  #syncing: Promise<void> | null = null;
  #queued: Promise<void> | null = null;

  /**
   * Resolves once every line appended so far is on disk. The saves of the jobs share their waits
   * (a group commit): a line written while an fdatasync is under way, which may not cover it,
   * waits for the next one, which starts when that ends and covers every line written meanwhile.
   */
  #durable(): Promise<void> {
    if (this.#queued !== null) return this.#queued;
    if (this.#syncing === null) return this.#startSync();
    const queued = this.#syncing.catch(() => {}).then(() => {
      this.#queued = null;
      return this.#startSync();
    });
    this.#queued = queued;
    return queued;
  }

  #startSync(): Promise<void> {
    const journal = this.#journal!;
    const syncing = journal.syncAsync().finally(() => {
      if (this.#syncing === syncing) this.#syncing = null;
    });
    this.#syncing = syncing;
    return syncing;
  }

  /**
   * A scenario's state as saved. The runner reads each scenario once, before it plays it: what
   * begun.jsonl held when the suite run was opened. One saved since is read from the file again.
   */
  readScenario(instance: Instance): ScenarioState {
    if (this.#saved.has(instance.id)) {
      this.#begun = readBegun(this.root, this.dir);
      this.#saved.clear();
    }
    return readScenarioState(this.root, this.dir, instance, this.#begun, this.#files);
  }

  /** Marks the end of this process's part (at `now`): finished, or stopped with work left. */
  end(state: "finished" | "stopped", now = nowIso()): void {
    this.header.state = state;
    this.header.finishedAt = state === "finished" ? now : null;
    const session = this.header.sessions[this.header.sessions.length - 1];
    if (session) session.endedAt = now;
    this.saveHeader();
  }

  close(): void {
    this.#journal?.close();
    this.#journal = null;
    try {
      this.#lock.close();
    } catch { /* closed already */ }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * A suite run's header from its folder. `root` is the data root it is under — or, for a shard's
 * folder brought from another machine, a root made of that folder itself.
 */
export function readSuiteRunAt(root: DataRoot, dir: string, shownId: string): SuiteRunFile {
  const text = root.readText(headerPath(dir));
  if (text === null) {
    throw new NotFoundError(`No suite run ${shownId}`, {
      hint: "list them with: reins suite list",
    });
  }
  const header = parseJson(SuiteRunFile, text, `suite run ${shownId}`);
  const problem = instancesProblem(header.instances);
  if (problem !== null) {
    throw new ReinsError(
      "data_root",
      `Cannot read suite run ${shownId}: ${headerPath(dir)}: ${problem}`,
      { hint: UNREADABLE_HINT },
    );
  }
  return header;
}

export function readSuiteRun(root: DataRoot, id: string): SuiteRunFile {
  return readSuiteRunAt(root, root.layout.suite(id), id);
}

/**
 * A scenario's state: its last line in begun.jsonl; in a suite run of an older reins, its file,
 * unless its latest attempt began after the file was written (a scenario in flight, or one begun
 * again after a stop). One that has not begun has neither and is pending. `begun` is begun.jsonl
 * read once for many calls (readBegun), `files` whether the suite run has a scenarios/ folder
 * (hasScenarioFiles); without them, they are looked at here.
 */
export function readScenarioState(
  root: DataRoot,
  dir: string,
  instance: Instance,
  begun?: BegunStates,
  files: boolean = hasScenarioFiles(dir),
): ScenarioState {
  const path = scenarioPath(dir, instance.id);
  const text = files ? root.readText(path) : null;
  const began = (begun ?? readBegun(root, dir)).get(instance.id);
  if (text === null) return began ?? pendingScenario(instance, instance.key);
  const state = parseJson(ScenarioState, text, `the state of scenario ${instance.id} (${path})`);
  if (state.instance.id !== instance.id) {
    throw new ReinsError(
      "data_root",
      `The state file of scenario ${instance.id} in ${dir} is ${state.instance.id}'s`,
      { hint: "the suite run's folder was changed by hand; run the suite afresh" },
    );
  }
  return began !== undefined && began.attempts.length > state.attempts.length ? began : state;
}

/** Every scenario's state of a suite run, in the suite run's order. */
export function readScenarioStates(
  root: DataRoot,
  header: SuiteRunFile,
  dir?: string,
): ScenarioState[] {
  const at = dir ?? root.layout.suite(header.id);
  const begun = readBegun(root, at);
  const files = hasScenarioFiles(at);
  return header.instances.map((instance) => readScenarioState(root, at, instance, begun, files));
}

/**
 * Whether a suite run's folder has scenarios/, where an older reins kept a file per scenario:
 * without it, no scenario's file is looked for (each a missing file, and an error made and
 * caught, a scenario). Anything but its absence counts as there (the reads then say what is wrong).
 */
export function hasScenarioFiles(dir: string): boolean {
  try {
    Deno.lstatSync(joinPath(dir, "scenarios"));
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

/** What a suite run is now: its header's state, or interrupted when that says running but no one is. */
export type SuiteRunState = SuiteRunFile["state"] | "interrupted";

/**
 * A suite run's state as it is now: a header that says running is `interrupted` when the process
 * that drove it is gone (kill -9, a crash) — its lock is free, since the system drops a dead
 * process's locks — as `reins runs` tells an orphaned run. Nothing is written: a resume does that.
 */
export function currentState(root: DataRoot, header: SuiteRunFile, dir?: string): SuiteRunState {
  if (header.state !== "running") return header.state;
  const path = joinPath(dir ?? root.layout.suite(header.id), "lock");
  let lock: Deno.FsFile;
  try {
    lock = Deno.openSync(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "interrupted";
    throw error;
  }
  try {
    // A shared lock is refused while the driving process holds its exclusive one.
    if (!lock.tryLockSync(false)) return "running";
    lock.unlockSync();
    return "interrupted";
  } finally {
    lock.close();
  }
}

/** Suite run ids in the data root, newest first. */
export function listSuiteRunIds(root: DataRoot): string[] {
  let names: string[];
  try {
    names = [...Deno.readDirSync(root.layout.suites())].filter((e) => e.isDirectory).map((e) =>
      e.name
    );
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return names.filter((name) => isSafeName(name) && idTimeMs(name) !== null).sort().reverse();
}

/** A suite run id from an id, a unique prefix of one, or `last`. */
export function resolveSuiteRunId(root: DataRoot, ref: string): string {
  const ids = listSuiteRunIds(root);
  if (ref === "last") {
    if (ids.length === 0) {
      throw new NotFoundError("No suite runs yet", { hint: "run one with: reins suite run FILE" });
    }
    return ids[0];
  }
  if (ids.includes(ref)) return ref;
  const matches = ids.filter((id) => id.startsWith(ref));
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    throw new UsageError(`The prefix ${JSON.stringify(ref)} matches ${matches.length} suite runs`, {
      hint: "give more of the id (reins suite list shows them)",
    });
  }
  throw new NotFoundError(`No suite run ${JSON.stringify(ref)}`, {
    hint: "list them with: reins suite list",
  });
}

/** Elapsed wall time of a suite run: the sum of its sessions; null while one has not ended. */
export function elapsedOf(header: SuiteRunFile): number | null {
  let total = 0;
  for (const session of header.sessions) {
    if (session.endedAt === null) return null;
    total += Date.parse(session.endedAt) - Date.parse(session.startedAt);
  }
  return total;
}
