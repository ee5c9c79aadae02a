// The snapshot a turn takes of its working directory before its agent starts (the engine's
// turn start calls it). A snapshot is evidence for a replay, not part of the run: whatever goes
// wrong taking it is one warning, and the run goes on.
import { describeError } from "../core/errors.ts";
import type { Settings } from "../core/mod.ts";
import type { DataRoot } from "../store/mod.ts";
import { type SnapshotSummary, startSnapshot } from "./take.ts";

export interface RunStartSnapshot {
  /** What was read (null when no snapshot could be taken). */
  summary: SnapshotSummary | null;
  /**
   * Settles once the snapshot is on disk, or given up with a warning: never rejects. The turn
   * awaits it before it settles, so a finished run has its snapshot written (or a warning).
   */
  written: Promise<void>;
}

/** `what` left out `count` names that are not UTF-8: said, since a replay will not have them. */
export function nonUtf8Note(count: number, what: string): string {
  return `${what} leaves out ${count} ${
    count === 1 ? "file whose name is" : "files whose names are"
  } not UTF-8 (reins cannot name ${count === 1 ? "it" : "them"}); a replay will not have ${
    count === 1 ? "it" : "them"
  }: rename ${count === 1 ? "it" : "them"} to keep ${count === 1 ? "it" : "them"}`;
}

/** Reads the snapshot; returns once every file is read, while it is still being written. */
export async function snapshotAtRunStart(
  root: DataRoot,
  runId: string,
  cwd: string,
  settings: Pick<Settings, "snapshot">,
  warn: (message: string) => void = () => {},
): Promise<RunStartSnapshot> {
  const lost = (error: unknown) =>
    warn(
      `no snapshot of ${cwd} for run ${runId} (a replay will use a copy): ${describeError(error)}`,
    );
  try {
    const started = await startSnapshot(root, runId, cwd, settings.snapshot);
    const unnamed = started.summary.nonUtf8Names;
    if (unnamed > 0) warn(nonUtf8Note(unnamed, `the snapshot of ${cwd} for run ${runId}`));
    return { summary: started.summary, written: started.written.catch(lost) };
  } catch (error) {
    lost(error);
    return { summary: null, written: Promise.resolve() };
  }
}
