// `reins stats [RUN ...] [--family]`: what runs did and cost — events, model and tool calls,
// iterations, tokens, cost, duration — per run and in total. Without RUN, every run of the data
// root (newest first, up to 10,000). --family widens each RUN to its family (the root it descends
// from through parentRunId, and every run below that root) and sums each family; without RUN,
// every family. --context ID sums a conversation's turns (each its own family: a turn on a context
// has no parent run), oldest first.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { safeName } from "../core/ids.ts";
import type { RunRecord } from "../store/mod.ts";
import { MAX_LIMIT } from "../store/list.ts";
import { EVENTS_FILE, shownPath } from "../store/run_files.ts";
import { openStore } from "../store/store.ts";
import {
  formatStatsTable,
  type RunStats,
  runStats,
  type StatsRow,
  type StatsTotal,
  sumStats,
  unpricedNote,
} from "../session/stats.ts";

export const usage = "reins stats [RUN ...] [--family] | reins stats --context ID";
export const description =
  "Sums what runs did: events, model calls, tool calls, iterations, input/output/cache tokens, " +
  "cost and duration, per run and in total. RUN is an id, a unique prefix of one, or `last`; " +
  "without RUN, every run (newest first, at most 10000). --family takes each run's whole family " +
  "(its root parent and every run below it) and sums each family (without RUN: every family). " +
  "--context ID sums the turns of one context (a conversation), oldest first. --json prints {runs, total} " +
  "(and families with --family). Tokens, cost and model calls are null where no run reported " +
  "them (Codex and Gemini CLI report no count of model calls: modelCallsSource says where a " +
  "count comes from, events or reported); a model nothing prices is named once.";
export const flags = defineFlags({
  family: { type: "boolean", description: "each run's parent and children too, summed per family" },
  context: { type: "string", value: "ID", description: "the turns of this context, summed" },
});
type Flags = typeof flags;

export interface FamilyStats {
  rootRunId: string;
  runIds: string[];
  total: StatsTotal;
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  try {
    return await printStats(ctx);
  } catch (error) {
    // `reins stats | head`: the reader has what it wanted.
    if (error instanceof Deno.errors.BrokenPipe) return 0;
    throw error;
  }
}

