// run.json, read: validated, its damage described, never thrown at a reader who can be given the
// record its events rebuild (run_writer.ts writes it). Reading never writes: repairing files is
// reconciliation's job. Loaded lazily by the index (index_db.ts) to fill rows it lacks, so it
// imports nothing that imports the index.
import { DataRootError, NotFoundError } from "../core/errors.ts";
import type { RunEvent, RunRecord } from "./contracts.ts";
import { orderedRecord, runRecordProblem } from "./contract_runtime.ts";
import type { DataRoot } from "./data_root.ts";
import { readEvents } from "./event_log.ts";
import { outcomeEvent, recordFromEvents } from "./record_events.ts";
import { ownerState } from "./owner.ts";
import { EVENTS_FILE, exists, RECORD_FILE, shownPath } from "./run_files.ts";

export type RecordFile =
  | { state: "ok"; record: RunRecord }
  | { state: "missing" }
  | { state: "damaged"; reason: string; text: string };

/** run.json as found: a valid record, missing, or damaged with a one-line reason. */
export function readRecordFile(root: DataRoot, runId: string): RecordFile {
  const text = root.readText(root.layout.record(runId));
  if (text === null) return { state: "missing" };
  if (text.trim() === "") {
    return { state: "damaged", reason: `it is empty (${text.length} bytes)`, text };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { state: "damaged", reason: `not JSON: ${(error as Error).message}`, text };
  }
  const problem = runRecordProblem(value);
  if (problem !== null) return { state: "damaged", reason: problem, text };
  const record = value as RunRecord;
  if (record.id !== runId) {
    return {
      state: "damaged",
      reason: `it names run ${JSON.stringify(record.id)}, not this one`,
      text,
    };
  }
  return { state: "ok", record: orderedRecord(record) };
}

/** A record problem as the store reports it: the file and why. */
export interface RecordProblem {
  file: string;
  reason: string;
}

export interface RunInspection {
  record: RunRecord;
  /**
   * True when run.json was missing or damaged and `record` was rebuilt from the events (missing
   * is no problem: a run's record is written when it first changes).
   */
  rebuilt: boolean;
  problems: RecordProblem[];
}

/**
 * The run's record: run.json when it is valid, else the record its events rebuild (reported in
 * `problems`). Throws NotFoundError for no such run, DataRootError when neither file can give one.
 */
export function inspectRun(root: DataRoot, runId: string): RunInspection {
  const file = readRecordFile(root, runId);
  if (file.state === "ok") return { record: file.record, rebuilt: false, problems: [] };
  const { events } = readEvents(root, runId);
  const rebuilt = recordFromEvents(runId, events);
  const where = shownPath(runId, RECORD_FILE);
  const why = file.state === "missing" ? "it is missing" : file.reason;
  if (rebuilt === null) {
    if (file.state === "missing" && !exists(root.layout.run(runId))) {
      throw new NotFoundError(`No run ${runId} in ${root.home}`, {
        hint: "list runs with: reins runs",
      });
    }
    throw new DataRootError(
      `Cannot read ${where}: ${why}, and ${EVENTS_FILE} has no run.started to rebuild it from`,
      { hint: `restore ${where} from a backup, or move runs/${runId} out of the data root` },
    );
  }
  // A run's record is first written when it first changes (its settling, for most): until then
  // the log gives it, and a missing run.json is no damage (one whose writer died first is
  // written by reconciliation, which says so).
  if (file.state === "missing") {
    return {
      record: beforeDurableOutcome(root, runId, events, rebuilt),
      rebuilt: true,
      problems: [],
    };
  }
  return {
    record: rebuilt,
    rebuilt: true,
    problems: [{ file: where, reason: `${why}; rebuilt from ${EVENTS_FILE}` }],
  };
}

/**
 * A record rebuilt from a log whose run.json is not written yet, as run.json would say: the
 * outcome is the record's only once its owner has made the log durable and written it (the
 * owner writes run.json right after the outcome's fdatasync; a record read meanwhile — the index
 * filled from it, say — must not call settled a run whose outcome a power cut could still take
 * back). So while the owner is alive, the record is the log's before its outcome.
 */
function beforeDurableOutcome(
  root: DataRoot,
  runId: string,
  events: readonly RunEvent[],
  rebuilt: RunRecord,
): RunRecord {
  const outcome = outcomeEvent(events);
  if (outcome === null || ownerState(root, runId) !== "alive") return rebuilt;
  return recordFromEvents(runId, events.slice(0, events.indexOf(outcome))) ?? rebuilt;
}

/** The run's record (rebuilt from its events if run.json is damaged). */
export function loadRun(root: DataRoot, runId: string): RunRecord {
  return inspectRun(root, runId).record;
}

/**
 * The records of `runIds` for the index (index_db.ts's RecordReader). A damaged run.json is
 * indexed as its events rebuild it; the file itself is left for reconciliation to repair. A
 * directory with nothing readable yet (a run being created) is skipped: its creator adds its row.
 */
export function recordsForIndex(root: DataRoot, runIds: readonly string[]): RunRecord[] {
  const records: RunRecord[] = [];
  for (const runId of runIds) {
    try {
      records.push(inspectRun(root, runId).record);
    } catch {
      // Unreadable for now: `reins recover` reports it.
    }
  }
  return records;
}
