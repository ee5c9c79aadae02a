// Owning and appending to runs: creating a run (and holding its ownership lock for its life),
// appending its events and keeping run.json in step with them, from the owner or from any other
// process (`reins approve` from another shell). Sequences are assigned and records rewritten
// under the events file's lock, so concurrent appenders never collide; a settled run's outcome is
// never changed. run.json is written here too (run_record.ts reads it).
import { UsageError } from "../core/errors.ts";
import { newId } from "../core/ids.ts";
import { joinPath } from "../core/paths.ts";
import {
  syncDirectory,
  syncDirectoryAsync,
  syncHeldDirectory,
  syncHeldDirectoryAsync,
} from "../core/atomic_write.ts";
import { madePrivate } from "../core/private_dir.ts";
import { redactValue } from "../core/redact.ts";
import type {
  AgentFacts,
  EventInput,
  GatewayUse,
  RunEvent,
  RunRecord,
  SettledStatus,
  Trigger,
  Usage,
} from "./contracts.ts";
import { orderedRecord, runRecordProblem } from "./contract_runtime.ts";
import { nowIso } from "../core/clock.ts";
import type { DataRoot } from "./data_root.ts";
import { EventLog } from "./event_log.ts";
import { applyEvent, mayChangeRecord } from "./record_events.ts";
import { noteRun } from "./index_db.ts";
import { linkOwnerLock, ownOwnerLockFile, type RunOwnership } from "./owner.ts";
import { inspectRun, readRecordFile } from "./run_record.ts";
import { EVENTS_FILE, isActive, OWNER_LOCK_FILE } from "./run_files.ts";

/** What a new run is made from; the rest of its record (id, times, status) the store sets. */
export interface RunInit {
  sessionId: string;
  contextId: string | null;
  harness: string;
  driver: string;
  trigger: Trigger;
  cwd: string;
  goal: string | null;
  parentRunId?: string | null;
  resumedFromRunId?: string | null;
  relation?: string | null;
  nativeSessionId?: string | null;
  /** run.started's `resumeOf`: what this run resumes (default: resumedFromRunId). */
  resumeOf?: string | null;
  /** run.started's `agent`: what the driver knows of its agent before it starts. */
  agent?: AgentFacts;
  /** run.started's `gateway`: whether the model gateway records the run's calls, why not. */
  gateway?: GatewayUse;
  /** run.started's `budget`: the turn's limits, when it has any (a replay applies them too). */
  budget?: { maxTurns?: number; maxTokens?: number; maxUsd?: number };
  /**
   * run.started's `messageId`: the id the prompt's sender gave its message (an A2A client's
   * messageId), which every view of the run's prompt keeps.
   */
  messageId?: string;
}

export interface RunOptions {
  /** fdatasync the log after every event (default: only before run.json changes and on close). */
  syncEachEvent?: boolean;
}

/**
 * A change to a run's record. `status` is recorded as a `status.changed` event (the log stays the
 * truth), so `endedAt` comes from that event's time; a settled run keeps its status, `endedAt` and
 * `terminalReason` whatever the patch says.
 */
export type RunPatch = Partial<Omit<RunRecord, "id" | "sessionId" | "startedAt">>;

/**
 * One process's handle on a run's log and record, for appending events and updating the record.
 * Any number may be open on one run, in any number of processes.
 */
export class RunAppender {
  readonly root: DataRoot;
  readonly runId: string;
  readonly #log: EventLog;
  #record: RunRecord;
  #lastUsage: Usage | null = null;

  protected constructor(root: DataRoot, log: EventLog, record: RunRecord) {
    this.root = root;
    this.runId = record.id;
    this.#log = log;
    this.#record = record;
  }

  /** Opens an existing run for appending. Throws NotFoundError when there is no such run. */
  static open(root: DataRoot, runId: string, options: RunOptions = {}): RunAppender {
    const { record } = inspectRun(root, runId);
    return new RunAppender(root, EventLog.open(root, runId, record.sessionId, options), record);
  }

  /**
   * The record as run.json has it now (another process may have changed it), or as this handle
   * last saw it when run.json cannot be read.
   */
  get record(): RunRecord {
    this.#record = this.#current();
    return this.#record;
  }

  /** For createRun: the record once run.started has given it its start time. */
  protected adopt(record: RunRecord): void {
    this.#record = record;
  }

  /** The outcome the log holds, as of this handle's last append. */
  get settled(): SettledStatus | null {
    return this.#log.settled;
  }

  get lastSequence(): number {
    return this.#log.lastSequence;
  }

  /** The last `usage.updated` appended through this handle (running totals), or null. */
  lastUsage(): Usage | null {
    return this.#lastUsage;
  }

