// The shapes of a turn as a library call: what a front end asks for (TurnRequest), the two
// signals it owns (TurnSignals), what it may observe (TurnHooks) and what it gets back
// (TurnOutcome). Types only, so that front ends can import them without loading the engine.
import type { AgentSpec, ApprovalPolicy, Budget, Driver } from "../drivers/mod.ts";
import type { EventInput, RunEvent, SettledStatus, Trigger, Usage } from "../store/mod.ts";
import type { BudgetScope, Limits } from "../core/mod.ts";

export type { AgentSpec };

export interface TurnRequest {
  agent: AgentSpec;
  prompt: string;
  /** The id the prompt's sender gave it (an A2A messageId), kept in run.started. */
  promptMessageId?: string;
  /** Absolute path of an existing directory. */
  cwd: string;
  /** Same context → same harness session (resumed); null: a conversation of its own. */
  contextId: string | null;
  approval: ApprovalPolicy;
  budget: Budget;
  /** Fail the run after this long (null: no limit). */
  timeoutSeconds: number | null;
  /** The family parent (a suite scenario's later turns point at its first). */
  parentRunId: string | null;
  trigger: Trigger;
  relation?: string | null;
  resumedFromRunId?: string | null;
  /**
   * The conversation so far, when the caller knows it better than the context does (a replay of
   * a resumed turn brings the turns before it); else it comes from the context's session.
   */
  history?: readonly EventInput[];
  /** Files (absolute paths) copied into the run before the driver starts. */
  attachments?: readonly string[];
  /** Extra variables for the agent's process. */
  env?: Record<string, string>;
  /**
   * What to do when another turn holds the context: wait for it (the default; hooks hear of it
   * through onContextBusy) or fail at once with a ContextBusyError naming its run.
   */
  contextBusy?: "wait" | "fail";
  /** A ready driver (replay brings one with its recorded model); else made from `agent`. */
  driver?: Driver;
  /**
   * false: the harness calls its model directly, not through the model gateway (--no-gateway);
   * the reason recorded is `noGatewayReason` (default "--no-gateway"). Default: the config's.
   */
  gateway?: boolean;
  noGatewayReason?: string;
  /**
   * Where each gateway route's calls go instead of `upstream`, the harness's own (a replay's or a
   * suite reuse's recorded answers, lib/gateway/replay_server.ts): the gateway is then required.
   */
  upstreamOf?: (route: string, upstream: string) => string;
  /**
   * Run the agent (and every process of the turn) under bubblewrap (--confine,
   * docs/confinement.md). Absent or null: the config's `confine.enabled`.
   */
  confine?: boolean | null;
  /** Hosts a confined agent may reach through reins's proxy (--allow-host), besides the config's. */
  allowHosts?: readonly string[];
  /** Limits on the sum over the context's turns, this one included (--context-max-*). */
  contextBudget?: Limits;
  /** More scopes the turn is held to (a suite scenario's, with what its earlier turns spent). */
  budgetScopes?: BudgetScope[];
}

/**
 * Owned by the caller. `stop`: end the turn gracefully (the run ends interrupted, with the
 * signal's reason when it is a string); `kill`: stop waiting for the agent and kill it now. A
 * caller aborts stop first; the engine itself never touches process signals.
 */
export interface TurnSignals {
  stop: AbortSignal;
  kill: AbortSignal;
}

export interface TurnHooks {
  /** Something for people that does not change the outcome (a context started afresh). */
  warn?(message: string): void;
  /** Every stored event of the run, in order, as stored. */
  onEvent?(event: RunEvent): void;
  /** The run exists; its driver has not started yet. */
  onCreated?(runId: string): void | Promise<void>;
  /** Another turn holds the context and this one is about to wait for it (its run, if known). */
  onContextBusy?(holderRunId: string | null): void;
  /**
   * The run has settled and its files are closed (the context is free again): for work that
   * follows a turn — an export, a report. What it throws is passed to warn, never to the outcome.
   */
  onSettled?(summary: RunSummary): void | Promise<void>;
}

export interface RunSummary {
  runId: string;
  status: SettledStatus;
  sessionId: string;
  contextId: string | null;
  result: string | null;
  reason: string | null;
  usage: Usage | null;
  costUsd: number | null;
}

export interface TurnOutcome {
  summary: RunSummary;
  /** Protocol lines (or other input) that were refused and kept as `problem` events. */
  problems: number;
  /** What the driver threw, if it threw (the run is then `failed` with its message), else null. */
  error: unknown;
}
