// Reading run records for the index, loaded by the zod-free paths only when the index lacks rows
// (it costs zod). A damaged run.json is indexed as its events rebuild it; the file itself is left
// for reconciliation to repair. A directory with nothing readable yet (a run being created) is
// skipped: its creator adds its row.
import type { RunRecord } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";
import { openIndexSync, type RunIndex } from "./index_db.ts";
import { inspectRun } from "./run_record.ts";

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

/** The data root's index, refreshed; null when the data root does not exist. */
export function storeIndex(root: DataRoot): RunIndex | null {
  return openIndexSync(root, recordsForIndex);
}