  /**
   * Validates and appends one event, applying it to run.json (rewritten only when it changes).
   * After the run settled, the event is kept with `ignored` set and not applied. Returns it as
   * stored.
   */
  append(event: EventInput): RunEvent {
    return this.#log.append(event, (stored) => {
      if (!this.#take(stored)) return;
      // The log holds the event on disk before the record says it happened. The record itself
      // is not fsynced: everything this write changes follows from the log, so a run.json that
      // a power cut leaves behind its log is corrected from it by reconciliation (and nothing is
      // lost). One sync to settle a run instead of three: see `deno task bench` "a whole reins
      // run". What update() writes is not in the log, and is fsynced.
      this.#applyToRecord(stored, () => this.#log.sync());
    });
  }

  /**
   * append(), then the log made durable without holding the thread (the fdatasync, and the first
   * sync's directory syncs, run on Deno's blocking pool: concurrent turns overlap their waits for
   * the disk), then the record. For the event that settles a run: resolves once it is on disk and
   * run.json says so. Between the line and the record, run.json is behind the log, as a crash may
   * leave it anyway (reconciliation and every later append correct it from the log).
   */
  async appendDurably(event: EventInput): Promise<RunEvent> {
    let changing: RunEvent | null = null;
    const stored = this.#log.append(event, (written) => {
      if (this.#take(written)) changing = written;
    });
    await this.#log.syncAsync();
    const apply = changing;
    if (apply !== null) this.#log.locked(() => this.#applyToRecord(apply, () => {}));
    return stored;
  }

  /** Notes what `stored` says of usage; whether it may change the record. */
  #take(stored: RunEvent): boolean {
    if (stored.ignored !== undefined) return false;
    if (stored.type === "usage.updated") this.#lastUsage = stored.payload;
    return mayChangeRecord(stored.type);
  }

  /** Under the log's lock: applies `stored` to run.json, after `beforeWrite` when it changes it. */
  #applyToRecord(stored: RunEvent, beforeWrite: () => void): void {
    const current = this.#current();
    const next = applyEvent(current, stored);
    this.#record = current;
    if (next === null) return;
    beforeWrite();
    writeRecord(this.root, next, { durable: false });
    this.#record = next;
  }

  /** Applies `patch` (see RunPatch) and returns the record. */
  update(patch: RunPatch): RunRecord {
    const { status, endedAt: _endedAt, terminalReason, ...rest } = patch;
    const fields = Object.fromEntries(
      Object.entries(rest).filter(([, value]) => value !== undefined),
    ) as Partial<RunRecord>;
    const now = this.record;
    const problem = runRecordProblem({ ...now, ...fields });
    if (problem !== null) {
      throw new UsageError(
        `Cannot update run ${this.runId}: ${problem}`,
        { hint: "see the run record's fields in docs/events.md" },
      );
    }
    if (status !== undefined && this.#log.settled === null && isActive(now.status)) {
      if (status !== now.status || !isActive(status)) {
        this.append({
          type: "status.changed",
          payload: { status, reason: terminalReason ?? null },
        });
      }
    }
    if (Object.keys(fields).length > 0) {
      this.#log.locked(() => {
        const current = this.#current();
        const next = orderedRecord({
          ...current,
          ...fields,
          id: current.id,
          sessionId: current.sessionId,
          startedAt: current.startedAt,
          status: current.status,
          endedAt: current.endedAt,
          terminalReason: current.terminalReason,
        });
        if (JSON.stringify(next) !== JSON.stringify(current)) writeRecord(this.root, next);
        this.#record = next;
      });
    }
    return this.#record;
  }

  /** Flushes the log to disk. */
  sync(): void {
    this.#log.sync();
  }

  close(): void {
    this.#log.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** run.json as it is now; when it is missing or damaged, this handle's last copy. */
  #current(): RunRecord {
    const file = readRecordFile(this.root, this.runId);
    return file.state === "ok" ? file.record : this.#record;
  }
}

/**
 * The handle of the process that runs a run: a RunAppender that also holds the run's ownership
 * (the lock of its directory, lib/store/owner.ts) until close(), which is how reconciliation
 * knows it is alive.
 */
export class RunWriter extends RunAppender {
  #owner: StakedRun | null;
  /** The run's `run.started` event, as stored (sequence 0). */
  readonly started: RunEvent;