async function printStats(ctx: CommandContext<Flags>): Promise<number> {
  const { io } = ctx;
  using store = openStore(ctx.home, { warn: (message) => io.warn(message) });
  await store.reconcileCheaply();
  const stats = new Map<string, RunStats>();
  const statsOf = (record: RunRecord): RunStats => {
    let found = stats.get(record.id);
    if (found === undefined) {
      const read = store.readEvents(record.id);
      const skipped = read.problems.length + (read.tornLine === null ? 0 : 1);
      if (skipped > 0) {
        io.warn(
          `${shownPath(record.id, EVENTS_FILE)}: ${skipped} damaged line${
            skipped === 1 ? "" : "s"
          } not counted (see reins show ${record.id})`,
        );
      }
      found = runStats(record, read.events);
      stats.set(record.id, found);
    }
    return found;
  };

  const refs = ctx.positionals;
  if (ctx.flags.context !== undefined) {
    if (refs.length > 0 || ctx.flags.family) {
      throw new UsageError("--context takes no RUN and does not go with --family", {
        hint: "reins stats --context ID sums that context's turns",
      });
    }
    // As reins run --context takes it: a name that cannot be a context is exit 2, not "no runs".
    const contextId = safeName(ctx.flags.context, "context id");
    const runs = store.listRuns({ contextId, limit: MAX_LIMIT }).reverse().map(statsOf);
    if (runs.length === 0) {
      throw new NotFoundError(`No runs on context ${JSON.stringify(contextId)}`, {
        hint: "reins contexts lists the contexts; reins runs --context ID their turns",
      });
    }
    if (runs.length === MAX_LIMIT) {
      io.warn(`only the newest ${MAX_LIMIT} turns of context ${contextId} are counted`);
    }
    const total = sumStats(runs);
    if (io.jsonMode) {
      io.json({ runs, total, context: { contextId, runIds: runs.map((r) => r.runId), total } });
      return 0;
    }
    const rows: (StatsRow & { rule?: boolean })[] = runs.map((run) => ({
      label: run.runId,
      status: run.status,
      stats: run,
    }));
    rows.push({
      label: `context ${contextId} (${runs.length} ${runs.length === 1 ? "turn" : "turns"})`,
      status: "",
      stats: total,
      rule: true,
    });
    io.print(formatStatsTable(rows));
    noteUnpriced(ctx, runs);
    return 0;
  }
  if (ctx.flags.family) {
    const families: { family: FamilyStats; runs: RunStats[] }[] = [];
    // Without RUN, every run's family (each once), as without --family every run is counted.
    let ids: string[];
    if (refs.length > 0) {
      ids = refs.map((ref) => store.resolveRun(ref).id);
    } else {
      ids = store.listRuns({ limit: MAX_LIMIT }).map((record) => record.id);
      if (ids.length === MAX_LIMIT) {
        io.warn(
          `only the families of the newest ${MAX_LIMIT} runs are counted: name runs to count others`,
        );
      }
    }
    const counted = new Set<string>();
    for (const id of ids) {
      if (counted.has(id)) continue;
      const family = store.runFamily(id);
      for (const { record } of family.runs) counted.add(record.id);
      if (families.some(({ family: seen }) => seen.rootRunId === family.rootRunId)) continue;
      const runs = family.runs.map(({ record }) => statsOf(record));
      families.push({
        family: {
          rootRunId: family.rootRunId,
          runIds: runs.map((s) => s.runId),
          total: sumStats(runs),
        },
        runs,
      });
    }
    const all = families.flatMap(({ runs }) => runs);
    const total = sumStats(all);
    if (io.jsonMode) {
      io.json({ runs: all, total, families: families.map(({ family }) => family) });
      return 0;
    }
    const rows: (StatsRow & { rule?: boolean })[] = [];
    for (const { family, runs } of families) {
      const depth = depths(runs);
      for (const run of runs) {
        rows.push({
          label: `${"  ".repeat(depth.get(run.runId) ?? 0)}${run.runId}`,
          status: run.status,
          stats: run,
        });
      }
      rows.push({
        label: `family of ${family.rootRunId} (${family.runIds.length} ${
          family.runIds.length === 1 ? "run" : "runs"
        })`,
        status: "",
        stats: family.total,
        rule: true,
      });
    }
    if (families.length > 1) {
      rows.push({ label: `total (${total.runs} runs)`, status: "", stats: total, rule: true });
    }
    io.print(formatStatsTable(rows));
    noteUnpriced(ctx, all);
    return 0;
  }

  const records = refs.length > 0
    ? unique(refs.map((ref) => store.resolveRun(ref)))
    : store.listRuns({ limit: MAX_LIMIT });
  if (refs.length === 0 && records.length === MAX_LIMIT) {
    io.warn(`only the newest ${MAX_LIMIT} runs are counted: name runs to count others`);
  }
  const runs = records.map(statsOf);
  const total = sumStats(runs);
  if (io.jsonMode) {
    io.json({ runs, total });
    return 0;
  }
  if (runs.length === 0) {
    io.note("No runs yet: start one with reins run PROMPT");
    return 0;
  }
  const rows: (StatsRow & { rule?: boolean })[] = runs.map((run) => ({
    label: run.runId,
    status: run.status,
    stats: run,
  }));
  if (runs.length > 1) {
    rows.push({ label: `total (${runs.length} runs)`, status: "", stats: total, rule: true });
  }
  io.print(formatStatsTable(rows));
  noteUnpriced(ctx, runs);
  return 0;
}

/** Says once per model why the cost of its runs is "-" (nothing priced it). */
function noteUnpriced(ctx: CommandContext<Flags>, runs: readonly RunStats[]): void {
  const byModel = new Map<string, number>();
  for (const run of runs) {
    if (run.unpricedModel !== null) {
      byModel.set(run.unpricedModel, (byModel.get(run.unpricedModel) ?? 0) + 1);
    }
  }
  for (const [model, count] of byModel) {
    ctx.io.note(
      `reins: the cost of ${count} run${count === 1 ? "" : "s"} is unknown: ${unpricedNote(model)}`,
    );
  }
}

function unique(records: RunRecord[]): RunRecord[] {
  const seen = new Set<string>();
  return records.filter((record) => !seen.has(record.id) && seen.add(record.id) !== undefined);
}

/** How deep each run sits below its family's root, for indenting the table. */
function depths(runs: readonly RunStats[]): Map<string, number> {
  const parentOf = new Map(runs.map((run) => [run.runId, run.parentRunId]));
  const depth = new Map<string, number>();
  for (const run of runs) {
    let d = 0;
    let parent = run.parentRunId;
    const seen = new Set([run.runId]);
    while (parent !== null && parentOf.has(parent) && !seen.has(parent)) {
      seen.add(parent);
      d++;
      parent = parentOf.get(parent) ?? null;
    }
    depth.set(run.runId, d);
  }
  return depth;
}
