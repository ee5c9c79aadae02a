// Whether a run's owner is alive, and the cheap reconciliation every command that reads runs does
// first: only the runs the index holds as active are looked at, and only their owner locks are
// tried. The repair itself (which needs zod) is loaded only when an owner is found gone. What
// killed processes left besides (creations cut short, temp files) is swept at most every
// SWEEP_EVERY_MS (lib/store/leftovers.ts, loaded only then).
import { describeError, isDiskFull } from "../core/errors.ts";
import { importLazily } from "../core/lazy_import.ts";
import type { DataRoot } from "./data_root.ts";
import type { LeftAgent } from "./left_agents.ts";
import { ownerState } from "./owner.ts";
import { openIndex, SWEPT_META_KEY } from "./index_db.ts";

export { type OwnerState, ownerState } from "./owner.ts";

/** How often the cheap reconciliation sweeps leftovers (see lib/store/leftovers.ts). */
export const SWEEP_EVERY_MS = 10 * 60_000;

/** Says what reconciliation did about agents a dead owner left running (nothing when none). */
export async function warnLeftAgents(
  root: DataRoot,
  agents: readonly LeftAgent[],
): Promise<void> {
  if (agents.length === 0) return;
  const { describeLeftAgent } = await importLazily<typeof import("./left_agents.ts")>(
    "store/left_agents.ts",
  );
  for (const left of agents) {
    const line = describeLeftAgent(left);
    if (line !== null) root.warn(line);
  }
}

/**
 * Marks interrupted the active runs whose owner is gone. Returns the ids it interrupted or
 * repaired. Costs a query and one lock attempt per active run when there is nothing to do.
 */
export async function reconcileCheaply(root: DataRoot): Promise<string[]> {
  const index = await openIndex(root);
  if (index === null) return [];
  const nowMs = Date.now();
  const sweptMs = Number(index.getMeta(SWEPT_META_KEY) ?? 0);
  if (!(nowMs - sweptMs < SWEEP_EVERY_MS && sweptMs <= nowMs)) {
    const { sweepLeftovers } = await importLazily<typeof import("./leftovers.ts")>(
      "store/leftovers.ts",
    );
    try {
      sweepLeftovers(root, index, nowMs);
    } catch (error) {
      // Housekeeping: the command goes on (the sweep noted itself first, so this is not said
      // again by every command that follows).
      root.warn(`leftovers of killed processes were not swept: ${describeError(error)}`);
    }
  }
  const gone: string[] = [];
  for (const id of index.activeIds()) {
    const state = ownerState(root, id);
    if (state === "no-run") index.remove(id);
    else if (state === "gone") gone.push(id);
  }
  if (gone.length === 0) return [];
  const { reconcileRun } = await importLazily<typeof import("./reconcile.ts")>(
    "store/reconcile.ts",
  );
  const changed: string[] = [];
  let full = false;
  for (const id of gone) {
    // What a killed reins left running goes too (its group, verified by start time): said here.
    let result;
    try {
      result = await reconcileRun(root, id);
    } catch (error) {
      // A full disk does not stop a command that reads: the run is settled once reins can write.
      if (!isDiskFull(error)) throw error;
      if (!full) {
        root.warn(
          `run ${id} is not yet marked interrupted (its process is gone): ${
            describeError(error)
          }; free space under ${root.home}, then reins recover`,
        );
      }
      full = true;
      continue;
    }
    if (result.interrupted || result.outcomeRepaired || result.recordRebuilt) changed.push(id);
    await warnLeftAgents(root, result.agents);
  }
  return changed;
}