  /** Use createRun: it makes the directory and takes the lock this writer holds. */
  constructor(
    root: DataRoot,
    log: EventLog,
    record: RunRecord,
    owner: StakedRun,
    resumeOf: string | null,
    agent?: AgentFacts,
    extra: Pick<RunInit, "gateway" | "budget" | "messageId"> = {},
  ) {
    super(root, log, record);
    this.#owner = owner;
    this.started = this.append({
      type: "run.started",
      payload: {
        harness: record.harness,
        driver: record.driver,
        cwd: record.cwd,
        goal: record.goal,
        contextId: record.contextId,
        resumeOf,
        ...(agent === undefined ? {} : { agent }),
        ...(extra.gateway === undefined ? {} : { gateway: extra.gateway }),
        ...(extra.budget === undefined ? {} : { budget: extra.budget }),
        ...(extra.messageId === undefined ? {} : { messageId: extra.messageId }),
        // Beyond the contract's fields, so that run.json can be rebuilt from the log alone.
        trigger: record.trigger,
        resumedFromRunId: record.resumedFromRunId,
        parentRunId: record.parentRunId,
        relation: record.relation,
        nativeSessionId: record.nativeSessionId,
      },
    });
    // The record starts when its first event says, so that a record rebuilt from the events is
    // the same record.
    this.adopt({ ...record, startedAt: this.started.timestamp });
  }

  /**
   * Notes an agent process with the run: one line (with the run's id) in the owner file its
   * owner.lock links to, what a later reins needs to stop the agent's group should this one die
   * (lib/store/left_agents.ts). Only the owner writes there, through the handle it holds the
   * file locked with, so noting an agent makes no file. Runs made by an older reins kept them in
   * their own owner.lock, or in `agents.jsonl`, both still read.
   */
  noteAgent(line: string): void {
    if (this.#owner === null) {
      throw new UsageError(`Cannot note an agent with run ${this.runId}: its writer is closed`);
    }
    this.#owner.ownership.noteAgent(line);
  }

