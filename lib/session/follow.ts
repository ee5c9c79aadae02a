// Following a run from any process: its events.jsonl read incrementally by byte offset (only the
// bytes appended since the last look, complete lines only, so a line being written is read whole
// on the next poll), until the run settles — a terminal event in the log, or a settled status in
// run.json. A run whose owner died without settling it is reconciled (marked interrupted) so that
// a follower never waits forever. It reads and reconciles; it prints nothing.
import { importLazily } from "../core/lazy_import.ts";
import { sleep } from "../core/clock.ts";
import { terminalStatusOf } from "../store/contract_runtime.ts";
import type { DataRoot, PendingDecision, RunEvent, SettledStatus } from "../store/mod.ts";
import { EventTail, type TailBatch } from "../store/event_tail.ts";
import { ownerState, warnLeftAgents } from "../store/liveness.ts";
import { readRecordFile } from "../store/run_record.ts";
import { isActive } from "../store/run_files.ts";

export { EventTail, type TailBatch };

export interface FollowOptions {
  /** Stops following (the generator returns) when aborted. */
  signal?: AbortSignal;
  /** Time between looks at the log when nothing new came (default 100 ms). */
  intervalMs?: number;
  /** Time between looks at run.json and the owner while the log is quiet (default 500 ms). */
  recordCheckMs?: number;
}

/**
 * The run's events in batches, from the first, as they are appended; returns the status the run
 * settled with (or null when `signal` stopped it first). Reconciles a run whose owner is gone.
 */
export async function* followRun(
  root: DataRoot,
  runId: string,
  options: FollowOptions = {},
): AsyncGenerator<TailBatch, SettledStatus | null> {
  const intervalMs = options.intervalMs ?? 100;
  const recordCheckMs = options.recordCheckMs ?? 500;
  const tail = new EventTail(root, runId);
  let lastCheck = -Infinity;
  let recordSettled: SettledStatus | null = null;
  while (!options.signal?.aborted) {
    let settled: SettledStatus | null = null;
    let quiet = true;
    for (const piece of tail.pieces()) {
      quiet &&= piece.events.length === 0;
      for (const event of piece.events) {
        if (event.ignored === undefined) settled ??= terminalStatusOf(event);
      }
      yield piece;
    }
    // Whatever was appended with the outcome (late events, kept as evidence) is shown too.
    if (settled !== null) return settled;
    // run.json settled and the log read after it: nothing more will come.
    if (recordSettled !== null) return recordSettled;
    if (quiet && performance.now() - lastCheck >= recordCheckMs) {
      lastCheck = performance.now();
      recordSettled = await settledStatus(root, runId);
      // Read once more before returning: the log is written before the record.
      if (recordSettled !== null) continue;
    }
    // A stop ends the wait; the loop then sees the signal and returns.
    await sleep(intervalMs, options.signal).catch(() => {});
  }
  return null;
}

/** The run's settled status from run.json, reconciling it first when its owner is gone. */
async function settledStatus(root: DataRoot, runId: string): Promise<SettledStatus | null> {
  const status = recordStatus(root, runId);
  if (status !== null && !isActive(status)) return status as SettledStatus;
  if (ownerState(root, runId) !== "gone") return null;
  const { reconcileRun } = await importLazily<typeof import("../store/reconcile.ts")>(
    "store/reconcile.ts",
  );
  // As any reconciler does, it stops the groups the dead owner's agents left running first.
  const result = await reconcileRun(root, runId);
  await warnLeftAgents(root, result.agents);
  // The interruption is in the log now; the next read brings it.
  return null;
}

function recordStatus(root: DataRoot, runId: string): string | null {
  const file = readRecordFile(root, runId);
  return file.state === "ok" ? file.record.status : null;
}

/**
 * Approvals and questions asked and not yet answered, kept up to date event by event (the
 * follower's version of the store's pendingDecisions, which needs every event at once).
 */
export class PendingTracker {
  readonly #pending = new Map<string, PendingDecision>();
  readonly #announced = new Set<string>();

  add(event: RunEvent): void {
    if (event.ignored !== undefined) return;
    switch (event.type) {
      case "approval.requested":
      case "question.requested": {
        const kind = event.type === "approval.requested" ? "approval" : "question";
        const id = event.type === "approval.requested"
          ? event.payload.approvalId
          : event.payload.questionId;
        const key = `${kind}:${id}`;
        if (this.#pending.has(key) || this.#announced.has(key)) return;
        this.#pending.set(key, {
          kind,
          id,
          eventId: event.id,
          sequence: event.sequence,
          requestedAt: event.timestamp,
          payload: event.payload,
        });
        return;
      }
      case "approval.resolved":
        this.#pending.delete(`approval:${event.payload.approvalId}`);
        this.#announced.add(`approval:${event.payload.approvalId}`);
        return;
      case "question.answered":
        this.#pending.delete(`question:${event.payload.questionId}`);
        this.#announced.add(`question:${event.payload.questionId}`);
        return;
      default:
        return;
    }
  }

  /** Pending decisions not returned by an earlier call: each is announced once. */
  takeNew(): PendingDecision[] {
    const fresh: PendingDecision[] = [];
    for (const [key, decision] of this.#pending) {
      if (this.#announced.has(key)) continue;
      this.#announced.add(key);
      fresh.push(decision);
    }
    return fresh;
  }
}
