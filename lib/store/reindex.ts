// The data root's index, refreshed, for the store's synchronous readers (lookup, families,
// Store.index()): a row it lacks is read with run_record.ts, loaded with them. The zod-free
// paths open it with openIndex (index_db.ts), which loads that reader only when it needs it.
import type { DataRoot } from "./data_root.ts";
import { openIndexSync, type RunIndex } from "./index_db.ts";
import { recordsForIndex } from "./run_record.ts";

/** The data root's index, refreshed; null when the data root does not exist. */
export function storeIndex(root: DataRoot): RunIndex | null {
  return openIndexSync(root, recordsForIndex);
}
