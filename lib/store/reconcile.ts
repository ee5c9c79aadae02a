// Reconciliation: a run whose owner is gone (its owner lock can be taken) and whose log holds no
// outcome is marked interrupted, with a `status.changed` event at the next sequence; a run.json
// that disagrees with its log is corrected to the log (a copy of it kept first); a damaged one is
// rebuilt from the events. A run whose owner is alive is never touched. What the dead owner's
// agents left running is stopped here too, under the owner lock and before the run reads as
// interrupted (left_agents.ts): whoever reconciles — reins show --follow, the cheap
// reconciliation of every command, reins recover — settling an orphaned run stops its groups.
import { nowIso } from "../core/clock.ts";
import { DataRootError, NotFoundError } from "../core/errors.ts";
import { removeAbandonedTemps, removeStaleTemps } from "../core/atomic_write.ts";
import type { RunRecord } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";
import { describeProblems, readEvents } from "./event_log.ts";
import { connectIndex, noteRun, refreshIndex, runDirectoryNames } from "./index_db.ts";
import { contextDirectories, LEFTOVER_AGE_MS, removeAbandonedCreations } from "./leftovers.ts";
import { agreesWithOutcome, outcomeEvent, recordFromEvents, withOutcome } from "./record_events.ts";
import { readRecordFile, recordsForIndex } from "./run_record.ts";
import { holdRun } from "./owner.ts";
import {
  DAMAGED_RECORD_FILE,
  exists,
  isActive,
  OUTCOME_BACKUP_FILE,
  OWNER_LOCK_FILE,
  RECORD_FILE,
  shownPath,
} from "./run_files.ts";
import { RunAppender, writeRecord } from "./run_writer.ts";
import { GroupCensus, type LeftAgent, stopLeftAgents } from "./left_agents.ts";

export const INTERRUPTED_REASON = "the process running it stopped before the run settled";

export interface RunReconciliation {
  runId: string;
  /** `alive`: its owner holds the lock, and nothing was looked at or changed. */
  owner: "alive" | "gone";
  /** A `status.changed {interrupted}` was appended and the record says so. */
  interrupted: boolean;
  /** run.json said another outcome than its log; corrected, the old file kept beside it. */
  outcomeRepaired: boolean;
  /** run.json was missing or damaged and was rebuilt from the events. */
  recordRebuilt: boolean;
  /** A directory with nothing recorded in it (a creation cut short) was removed. */
  removed: boolean;
  /** What was found wrong, one line each (`runs/<id>/events.jsonl:12: skipped: …`). */
  problems: string[];
  /**
   * Why the run could not be reconciled (a file of it is a planted link, or someone else could
   * have written it), or null. Such a run is settled in run.json (or dropped from the index's
   * active runs) so that it does not stay "running" for ever.
   */
  skipped: string | null;
  /** What the run's agents left running, looked for because its owner is gone (see the top). */
  agents: LeftAgent[];
}

export interface ReconcileOptions {
  /** The reason recorded on an interrupted run. */
  reason?: string;
  /** One look at the process groups, shared by the runs of one recovery. */
  census?: GroupCensus;
  /** How long a left agent's group has between SIGTERM and SIGKILL (default 2 s). */
  graceMs?: number;
}

/**
 * Reconciles one run (see the module comment). Throws NotFoundError for no such run. A run it
 * settles (or finds settled) as interrupted has its recorded agents' groups stopped first.
 */
