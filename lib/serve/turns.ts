// What the A2A server needs from the rest of reins, as narrow shapes: the store's few methods it
// calls, and one function that runs a turn. The command (lib/cli/serve.ts) binds them to the data
// root's Store and the turn engine with the agent flags given; the server knows neither, so it
// holds no opinion on drivers and can be driven by any engine of the same shape.
import type { EventInput, RunEvent, RunRecord } from "../store/mod.ts";

export interface ServeStore {
  readonly home: string;
  /** Throws NotFoundError when there is no such run. */
  loadRun(runId: string): RunRecord;
  readEvents(runId: string): { events: RunEvent[] };
  appendToRun(runId: string, event: EventInput): RunEvent;
  listRuns(filter: { contextId?: string; limit?: number }): RunRecord[];
  readonly contexts: { forget(contextId: string): string | null };
}

/** One A2A turn: what the message asks, on which context; the rest is the server's config. */
export interface ServeTurn {
  prompt: string;
  /** The client's id for the message that asks it: the prompt keeps it in every Task. */
  messageId: string;
  contextId: string;
}

export interface ServeTurnHooks {
  warn?(message: string): void;
  onEvent?(event: RunEvent): void;
  onCreated?(runId: string): void | Promise<void>;
  onContextBusy?(holderRunId: string | null): void;
}

export interface ServeTurnOutcome {
  summary: { runId: string; status: "completed" | "failed" | "interrupted" };
}

/**
 * Runs one turn to its settled end (as lib/turn's runTurn does, with trigger `a2a`). Rejects,
 * with no run recorded, when the turn cannot start.
 */
export type TurnRunner = (
  turn: ServeTurn,
  signals: { stop: AbortSignal; kill: AbortSignal },
  hooks: ServeTurnHooks,
) => Promise<ServeTurnOutcome>;
