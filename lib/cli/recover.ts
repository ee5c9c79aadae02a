// `reins recover [--reindex]`: reconciles every run (interrupts those whose process is gone,
// corrects records that disagree with their events, rebuilds damaged ones) and, with --reindex,
// rebuilds index.sqlite from the run files. Every command that reads runs does the cheap part.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { importLazily } from "../core/lazy_import.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins recover [--reindex]";
export const description =
  "Marks interrupted every run whose process is gone before it settled (appending a " +
  "status.changed event) after stopping what its agents left running (each process group checked " +
  "by its start time, also for runs already interrupted), corrects a run.json that disagrees with its events (keeping a copy as " +
  "run.json.before-outcome-repair), rebuilds a damaged run.json from the events and reports " +
  "damaged event lines. Runs whose process is alive are left alone; a run whose files are " +
  "planted links, or could have been written by someone else, is skipped and reported (and " +
  "settled in run.json when that can be written). Creations cut short and temp files killed " +
  "writers left are removed, as every command does at most every 10 minutes for recent runs. " +
  "--reindex also rebuilds " +
  "index.sqlite from the run files.";
export const flags = defineFlags({
  reindex: { type: "boolean", description: "rebuild index.sqlite from runs/*/run.json" },
});
type Flags = typeof flags;

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  if (ctx.positionals.length > 0) {
    throw new UsageError(
      `reins recover takes no arguments: got ${JSON.stringify(ctx.positionals[0])}`,
      { hint: usage },
    );
  }
  using store = openStore(ctx.home, { warn: (message) => ctx.io.warn(message) });
  // What the dead owners' agents left running is stopped with their runs (verified by start
  // time): report.agents says what was found.
  const report = await store.reconcileInterruptedRuns({ reindex: ctx.flags.reindex });
  const { agents } = report;
  const { describeLeftAgent } = await importLazily<typeof import("../store/left_agents.ts")>(
    "store/left_agents.ts",
  );
  if (ctx.io.jsonMode) {
    ctx.io.json(report);
    return 0;
  }
  for (const left of agents) {
    const line = describeLeftAgent(left);
    if (line !== null) ctx.io.note(line);
  }
  for (const problem of report.problems) ctx.io.warn(problem);
  const lines = [
    ...report.interrupted.map((id) => `interrupted       ${id}`),
    ...report.outcomeRepaired.map((id) => `outcome corrected ${id}`),
    ...report.recordRebuilt.map((id) => `record rebuilt    ${id}`),
    ...report.skipped.map((id) => `skipped           ${id}`),
  ];
  if (lines.length > 0) ctx.io.print(lines.join("\n"));
  const summary = [
    `checked ${report.checked} run${report.checked === 1 ? "" : "s"}`,
    `${report.interrupted.length} interrupted`,
    `${report.outcomeRepaired.length + report.recordRebuilt.length} repaired`,
    `${report.live.length} still running`,
  ];
  if (report.skipped.length > 0) summary.push(`${report.skipped.length} skipped (see above)`);
  if (report.removed > 0) summary.push(`${report.removed} empty removed`);
  if (report.removedTemps > 0) {
    summary.push(
      `${report.removedTemps} left temp file${report.removedTemps === 1 ? "" : "s"} removed`,
    );
  }
  if (report.reindexed !== null) summary.push(`index rebuilt with ${report.reindexed} runs`);
  ctx.io.note(summary.join(", "));
  return 0;
}
