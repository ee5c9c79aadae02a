// How a turn ends, as a pure function: from what the driver returned (or threw) and what stopped
// it (the turn's timeout, the caller's stop signal) to the run's outcome and the terminal event
// that records it. No files, no processes, no clock: the engine appends what this returns.
import { assertNever } from "../core/assert_never.ts";
import { describeError } from "../core/errors.ts";
import type { DriverResult } from "../drivers/mod.ts";
import type { EventInput, SettledStatus, Usage } from "../store/mod.ts";
import type { RunSummary } from "./types.ts";
import { BUDGET_EXHAUSTED, type Exhaustion, exhaustionReason } from "../core/budget.ts";

export interface SettleFacts {
  /** What the driver returned, or what it threw. */
  ended: { result: DriverResult } | { error: unknown };
  /** The turn's timeout in seconds when it fired, else null. */
  timedOutAfterSeconds: number | null;
  /** Why the caller stopped the turn (its stop signal's reason), or null when it did not. */
  stopReason: string | null;
  /** The limit a model call was refused for, when the turn's budget ended it. */
  exhausted?: Exhaustion | null;
}

export interface Settlement {
  status: SettledStatus;
  /** Why it ended, for people: null when it simply completed. */
  reason: string | null;
  result: string | null;
  exitCode: number | null;
  /** Files the agent declared (absolute paths): copied into the run before `terminal`. */
  attachments: readonly string[];
  /** The event that settles the run. */
  terminal: EventInput;
  /** What the driver threw, else null. */
  error: unknown;
}

/**
 * The outcome of a turn. A thrown error fails the run with its message. A timeout fails it,
 * keeping what the driver said of how it stopped. A stop interrupts it unless the driver had
 * already failed (its failure is the better account), keeping the driver's reason when it gave
 * one.
 */
export function settle(facts: SettleFacts): Settlement {
  let result: DriverResult;
  let error: unknown = null;
  if ("error" in facts.ended) {
    error = facts.ended.error;
    result = { status: "failed", reason: describeError(error), result: null, exitCode: null };
  } else {
    result = facts.ended.result;
  }
  let { status, reason } = result;
  // A budget that ended the turn is its outcome, however the agent took the refusal (or its stop):
  // one status, reason and code for every driver.
  if (facts.exhausted) {
    result = { ...result, code: BUDGET_EXHAUSTED };
    status = "failed";
    reason = exhaustionReason(facts.exhausted);
  } else if (facts.timedOutAfterSeconds !== null) {
    status = "failed";
    reason = `timed out after ${facts.timedOutAfterSeconds} s${reason ? `: ${reason}` : ""}`;
  } else if (facts.stopReason !== null && status !== "failed") {
    status = "interrupted";
    reason = reason ?? facts.stopReason;
  }
  return {
    status,
    reason,
    result: result.result,
    exitCode: result.exitCode,
    attachments: result.attachments ?? [],
    terminal: terminalEvent(status, reason, result.result, result.exitCode, result.code),
    error,
  };
}

/** The terminal event; it carries the agent's exit code, which the record takes from it. */
function terminalEvent(
  status: SettledStatus,
  reason: string | null,
  result: string | null,
  exitCode: number | null,
  outcomeCode?: string,
): EventInput {
  const code = {
    ...(exitCode === null ? {} : { exitCode }),
    ...(outcomeCode === undefined ? {} : { code: outcomeCode }),
  };
  switch (status) {
    case "completed":
      return { type: "completed", payload: { reason, result, ...code } };
    case "failed":
      return { type: "failed", payload: { reason, result, ...code } };
    case "interrupted":
      return { type: "status.changed", payload: { status: "interrupted", reason, ...code } };
    default:
      return assertNever(status, "run status");
  }
}

/** The summary a front end reports: the settlement, the run's ids, and its last usage. */
export function summarize(
  settlement: Settlement,
  run: { runId: string; sessionId: string; contextId: string | null },
  usage: Usage | null,
): RunSummary {
  return {
    runId: run.runId,
    status: settlement.status,
    sessionId: run.sessionId,
    contextId: run.contextId,
    result: settlement.result,
    reason: settlement.reason,
    usage,
    costUsd: usage?.costUsd ?? null,
  };
}

/** A stop signal's reason in words: a string as given, an Error's message, else a plain word. */
export function stopReasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === "string" && reason !== "") return reason;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message !== "") {
    return reason.message;
  }
  return "stopped";
}
