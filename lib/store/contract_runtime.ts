// The contracts of lib/store/contracts.ts as the store uses them at run time, without loading
// zod: the checks generated from the schemas (contract_checks.gen.ts), the names the schemas are
// built from (contract_names.ts), and the small rules over them (which events settle a run, the
// field order of run.json). contracts.ts stays the definition; only its types are used here.
import type {
  EventInput,
  EventType,
  HarnessSession,
  RunEvent,
  RunRecord,
  RunStatus,
  SettledStatus,
} from "./contracts.ts";
import {
  EVENT_TYPE_NAMES,
  type Issue,
  RECORD_FIELDS,
  validateHarnessSession,
  validatePayload,
  validateRunEvent,
  validateRunRecord,
} from "./contract_checks.gen.ts";
import { isActive } from "./run_files.ts";
import { TRIGGERS } from "./contract_names.ts";

export type { Issue };
export {
  HARNESS_SESSION_TYPE,
  RUN_STATUSES,
  SETTLED_STATUSES,
  TRIGGERS,
  USAGE_COUNTERS,
} from "./contract_names.ts";

export const EVENT_TYPES = EVENT_TYPE_NAMES as readonly EventType[];
export const RUN_RECORD_FIELDS = RECORD_FIELDS as readonly (keyof RunRecord)[];

/** Whether a run in `status` may still change. */
export const isActiveStatus: (status: RunStatus) => boolean = isActive;

/** A record with its fields in the contract's order, so files diff cleanly. */
export function orderedRecord(record: RunRecord): RunRecord {
  const out: Record<string, unknown> = {};
  for (const field of RUN_RECORD_FIELDS) out[field] = record[field];
  return out as RunRecord;
}

/** An issue as one line: `expected string, received number at payload.text`. */
export function describeIssue(issue: Issue, prefix = ""): string {
  const path = [prefix, issue.path].filter(Boolean).join(".");
  return path ? `${issue.message} at ${path}` : issue.message;
}

/** Checks an event body (type + payload) against its payload's schema; the payload as given. */
export function parseEventInput(value: unknown): { ok: true; event: EventInput } | {
  ok: false;
  reason: string;
} {
  if (typeof value !== "object" || value === null) return { ok: false, reason: "not an object" };
  const { type, payload, native } = value as {
    type?: unknown;
    payload?: unknown;
    native?: unknown;
  };
  const validate = typeof type === "string" && Object.hasOwn(validatePayload, type)
    ? validatePayload[type]
    : undefined;
  if (validate === undefined) {
    return { ok: false, reason: `unknown event type ${JSON.stringify(type)}` };
  }
  const issue = validate(payload);
  if (issue !== null) return { ok: false, reason: describeIssue(issue, "payload") };
  const event = { type, payload } as EventInput;
  if (native !== undefined) event.native = native;
  return { ok: true, event };
}

/** Validates one parsed line as a stored event. */
export function validateStoredEvent(
  value: unknown,
): { ok: true; event: RunEvent } | { ok: false; reason: string } {
  const issue = validateRunEvent(value);
  if (issue === null) return { ok: true, event: value as RunEvent };
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof value === "object" && value !== null && issue.path === "type") {
    // zod would list all the types it expected: name the one it got instead.
    return {
      ok: false,
      reason: type === undefined
        ? "no event type at type"
        : `unknown event type ${JSON.stringify(type)} at type`,
    };
  }
  return { ok: false, reason: describeIssue(issue) };
}

/** Whether a parsed line is a valid stored event (the reader's hot path: no allocation). */
export function isRunEvent(value: unknown): value is RunEvent {
  return validateRunEvent(value) === null;
}

/** Why `value` is not a valid run record (one line), or null. */
export function runRecordProblem(value: unknown): string | null {
  const issue = validateRunRecord(value);
  return issue === null ? null : describeIssue(issue);
}

/** Why `value` is not a valid harness-session entry (one line), or null. */
export function harnessSessionProblem(value: unknown): string | null {
  const issue = validateHarnessSession(value);
  return issue === null ? null : describeIssue(issue);
}

/** `value` as a harness-session entry, or null when it is not a valid one. */
export function asHarnessSession(value: unknown): HarnessSession | null {
  return validateHarnessSession(value) === null ? value as HarnessSession : null;
}

/** Whether `value` names a trigger of the contract. */
export function isTrigger(value: unknown): value is typeof TRIGGERS[number] {
  return (TRIGGERS as readonly unknown[]).includes(value);
}

/** The status an event settles its run with, if it is terminal. */
export function terminalStatusOf(event: Pick<RunEvent, "type" | "payload">): SettledStatus | null {
  if (event.type === "completed") return "completed";
  if (event.type === "failed") return "failed";
  if (event.type === "status.changed") {
    const status = (event.payload as { status: RunStatus }).status;
    return status === "completed" || status === "failed" || status === "interrupted"
      ? status
      : null;
  }
  return null;
}
