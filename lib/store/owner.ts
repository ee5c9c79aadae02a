// Whether a run's owner is alive: the process running a run holds its owner lock (flock,
// exclusive) for its life, and the OS drops it when that process dies. Imports nothing that
// imports the index, so that reading a record (run_record.ts, which the index loads) may ask.
import type { DataRoot } from "./data_root.ts";
import { exists } from "./run_files.ts";

/** `alive`: a process holds the run's owner lock; `gone`: nobody does; `no-run`: no such run. */
export type OwnerState = "alive" | "gone" | "no-run";

export function ownerState(root: DataRoot, runId: string): OwnerState {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(root.layout.ownerLock(runId), { read: true });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return exists(root.layout.run(runId)) ? "gone" : "no-run";
  }
  try {
    // flock conflicts between open files, even in one process: a writer here counts as alive.
    if (!file.tryLockSync(true)) return "alive";
    file.unlockSync();
    return "gone";
  } finally {
    file.close();
  }
}
