// `reins suite plan FILE --shards N --out PLAN` and `reins suite merge DIR...`. plan: the suite's
// scenarios split into N round-robin shards, with the platform's calls allocated once for all of
// them when reporting; merge: the shards' suite runs put back together as one table, JUnit and
// exit code, saying which shards are missing.
import { importLazily } from "../core/lazy_import.ts";
import { nowIso } from "../core/clock.ts";
import { epochsOf, type SuiteContext } from "./suite_flags.ts";
import { ExitCode, PlatformError, UsageError } from "../core/errors.ts";
import { joinPath, resolvePath } from "../core/paths.ts";
import { newId } from "../core/ids.ts";
import { instancesOf, selectedAgents } from "../suite/start.ts";
import {
  assignShards,
  mergeShards,
  type PlanExecution,
  type PlanFile,
  type PlanPlatform,
  type ShardRun,
  writePlan,
} from "../suite/plan.ts";
import { type Instance, readScenarioStates, readSuiteRunAt } from "../suite/state.ts";
import { DataRoot } from "../store/data_root.ts";
import type { Suite } from "../suite/mod.ts";
import { exitCodeOf, formatTable, totalsOf } from "../suite/table.ts";
import { writeJunitFile } from "../suite/junit.ts";
import { scenarioJson } from "../suite/json.ts";
import { loadOrExplain } from "./suite_output.ts";

export async function suitePlan(ctx: SuiteContext): Promise<number> {
  const [path, ...extra] = ctx.positionals;
  if (path === undefined || extra.length > 0) {
    throw new UsageError("reins suite plan takes one suite file", {
      hint: "reins suite plan FILE --shards N --out PLAN",
    });
  }
  const shards = ctx.flags.shards;
  const out = ctx.flags.out;
  if (shards === undefined) throw new UsageError("reins suite plan needs --shards N");
  if (out === undefined) {
    throw new UsageError("reins suite plan needs --out FILE (where the plan goes)");
  }
  const loaded = await loadOrExplain(ctx.io, path);
  if ("exit" in loaded) return loaded.exit;
  const filter = ctx.flags.filter ?? null;
  const repeat = epochsOf(ctx.flags, loaded.epochs);
  const agents = selectedAgents(loaded, ctx.flags.agent);
  const instances = instancesOf(loaded, { filter, repeat, agents }).map(({ name: _, ...bare }) =>
    bare
  );
  const allocated = ctx.flags["no-report"] ? null : await allocateCalls(ctx, loaded, instances);
  const plan: PlanFile = {
    type: "reins.suite-plan",
    version: 1,
    id: newId(),
    suite: loaded.name,
    digest: loaded.digest,
    createdAt: nowIso(),
    shards,
    repeat,
    agents,
    filter,
    instances: assignShards(instances, shards).map((instance) => ({
      ...instance,
      callExecutionId: allocated?.calls.get(instance.id) ?? null,
    })),
    platform: allocated?.platform ?? null,
    executions: allocated?.executions ?? null,
  };
  const target = resolvePath(out);
  await writePlan(target, plan);
  if (ctx.io.jsonMode) {
    ctx.io.json({
      plan: target,
      id: plan.id,
      shards,
      scenarios: plan.instances.length,
      platform: plan.platform,
      executions: plan.executions,
    });
  } else {
    ctx.io.print(
      `${target}: plan ${plan.id}: ${plan.instances.length} scenarios in ${shards} shard${
        shards === 1 ? "" : "s"
      }`,
    );
    if (plan.platform) ctx.io.note(`reported to the platform: ${plan.platform.url}`);
    for (const one of plan.executions ?? []) {
      ctx.io.note(`${one.agent}, epoch ${one.epoch}: reported to the platform: ${one.url}`);
    }
    ctx.io.note(`run each with: reins suite run ${path} --plan ${out} --shard I/${shards}`);
  }
  return ExitCode.ok;
}

/**
 * Provisions, starts and allocates a call for every planned scenario (skipped ones aside), when
 * the platform is configured (a matrix: each agent's test and each epoch's execution); a line says
 * why not otherwise. A platform that cannot do it is exit 5: shards without their calls would each
 * report on their own.
 */
async function allocateCalls(
  ctx: SuiteContext,
  suite: Suite,
  instances: readonly Instance[],
): Promise<
  {
    platform: PlanPlatform | null;
    executions: PlanExecution[] | null;
    calls: Map<string, string>;
  } | null