export async function reconcileRun(
  root: DataRoot,
  runId: string,
  options: ReconcileOptions = {},
): Promise<RunReconciliation> {
  const result: RunReconciliation = {
    runId,
    owner: "alive",
    interrupted: false,
    outcomeRepaired: false,
    recordRebuilt: false,
    removed: false,
    problems: [],
    skipped: null,
    agents: [],
  };
  const dir = root.layout.run(runId);
  if (!exists(dir)) throw new NotFoundError(`No run ${runId} in ${root.home}`);
  const owner = holdRun(root, dir);
  if (owner === "no-run") throw new NotFoundError(`No run ${runId} in ${root.home}`);
  if (owner === null) return result;
  try {
    result.owner = "gone";
    // Holding the run from here on: a second reconciler sees it as owned and leaves it.
    const stopAgents = async () => {
      result.agents = await stopLeftAgents(root, [runId], {
        census: options.census ?? new GroupCensus(),
        graceMs: options.graceMs,
      });
    };
    try {
      await repair(root, runId, options.reason ?? INTERRUPTED_REASON, result, stopAgents);
    } catch (error) {
      if (!(error instanceof DataRootError)) throw error;
      result.skipped = error.message;
      result.problems.push(`runs/${runId}: skipped: ${error.message}`);
      settleUnreadable(root, runId, error.message);
      await stopAgents();
    }
  } finally {
    owner[Symbol.dispose]();
  }
  return result;
}

async function repair(
  root: DataRoot,
  runId: string,
  reason: string,
  result: RunReconciliation,
  stopAgents: () => Promise<void>,
): Promise<void> {
  removeStaleTemps(root.layout.record(runId));
  const read = readEvents(root, runId);
  result.problems.push(...describeProblems(runId, read));
  const outcome = outcomeEvent(read.events);
  const file = readRecordFile(root, runId);
  let record: RunRecord;
  if (file.state === "ok") {
    record = file.record;
  } else {
    const rebuilt = recordFromEvents(runId, read.events);
    if (rebuilt === null) {
      if (file.state === "missing" && read.events.length === 0 && removeIfEmpty(root, runId)) {
        result.removed = true;
        return;
      }
      result.problems.push(
        `${shownPath(runId, RECORD_FILE)}: ${
          file.state === "missing" ? "it is missing" : file.reason
        }, and the events hold no run.started to rebuild it from`,
      );
      return;
    }
    if (file.state === "missing" && outcome === null) {
      // A run killed before its record first changed never had a run.json: its record is its
      // run.started's, and the interruption appended below writes it.
      await stopAgents();
      interrupt(root, runId, reason, result);
      return;
    }
    if (file.state === "damaged") keepCopy(root, runId, DAMAGED_RECORD_FILE, file.text);
    result.problems.push(
      `${shownPath(runId, RECORD_FILE)}: ${
        file.state === "missing" ? "it is missing" : file.reason
      }; rebuilt from the events`,
    );
    record = rebuilt;
    writeRecord(root, record);
    result.recordRebuilt = true;
  }
  if (!agreesWithOutcome(record, outcome)) {
    if (!result.recordRebuilt) {
      keepCopy(root, runId, OUTCOME_BACKUP_FILE, root.readText(root.layout.record(runId)));
      result.problems.push(
        `${shownPath(runId, RECORD_FILE)}: says ${record.status}, its events say ${
          outcome === null ? "it never settled" : outcome.type
        }; corrected (copy kept as ${OUTCOME_BACKUP_FILE})`,
      );
      result.outcomeRepaired = true;
    }
    record = withOutcome(record, outcome);
    writeRecord(root, record);
  }
  if (outcome !== null) {
    noteRun(root, record);
    // Interrupted by a reconciler of an older reins, which left its agents running.
    if (record.status === "interrupted") await stopAgents();
    return;
  }
  // The agents first: once the log says interrupted, nothing of the run may still be running.
  await stopAgents();
  interrupt(root, runId, reason, result);
}

/** Appends the interruption of a run whose owner is gone (run.json follows it). */
function interrupt(
  root: DataRoot,
  runId: string,
  reason: string,
  result: RunReconciliation,
): void {
  const appender = RunAppender.open(root, runId);
  try {
    appender.append({ type: "status.changed", payload: { status: "interrupted", reason } });
    result.interrupted = appender.record.status === "interrupted";
  } finally {
    appender.close();
  }
}

/**
 * Settles a run whose log cannot be used, without touching the log: run.json says interrupted
 * (and why) when it can be read and written; otherwise the index forgets the run as active.
 */
