// Where a run's files live under the data root, and which statuses count as active. Free of zod
// and of node: modules on purpose: `reins runs` and the cheap reconciliation every command does
// import this, and each of those imports costs start-up time (see lib/store/index_db.ts).
import { joinPath } from "../core/paths.ts";
import { safeName } from "../core/ids.ts";

export const RECORD_FILE = "run.json";
export const EVENTS_FILE = "events.jsonl";
/** Held locked (flock, exclusive) by the process that runs the run, for the run's whole life. */
export const OWNER_LOCK_FILE = "owner.lock";
/** Kept beside run.json when reconciliation corrects a record that disagrees with its events. */
export const OUTCOME_BACKUP_FILE = "run.json.before-outcome-repair";
/** The bytes of a run.json that could not be read, kept when it is rebuilt from the events. */
export const DAMAGED_RECORD_FILE = "run.json.damaged";
/** A run directory being created: renamed to its id once its owner lock is held. */
export const CREATING_SUFFIX = ".creating";

/** The run statuses (mirrors RUN_STATUSES of contracts.ts, which costs zod to import). */
export const STATUS_NAMES = [
  "queued",
  "running",
  "waiting",
  "completed",
  "failed",
  "interrupted",
] as const;

/** Whether a run in `status` may still change (mirrors isActiveStatus of contracts.ts). */
export function isActive(status: string): boolean {
  return status === "queued" || status === "running" || status === "waiting";
}

export function runsDir(home: string): string {
  return joinPath(home, "runs");
}

/** The run's directory; the id is checked before it becomes a path segment. */
export function runDir(home: string, runId: string): string {
  return joinPath(home, "runs", safeName(runId, "run id"));
}

export function recordPath(home: string, runId: string): string {
  return joinPath(runDir(home, runId), RECORD_FILE);
}

export function eventsPath(home: string, runId: string): string {
  return joinPath(runDir(home, runId), EVENTS_FILE);
}

export function ownerLockPath(home: string, runId: string): string {
  return joinPath(runDir(home, runId), OWNER_LOCK_FILE);
}

/** `runs/<id>/<file>`: how messages name a run's file, short and unambiguous. */
export function shownPath(runId: string, file: string): string {
  return `runs/${runId}/${file}`;
}

export function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
