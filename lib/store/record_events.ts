// How events shape a run's record: the few that change run.json (an outcome, a status, the
// native session id, the goal), the outcome a log holds, and a record rebuilt from its events when
// run.json is lost. The events are the truth; run.json is their summary.
import { assertNever } from "../core/assert_never.ts";
import type { RunEvent, RunRecord, SettledStatus } from "./contracts.ts";
import { isActiveStatus, isTrigger, orderedRecord, terminalStatusOf } from "./contract_runtime.ts";

/** Event types that can change a run's record (the rest never do). */
const RECORD_CHANGING = new Set<string>([
  "session.linked",
  "message.completed",
  "status.changed",
  "completed",
  "failed",
]);

export function mayChangeRecord(type: string): boolean {
  return RECORD_CHANGING.has(type);
}

/**
 * The record after `event`, or null when the event leaves it as it is. A settled record keeps its
 * outcome: nothing is applied to it.
 */
export function applyEvent(record: RunRecord, event: RunEvent): RunRecord | null {
  if (!isActiveStatus(record.status) || event.ignored !== undefined) return null;
  switch (event.type) {
    case "session.linked": {
      const id = event.payload.nativeSessionId;
      return id === record.nativeSessionId ? null : { ...record, nativeSessionId: id };
    }
    case "message.completed": {
      const { role, text } = event.payload;
      if (role !== "user" || record.goal !== null || text.trim() === "") return null;
      return { ...record, goal: text };
    }
    case "status.changed":
    case "completed":
    case "failed": {
      const outcome = terminalStatusOf(event);
      if (outcome !== null) return settle(record, outcome, event);
      const status = (event as Extract<RunEvent, { type: "status.changed" }>).payload.status;
      return status === record.status ? null : { ...record, status };
    }
    case "run.started":
    case "message.delta":
    case "model.requested":
    case "model.completed":
    case "model.call.started":
    case "model.call.completed":
    case "tool.started":
    case "tool.completed":
    case "approval.requested":
    case "approval.resolved":
    case "question.requested":
    case "question.answered":
    case "usage.updated":
    case "compaction.started":
    case "compaction.completed":
    case "budget.warning":
    case "heartbeat":
    case "attachment.added":
    case "network.connection":
    case "problem":
      return null;
    default:
      return assertNever(event, "event type");
  }
}

function settle(record: RunRecord, status: SettledStatus, event: RunEvent): RunRecord {
  // The agent's exit code comes with the outcome, so that settling costs one record write.
  const exitCode = (event.payload as { exitCode?: unknown }).exitCode;
  return {
    ...record,
    status,
    endedAt: event.timestamp,
    terminalReason: reasonOf(event),
    exitCode: Number.isSafeInteger(exitCode) ? exitCode as number : record.exitCode,
  };
}

function reasonOf(event: RunEvent): string | null {
  const reason = (event.payload as { reason?: unknown }).reason;
  return typeof reason === "string" ? reason : null;
}

/** The event that settled the run: its first terminal event that was not ignored. */
export function outcomeEvent(events: readonly RunEvent[]): RunEvent | null {
  for (const event of events) {
    if (event.ignored === undefined && terminalStatusOf(event) !== null) return event;
  }
  return null;
}

/** Whether the record's outcome is the one its log holds (`outcome`, or none). */
export function agreesWithOutcome(record: RunRecord, outcome: RunEvent | null): boolean {
  if (outcome === null) return isActiveStatus(record.status);
  return record.status === terminalStatusOf(outcome) && record.endedAt === outcome.timestamp &&
    record.terminalReason === reasonOf(outcome);
}

/** The record with its outcome taken from `outcome` (or, with none, running and unsettled). */
export function withOutcome(record: RunRecord, outcome: RunEvent | null): RunRecord {
  if (outcome === null) {
    return { ...record, status: "running", endedAt: null, terminalReason: null };
  }
  return settle(record, terminalStatusOf(outcome)!, outcome);
}

/**
 * A record rebuilt from a run's events alone, or null without a `run.started` to start from.
 * run.started carries what the record needs beyond its own payload fields (trigger, parent,
 * relation), because reins writes them there for exactly this.
 */
export function recordFromEvents(runId: string, events: readonly RunEvent[]): RunRecord | null {
  const started = events.find((event) => event.type === "run.started");
  if (started === undefined || started.type !== "run.started") return null;
  const p = started.payload as typeof started.payload & Record<string, unknown>;
  const text = (value: unknown) => typeof value === "string" ? value : null;
  const trigger = isTrigger(p.trigger) ? p.trigger : null;
  let record: RunRecord = orderedRecord({
    id: runId,
    sessionId: started.sessionId,
    contextId: p.contextId,
    nativeSessionId: text(p.nativeSessionId),
    parentRunId: text(p.parentRunId),
    resumedFromRunId: "resumedFromRunId" in p ? text(p.resumedFromRunId) : p.resumeOf,
    relation: text(p.relation),
    harness: p.harness || "unknown",
    driver: p.driver || "unknown",
    trigger: trigger ?? "cli",
    cwd: p.cwd,
    goal: p.goal,
    startedAt: started.timestamp,
    endedAt: null,
    status: "running",
    exitCode: typeof p.exitCode === "number" ? p.exitCode : null,
    terminalReason: null,
  });
  for (const event of events) record = applyEvent(record, event) ?? record;
  return record;
}