function settleUnreadable(root: DataRoot, runId: string, why: string): void {
  try {
    const file = readRecordFile(root, runId);
    if (file.state === "ok") {
      if (isActive(file.record.status)) {
        writeRecord(root, {
          ...file.record,
          status: "interrupted",
          endedAt: nowIso(),
          terminalReason: `${INTERRUPTED_REASON}; it cannot be reconciled: ${why}`,
        });
      }
      return;
    }
  } catch {
    // run.json is as unusable as the log
  }
  connectIndex(root).remove(runId);
}

/** Writes `text` as `<run>/<name>` unless a copy is already there (the first is the evidence). */
function keepCopy(root: DataRoot, runId: string, name: string, text: string | null): void {
  if (text === null) return;
  const path = root.layout.runFile(runId, name);
  if (exists(path)) return;
  root.writeFileAtomic(path, text);
}

/** Removes a run directory that holds nothing but its owner lock. */
function removeIfEmpty(root: DataRoot, runId: string): boolean {
  const dir = root.layout.run(runId);
  for (const entry of Deno.readDirSync(dir)) {
    if (entry.name !== OWNER_LOCK_FILE) return false;
  }
  Deno.removeSync(dir, { recursive: true });
  return true;
}

export interface RecoveryOptions {
  /** Rebuild index.sqlite from the run files first. */
  reindex?: boolean;
  /** The reason recorded on interrupted runs. */
  reason?: string;
}

export interface RecoveryReport {
  /** How many run directories were looked at. */
  checked: number;
  /** Runs that could not be reconciled (see RunReconciliation.skipped); the why is in problems. */
  skipped: string[];
  /** Runs whose owner was alive: left alone. */
  live: string[];
  interrupted: string[];
  outcomeRepaired: string[];
  recordRebuilt: string[];
  /** Run directories with nothing recorded, and abandoned creations, removed. */
  removed: number;
  /** Temp files of atomic writes whose writer died, removed from run and context directories. */
  removedTemps: number;
  problems: string[];
  /** Runs in the index after rebuilding it, or null when it was not asked for. */
  reindexed: number | null;
  /** What dead owners' agents left running, and what was done about it (left_agents.ts). */
  agents: LeftAgent[];
}

/** `reins recover`: reconciles every run of the data root (and rebuilds the index if asked). */
export async function reconcileInterruptedRuns(
  root: DataRoot,
  options: RecoveryOptions = {},
): Promise<RecoveryReport> {
  const report: RecoveryReport = {
    checked: 0,
    skipped: [],
    live: [],
    interrupted: [],
    outcomeRepaired: [],
    recordRebuilt: [],
    removed: 0,
    removedTemps: 0,
    problems: [],
    reindexed: null,
    agents: [],
  };
  if (!exists(root.home)) return report;
  // First, as it refuses a data root that is not a directory with a message that says so.
  const index = connectIndex(root);
  const nowMs = Date.now();
  report.removed += removeAbandonedCreations(root, { nowMs, legacy: true });
  const sweep = { minAgeMs: LEFTOVER_AGE_MS, nowMs };
  for (const dir of contextDirectories(root)) {
    report.removedTemps += removeAbandonedTemps(dir, sweep);
  }
  const names = runDirectoryNames(root).sort();
  const census = new GroupCensus();
  for (const runId of names) {
    report.checked++;
    report.removedTemps += removeAbandonedTemps(root.layout.run(runId), sweep);
    const result = await reconcileRun(root, runId, { reason: options.reason, census });
    report.agents.push(...result.agents);
    if (result.owner === "alive") report.live.push(runId);
    if (result.interrupted) report.interrupted.push(runId);
    if (result.outcomeRepaired) report.outcomeRepaired.push(runId);
    if (result.recordRebuilt) report.recordRebuilt.push(runId);
    if (result.removed) report.removed++;
    if (result.skipped !== null) report.skipped.push(runId);
    report.problems.push(...result.problems);
  }
  refreshIndex(index, { full: options.reindex === true, reader: recordsForIndex });
  if (options.reindex) report.reindexed = index.count();
  return report;
}
