// Tasks as the store records them: a task is a run that A2A started (trigger `a2a`); other runs
// of the data root are not tasks and are not found here, so a token for the server shows what the
// server did, not every run of the machine. Settled runs never change, so their views are kept
// (a bounded number, least recently used out first) and GetTask of a finished task reads nothing.
import { NotFoundError } from "../core/errors.ts";
import type { RunRecord } from "../store/mod.ts";
import { TERMINAL_STATES } from "./a2a/wire.ts";
import { errorInfo, RPC, RpcError } from "./jsonrpc.ts";
import { TaskView } from "./task_view.ts";
import type { ServeStore } from "./turns.ts";

const KEPT_VIEWS = 2000;

export function taskNotFound(taskId: string): RpcError {
  return new RpcError(RPC.taskNotFound, `Task not found: ${JSON.stringify(taskId)}`, [
    errorInfo("TASK_NOT_FOUND", { taskId }),
  ]);
}

export class TaskLookup {
  readonly #store: ServeStore;
  readonly #settled = new Map<string, TaskView>();

  constructor(store: ServeStore) {
    this.#store = store;
  }

  /** The record of task `taskId`, or TaskNotFound (-32001). */
  record(taskId: string): RunRecord {
    let record: RunRecord;
    try {
      record = this.#store.loadRun(taskId);
    } catch (error) {
      if (error instanceof NotFoundError) throw taskNotFound(taskId);
      // An id that cannot name a run (a path, say) names no task either.
      if ((error as { code?: string }).code === "usage") throw taskNotFound(taskId);
      throw error;
    }
    if (record.trigger !== "a2a") throw taskNotFound(taskId);
    return record;
  }

  /** The view of a task from its recorded run (or the kept one, when it has settled). */
  view(taskId: string, known?: RunRecord): TaskView {
    const kept = this.#settled.get(taskId);
    if (kept) {
      this.#settled.delete(taskId);
      this.#settled.set(taskId, kept);
      return kept;
    }
    const record = known ?? this.record(taskId);
    const view = TaskView.fromRecord(record, this.#store.readEvents(taskId).events);
    if (TERMINAL_STATES.has(view.state)) this.keep(view);
    return view;
  }

  /** Keeps the view of a settled task. */
  keep(view: TaskView): void {
    this.#settled.delete(view.taskId);
    this.#settled.set(view.taskId, view);
    if (this.#settled.size > KEPT_VIEWS) {
      const oldest = this.#settled.keys().next().value;
      if (oldest !== undefined) this.#settled.delete(oldest);
    }
  }

  /** The records of A2A tasks, optionally on one context (newest first by start). */
  records(contextId: string | undefined): RunRecord[] {
    return this.#store.listRuns({ contextId, limit: 10_000 }).filter((r) => r.trigger === "a2a");
  }
}
