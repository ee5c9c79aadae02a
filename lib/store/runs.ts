// The run store's front door: everything other modules need, from one import. The work is done
// in run_writer.ts (creating, appending, updating), run_record.ts and event_log.ts (the files),
// index_db.ts, list.ts and lookup.ts (the index), liveness.ts and reconcile.ts (owners gone),
// family.ts and decisions.ts (views over several events or runs). All of it is synchronous but
// reconcileCheaply, which belongs to the zod-free paths and loads the repair only when needed.
import type { EventInput, RunEvent, RunRecord } from "./contracts.ts";
import { type EventsRead, readEvents } from "./event_log.ts";
import { inspectRun, loadRun, type RunInspection } from "./run_record.ts";
import {
  appendToRun,
  createRun,
  RunAppender,
  type RunInit,
  type RunOptions,
  type RunPatch,
  type RunWriter,
  updateRun,
} from "./run_writer.ts";
import { listRuns, resolveRun, resolveRunId } from "./lookup.ts";
import type { RunFilter } from "./list.ts";
import {
  reconcileInterruptedRuns,
  type RecoveryOptions,
  type RecoveryReport,
} from "./reconcile.ts";
import { type RunFamily, runFamily, sessionEvents } from "./family.ts";

export { appendToRun, createRun, RunAppender, updateRun };
export { RunWriter } from "./run_writer.ts";
export type { RunInit, RunOptions, RunPatch } from "./run_writer.ts";
export { readEvents };
export type { EventsRead, LineProblem } from "./event_log.ts";
export { inspectRun, loadRun };
export type { RecordProblem, RunInspection } from "./run_record.ts";
export { listRuns, resolveRun, resolveRunId };
export type { RunFilter };
export { ownerState, reconcileCheaply } from "./liveness.ts";
export { reconcileInterruptedRuns };
export { reconcileRun } from "./reconcile.ts";
export type { RecoveryOptions, RecoveryReport, RunReconciliation } from "./reconcile.ts";
export { runFamily, sessionEvents };
export type { FamilyMember, FamilyUsage, RunFamily } from "./family.ts";
export { pendingDecisions } from "./decisions.ts";
export type { PendingDecision } from "./decisions.ts";

/**
 * The store of one data root, for callers that prefer an object to passing `home` around. Each
 * method is the function of the same name.
 */
export class RunStore {
  readonly home: string;

  constructor(home: string) {
    this.home = home;
  }

  createRun(init: RunInit, options?: RunOptions): RunWriter {
    return createRun(this.home, init, options);
  }

  appendToRun(runId: string, event: EventInput): RunEvent {
    return appendToRun(this.home, runId, event);
  }

  updateRun(runId: string, patch: RunPatch): RunRecord {
    return updateRun(this.home, runId, patch);
  }

  openRun(runId: string, options?: RunOptions): RunAppender {
    return RunAppender.open(this.home, runId, options);
  }

  loadRun(runId: string): RunRecord {
    return loadRun(this.home, runId);
  }

  inspectRun(runId: string): RunInspection {
    return inspectRun(this.home, runId);
  }

  readEvents(runId: string): EventsRead {
    return readEvents(this.home, runId);
  }

  resolveRun(ref: string): RunRecord {
    return resolveRun(this.home, ref);
  }

  listRuns(filter?: RunFilter): RunRecord[] {
    return listRuns(this.home, filter);
  }

  runFamily(runId: string): RunFamily {
    return runFamily(this.home, runId);
  }

  sessionEvents(sessionId: string, options?: { excludeRunId?: string }): RunEvent[] {
    return sessionEvents(this.home, sessionId, options);
  }

  reconcileInterruptedRuns(options?: RecoveryOptions): RecoveryReport {
    return reconcileInterruptedRuns(this.home, options);
  }
}
