// The snapshot a turn takes of its working directory before its agent starts (the engine's
// turn start calls it). A snapshot is evidence for a replay, not part of the run: whatever goes
// wrong taking it is one warning, and the run goes on.
import { describeError } from "../core/errors.ts";
import type { Settings } from "../core/config.ts";
import { type SnapshotSummary, takeSnapshot } from "./take.ts";

export async function snapshotAtRunStart(
  home: string,
  runId: string,
  cwd: string,
  settings: Pick<Settings, "snapshot">,
  warn: (message: string) => void = () => {},
): Promise<SnapshotSummary | null> {
  try {
    return await takeSnapshot(home, runId, cwd, settings.snapshot);
  } catch (error) {
    warn(
      `no snapshot of ${cwd} for run ${runId} (a replay will use a copy): ${describeError(error)}`,
    );
    return null;
  }
}
