// The store of one data root as an object: `using store = openStore(home)`. It owns runs (their
// records, event logs and attachments), the context map and the index, and everything it keeps
// between calls (the index connection, the directories already checked, the logs kept open) is
// its own instance state: two stores never share any, and close() lets go of all of it.
// The work is done by the modules beside it — run_writer.ts (creating, appending, updating),
// run_record.ts and event_log.ts (the files), event_tail.ts (reading a log as it grows), index_db,
// list and lookup (the index), liveness and reconcile (owners gone), family and decisions (views
// over several events or runs); each takes the store's DataRoot. All of it is synchronous but
// reconcileCheaply and attachFile.
//
// Names against the team plan's contract: as there, plus `reconcileRun`, `ownerState` and
// `pendingDecisions(runId)` for the commands that need them. The base class DataRoot
// (data_root.ts) is the data root's files alone; the start-up paths open it without the rest, and
// call what they need of the index as functions (reconcileCheaply of liveness.ts, listRunJson of
// list.ts), as the methods here do.
import { importLazily } from "../core/lazy_import.ts";
import type { EventInput, PayloadOf, RunEvent, RunRecord } from "./contracts.ts";
import { ContextMap } from "./contexts.ts";
import { DataRoot, type DataRootOptions } from "./data_root.ts";
import { type PendingDecision, pendingDecisions } from "./decisions.ts";
import { type EventsRead, type LineProblem, readEvents, streamEvents } from "./event_log.ts";
import { EventTail } from "./event_tail.ts";
import { conversationEvents, type RunFamily, runFamily, sessionEvents } from "./family.ts";
import { connectIndex, openedIndex, resetIndex, type RunIndex } from "./index_db.ts";
import { type ListedRuns, listRunJson, MAX_LIMIT, type RunFilter } from "./list.ts";
import { type OwnerState, ownerState, reconcileCheaply } from "./liveness.ts";
import { listRuns, resolveRun, resolveRunId, storeIndex, uniqueRunPrefix } from "./lookup.ts";
import {
  reconcileInterruptedRuns,
  type ReconcileOptions,
  reconcileRun,
  type RecoveryOptions,
  type RecoveryReport,
  type RunReconciliation,
} from "./reconcile.ts";
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

/** The payload of an `attachment.added` event. */
export type AttachmentPayload = PayloadOf<"attachment.added">;

export type StoreOptions = DataRootOptions;

/** Opens the store of the data root `home` (nothing is created until something is written). */
export function openStore(home: string, options: StoreOptions = {}): Store {
  return new Store(home, options);
}

export class Store extends DataRoot {
  /** Context id → harness session (`contexts/<id>/harness-session.json`). */
  readonly contexts: ContextMap;

  constructor(home: string, options: StoreOptions = {}) {
    super(home, options);
    this.contexts = new ContextMap(this, (message) => this.warn(message), {
      // A damaged harness-session.json is rebuilt from the context's runs (their records, which
      // hold what run.started and session.linked said).
      contextRuns: (contextId) => listRuns(this, { contextId, limit: MAX_LIMIT }),
    });
  }

  /** Creates a run; the returned writer owns it (its lock) until close(). */
  createRun(init: RunInit, options?: RunOptions): RunWriter {
    return createRun(this, init, options);
  }

  /** Opens an existing run for appending (NotFoundError for no such run). */
  openRun(runId: string, options?: RunOptions): RunAppender {
    return RunAppender.open(this, runId, options);
  }

  /** Appends one event to any run, from any process (`reins approve` from another shell). */
  appendToRun(runId: string, event: EventInput): RunEvent {
    return appendToRun(this, runId, event);
  }

  updateRun(runId: string, patch: RunPatch): RunRecord {
    return updateRun(this, runId, patch);
  }

  loadRun(runId: string): RunRecord {
    return loadRun(this, runId);
  }

  inspectRun(runId: string): RunInspection {
    return inspectRun(this, runId);
  }

  readEvents(runId: string): EventsRead {
    return readEvents(this, runId);
  }

  /** The run's events read line by line as they are iterated (see streamEvents). */
  streamEvents(runId: string, onProblem?: (problem: LineProblem) => void): Iterable<RunEvent> {
    return streamEvents(this, runId, onProblem);
  }

  /** The id of the run `ref` names: a full id, a unique prefix of one, or `last`. */
  resolveRunId(ref: string): string {
    return resolveRunId(this, ref);
  }

  /** The shortest prefix that names `runId` alone now (8 characters at least), for people to type. */
  uniqueRunPrefix(runId: string): string {
    return uniqueRunPrefix(this, runId);
  }

  resolveRun(ref: string): RunRecord {
    return resolveRun(this, ref);
  }

  listRuns(filter?: RunFilter): RunRecord[] {
    return listRuns(this, filter);
  }

  runFamily(runId: string): RunFamily {
    return runFamily(this, runId);
  }

  sessionEvents(sessionId: string, options?: { excludeRunId?: string }): RunEvent[] {
    return sessionEvents(this, sessionId, options);
  }

  /** The events of several sessions' runs as one conversation, oldest run first. */
  conversationEvents(sessionIds: readonly string[]): RunEvent[] {
    return conversationEvents(this, sessionIds);
  }

  /** The run's approvals and questions that nothing has answered yet, oldest first. */
  pendingDecisions(runId: string): PendingDecision[] {
    return pendingDecisions(readEvents(this, runId).events);
  }

  /** A reader of the run's events.jsonl that returns only what was appended since its last read. */
  tail(runId: string): EventTail {
    return new EventTail(this, runId);
  }

  ownerState(runId: string): OwnerState {
    return ownerState(this, runId);
  }

  reconcileRun(runId: string, options?: ReconcileOptions): Promise<RunReconciliation> {
    return reconcileRun(this, runId, options);
  }

  reconcileInterruptedRuns(options?: RecoveryOptions): Promise<RecoveryReport> {
    return reconcileInterruptedRuns(this, options);
  }

  /** The index, refreshed from runs/; null when the data root does not exist yet. */
  index(): RunIndex | null {
    return storeIndex(this);
  }

  /** The index, connected but not refreshed: this store's one connection (see connectIndex). */
  connectIndex(): RunIndex {
    return connectIndex(this);
  }

  /** The index connection, if one is open and current (nothing is opened). */
  openedIndex(): RunIndex | null {
    return openedIndex(this);
  }

  /** Drops a damaged index and connects to a new, empty one (the next refresh fills it). */
  resetIndex(): RunIndex {
    return resetIndex(this);
  }

  /** Marks interrupted the active runs whose owner is gone (see liveness.ts). */
  reconcileCheaply(): Promise<string[]> {
    return reconcileCheaply(this);
  }

  /** The matching runs as the index stores them, zod-free (see list.ts). */
  listRunJson(filter: RunFilter = {}, options: { prefixes?: boolean } = {}): Promise<ListedRuns> {
    return listRunJson(this, filter, options);
  }

  /** Copies a file into the run's attachments (0600), hashing it; the payload of attachment.added. */
  async attachFile(
    runId: string,
    path: string,
    options?: { name?: string },
  ): Promise<AttachmentPayload> {
    const { attachFile } = await importLazily<typeof import("./attachments.ts")>(
      "store/attachments.ts",
    );
    return await attachFile(this, runId, path, options);
  }
}
