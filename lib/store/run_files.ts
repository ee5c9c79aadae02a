// What the run store's modules share about a run's files: their names (built into paths by
// core/layout.ts), which statuses count as active, and whether a path exists. Free of zod and of node:
// modules on purpose: `reins runs` and the cheap reconciliation every command does import this,
// and each of those imports costs start-up time (see lib/store/index_db.ts).
export {
  CREATING_SUFFIX,
  EVENTS_FILE,
  OWNER_LOCK_FILE,
  RECORD_FILE,
  shownPath,
} from "../core/layout.ts";

/** Kept beside run.json when reconciliation corrects a record that disagrees with its events. */
export const OUTCOME_BACKUP_FILE = "run.json.before-outcome-repair";
/** The bytes of a run.json that could not be read, kept when it is rebuilt from the events. */
export const DAMAGED_RECORD_FILE = "run.json.damaged";

/** The run statuses (contract_runtime.ts's RUN_STATUSES), for commands that load no contract. */
export const STATUS_NAMES = [
  "queued",
  "running",
  "waiting",
  "completed",
  "failed",
  "interrupted",
] as const;

/** Whether a run in `status` may still change (contract_runtime.ts's isActiveStatus). */
export function isActive(status: string): boolean {
  return status === "queued" || status === "running" || status === "waiting";
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