> {
  const settings = await ctx.settings();
  const { notConfiguredReason, platformTarget } = await importLazily<
    typeof import("../platform/client.ts")
  >("platform/client.ts");
  const missing = notConfiguredReason(settings.platform);
  if (missing) {
    if (!ctx.io.quiet && !ctx.io.jsonMode) {
      ctx.io.note(`not reported to the platform: ${missing} (--no-report leaves this line out)`);
    }
    return null;
  }
  const target = platformTarget(settings.platform);
  const skipped = new Set(suite.scenarios.filter((spec) => spec.skip !== null).map((s) => s.index));
  const reported = instances.filter((instance) => !skipped.has(instance.index));
  if (reported.length === 0) return null;
  const { allocatePlan, PlanNotAllocated } = await importLazily<
    typeof import("../suite/report.ts")
  >("suite/report.ts");
  using root = new DataRoot(ctx.home);
  const given = { root, settings, target, suite, instances: reported };
  try {
    if (suite.agents !== null) {
      // Each agent a test, each epoch an execution of it (docs/platform.md), as unsharded.
      const { allocateMatrixPlan } = await importLazily<
        typeof import("../suite/matrix_report.ts")
      >("suite/matrix_report.ts");
      const { executions, calls } = await allocateMatrixPlan(given);
      return { platform: null, executions, calls };
    }
    const { platform, callExecutionIds } = await allocatePlan(given);
    return {
      platform,
      executions: null,
      calls: new Map(reported.map((instance, i) => [instance.id, callExecutionIds[i]])),
    };
  } catch (error) {
    if (!(error instanceof PlanNotAllocated)) throw error;
    throw new PlatformError(
      `Cannot plan: the platform did not allocate the calls: ${error.message}`,
      {
        hint: error.hint ??
          "try again once the platform is reachable, or plan with --no-report (the shards then report nothing)",
      },
    );
  }
}

/** The shard suite runs in a directory: a suite run's folder, or a data root's suites. */
function shardRunsIn(dir: string): ShardRun[] {
  const absolute = resolvePath(dir);
  const isSuiteRun = (() => {
    try {
      return Deno.statSync(joinPath(absolute, "suite-run.json")).isFile;
    } catch {
      return false;
    }
  })();
  const folders: string[] = [];
  if (isSuiteRun) {
    folders.push(absolute);
  } else {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(joinPath(absolute, "suites"))];
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        throw new UsageError(
          `${dir} is neither a suite run's folder nor a data root with suites/`,
          {
            hint: "give the suites/<id> folders of the shards (or their data roots)",
          },
        );
      }
      throw error;
    }
    for (
      const entry of entries.filter((e) => e.isDirectory).sort((a, b) =>
        a.name.localeCompare(b.name)
      )
    ) {
      folders.push(joinPath(absolute, "suites", entry.name));
    }
  }
  const runs: ShardRun[] = [];
  for (const folder of folders) {
    // A shard's folder may come from another machine: it is read as a root of its own.
    using root = new DataRoot(folder);
    const header = readSuiteRunAt(root, folder, folder);
    if (!isSuiteRun && header.options.shard === null) continue;
    runs.push({ header, states: readScenarioStates(root, header, folder), source: folder });
  }
  return runs;
}

export async function suiteMerge(ctx: SuiteContext): Promise<number> {
  if (ctx.positionals.length === 0) {
    throw new UsageError("reins suite merge needs the shards' folders", {
      hint: "reins suite merge DIR... (suites/<id> folders, or data roots)",
    });
  }
  const runs = ctx.positionals.flatMap(shardRunsIn);
  const merged = mergeShards(runs);
  const junit = ctx.flags.junit;
  if (junit) await writeJunitFile(junit, merged.suite, merged.states, {});
  const totals = totalsOf(merged.states);
  if (ctx.io.jsonMode) {
    ctx.io.json({
      suite: merged.suite,
      planId: merged.planId,
      shards: merged.shards,
      missingShards: merged.missingShards,
      problems: merged.problems,
      totals,
      scenarios: merged.states.map(scenarioJson),
    });
  } else {
    for (const problem of merged.problems) ctx.io.warn(problem);
    for (const line of formatTable(merged.states)) ctx.io.print(line);
  }
  if (merged.missingShards.length > 0) {
    ctx.io.warn(
      `shard${merged.missingShards.length === 1 ? "" : "s"} ${
        merged.missingShards.map((i) => `${i}/${merged.shards}`).join(", ")
      } missing: ${
        merged.missingShards.length === 1 ? "its" : "their"
      } scenarios are not in the table`,
    );
    return ExitCode.runFailed;
  }
  return exitCodeOf(totals);
}