  /** Syncs and closes the log and releases ownership. A run left active is reconciled later. */
  override close(): void {
    if (this.#owner === null) return;
    try {
      this.sync();
    } catch { /* already closed */ }
    super.close();
    releaseStake(this.#owner);
    this.#owner = null;
  }
}

/**
 * Creates a run: `runs/<uuid v7>/` with its owner lock held and a `run.started` event (sequence
 * 0), which gives its record (status `running`) until run.json is first written, when the record
 * first changes. The returned writer owns the run until close().
 */
export function createRun(root: DataRoot, init: RunInit, options: RunOptions = {}): RunWriter {
  const runId = newId();
  const startedAt = nowIso();
  const candidate: RunRecord = {
    id: runId,
    sessionId: init.sessionId,
    contextId: init.contextId,
    nativeSessionId: init.nativeSessionId ?? null,
    parentRunId: init.parentRunId ?? null,
    resumedFromRunId: init.resumedFromRunId ?? null,
    relation: init.relation ?? null,
    harness: init.harness,
    driver: init.driver,
    trigger: init.trigger,
    cwd: init.cwd,
    goal: init.goal,
    startedAt,
    endedAt: null,
    status: "running",
    exitCode: null,
    terminalReason: null,
  };
  const problem = runRecordProblem(candidate);
  if (problem !== null) {
    throw new UsageError(`Cannot create a run: ${problem}`, {
      hint: "see the run record's fields in docs/events.md",
    });
  }
  const record = orderedRecord(candidate);
  const staged = stageRun(root, runId);
  let log: EventLog | null = null;
  try {
    // The run is made whole in its staging directory — owner lock held, run.started logged —
    // and only then renamed into place: no reader ever sees it half made,
    // and nothing in it needs looking at first (nobody else has seen the directory).
    log = EventLog.create(root, runId, record.sessionId, joinPath(staged.dir, EVENTS_FILE), {
      ...options,
      holdBursts: true,
      // The rename that put runs/<id> in place, and the files made in it, are durable once runs/
      // and runs/<id> are synced too: done with the log's first sync (at settle at the latest)
      // rather than here, keeping a run's creation free of syncs.
      // When this root made runs/ itself (the data root's first run), its name in the data root
      // is synced too, once: else a filesystem that does not order a directory's creation before
      // the writes into it could lose runs/, every synced run in it.
      // The run's directory is held open (locked) by its owner: that descriptor is fsynced.
      afterFirstSync: {
        blocking: () => {
          syncHeldDirectory(staged.owner.dir, root.layout.run(runId));
          syncDirectory(root.layout.runs());
          root.syncMadeDirsNow(root.layout.run(runId));
        },
        awaited: async () => {
          await Promise.all([
            syncHeldDirectoryAsync(staged.owner.dir, root.layout.run(runId)),
            syncDirectoryAsync(root.layout.runs()),
            root.syncMadeDirs(root.layout.run(runId)),
          ]);
        },
      },
    });
    const writer = new RunWriter(
      root,
      log,
      record,
      staged.owner,
      init.resumeOf ?? record.resumedFromRunId,
      init.agent,
      { gateway: init.gateway, budget: init.budget, messageId: init.messageId },
    );
    // Nothing is fsynced at creation: what a run does is made durable when it settles (or waits),
    // its directory with it (afterFirstSync above), and until then a power cut loses its events
    // anyway (they are not synced one by one). Nor is run.json written: run.started holds every
    // field of the record, so a reader rebuilds it from the log until the record first changes
    // (at settle, for most turns), which writes run.json once rather than twice — a file the
    // first write made and the second replaced and freed, the dearest thing a turn makes (see
    // docs/engine.md "What a turn writes and syncs").
    const written = redactValue(orderedRecord({ ...record, startedAt: writer.started.timestamp }));
    Deno.renameSync(staged.dir, root.layout.run(runId));
    root.madePrivate(root.layout.run(runId));
    noteRun(root, written);
    return writer;
  } catch (error) {
    log?.close();
    releaseStake(staged.owner);
    try {
      Deno.removeSync(staged.dir, { recursive: true });
    } catch { /* renamed into place already, or never made: reconciliation sees to it */ }
    throw error;
  }
}

/** What a run's writer holds: its directory, locked, and its owner.lock's file. */
interface StakedRun {
  dir: Deno.FsFile;
  ownership: RunOwnership;
}

function releaseStake(stake: StakedRun): void {
  stake.ownership.release();
  // Unlocked before it is closed: a child being spawned by another thread of this process holds
  // a copy of every descriptor until it execs, and a lock lives as long as any copy.
  try {
    stake.dir.unlockSync();
  } catch { /* closing releases it anyway */ }
  stake.dir.close();
}

/**
 * Makes the run's staging directory (`runs/.staging/<id>`) with its ownership already held (the
 * directory's lock, and its owner.lock linked to this process's owner file), so that once the
 * directory is renamed into place no reconciler ever sees the run unowned.
 */
function stageRun(root: DataRoot, runId: string): { dir: string; owner: StakedRun } {
  // runs/, when made here, is synced into the data root with the run's first sync.
  root.noteMadeDirs(root.layout.runs());
  root.ensureDir(root.layout.stagingRuns());
  const staging = root.layout.creatingRun(runId);
  // A fresh name under a directory already made private: made 0700 here, and not remembered as
  // checked, since it is renamed away.
  Deno.mkdirSync(staging, { mode: 0o700 });
  let dir: Deno.FsFile | null = null;
  try {
    madePrivate(staging);
    dir = Deno.openSync(staging, { read: true });
    // Nobody else has seen the directory: the lock is free.
    dir.lockSync(true);
    const lockPath = joinPath(staging, OWNER_LOCK_FILE);
    let ownership: RunOwnership;
    try {
      ownership = linkOwnerLock(root, lockPath, runId);
    } catch (error) {
      // A filesystem without hard links: an owner.lock of the run's own, a file (as before).
      if (error instanceof Deno.errors.AlreadyExists) throw error;
      ownership = ownOwnerLockFile(lockPath, runId);
    }
    return { dir: staging, owner: { dir, ownership } };
  } catch (error) {
    // A full disk fails the pid's write: the directory goes too, not left for a sweep.
    dir?.close();
    try {
      Deno.removeSync(staging, { recursive: true });
    } catch { /* gone already */ }
    throw error;
  }
}

/** Appends one event to any run, from any process: the same sequence and settling rules. */
export function appendToRun(root: DataRoot, runId: string, event: EventInput): RunEvent {
  const appender = RunAppender.open(root, runId);
  try {
    return appender.append(event);
  } finally {
    appender.close();
  }
}

/** Updates any run's record from any process (see RunPatch). */
export function updateRun(root: DataRoot, runId: string, patch: RunPatch): RunRecord {
  const appender = RunAppender.open(root, runId);
  try {
    return appender.update(patch);
  } finally {
    appender.close();
  }
}

/**
 * Replaces run.json atomically, then updates the index row (best effort: see noteRun). Both get
 * the record with its secrets redacted (a goal that quotes a key, say).
 */
export function writeRecord(
  root: DataRoot,
  record: RunRecord,
  options?: { durable?: boolean },
): void {
  const ordered = redactValue(orderedRecord(record));
  root.writeFileAtomic(root.layout.record(record.id), recordText(ordered), options);
  noteRun(root, ordered);
}

function recordText(record: RunRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}
