// Shards: a suite spread over machines by a scheduler people already have (a Kubernetes Indexed
// Job, a CI matrix). `suite plan` writes a plan file — the scenarios in order, the shard of each
// (round robin, so neighbours in the file land on different machines) and, when reporting, the
// platform call allocated to each. `suite run --plan --shard I/N` runs one slice; `suite merge`
// puts the slices' results back together and says which are missing or doubled.
import { z } from "zod";
import { NotFoundError, UsageError } from "../core/errors.ts";
import type { Env } from "../core/mod.ts";
import { Instance, type ScenarioState, type SuiteRunFile } from "./state.ts";

export const PLAN_TYPE = "reins.suite-plan";

export const PlannedInstance = Instance.extend({
  /** 1-based. */
  shard: z.number().int().positive(),
  /** The platform's call for it, when the plan was reported. */
  callExecutionId: z.string().nullable(),
}).strict();
export type PlannedInstance = z.infer<typeof PlannedInstance>;

export const PlanPlatform = z.object({
  baseUrl: z.string(),
  workspaceId: z.string().nullable(),
  name: z.string(),
  runTestId: z.string(),
  testExecutionId: z.string(),
  url: z.string(),
}).strict();
export type PlanPlatform = z.infer<typeof PlanPlatform>;

/**
 * A matrix's execution on the platform, allocated by `suite plan`: each agent a test of its own,
 * each epoch an execution of it (docs/platform.md), so a plan of a matrix holds one per agent and
 * epoch, and every shard reports its cells of that agent and epoch into it.
 */
export const PlanExecution = PlanPlatform.extend({
  agent: z.string(),
  epoch: z.number().int().positive(),
}).strict();
export type PlanExecution = z.infer<typeof PlanExecution>;

export const PlanFile = z.object({
  type: z.literal(PLAN_TYPE),
  version: z.literal(1),
  id: z.string(),
  suite: z.string(),
  /** sha256 of the suite file the plan was made from: every shard must run the same file. */
  digest: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
  shards: z.number().int().positive(),
  repeat: z.number().int().positive(),
  /** The agents planned (a matrix), or null. */
  agents: z.array(z.string()).nullable().default(null),
  filter: z.string().nullable(),
  instances: z.array(PlannedInstance),
  /** Where a plan that is not of a matrix reports; null for a matrix (see executions). */
  platform: PlanPlatform.nullable(),
  /** A matrix's executions, one per agent and epoch, when it was reported; else null. */
  executions: z.array(PlanExecution).nullable().default(null),
}).strict();
export type PlanFile = z.infer<typeof PlanFile>;

/** Which shard each instance goes to: round robin over the suite's order. */
export function assignShards(
  instances: readonly Instance[],
  shards: number,
): (Instance & { shard: number })[] {
  return instances.map((instance, i) => ({ ...instance, shard: (i % shards) + 1 }));
}

/**
 * What makes a plan unusable with the suite it was made from (its digest matched): its instances
 * must be exactly the suite's scenarios for the plan's filter and repeat, each where the suite
 * has it, each once (so in exactly one shard), each in a shard 1..N, no two sharing a platform
 * call. `expected` is instancesOf(suite, the plan's filter and repeat). Each problem names its
 * place in the plan (`instances[3].key`); none: an empty list.
 */
export function planProblems(plan: PlanFile, expected: readonly Instance[]): string[] {
  const problems: string[] = [];
  const wanted = new Map(expected.map((instance) => [instance.id, instance]));
  const seen = new Map<string, number>();
  const calls = new Map<string, number>();
  plan.instances.forEach((instance, i) => {
    const at = `instances[${i}]`;
    const id = JSON.stringify(instance.id);
    if (instance.shard > plan.shards) {
      problems.push(
        `${at}.shard: ${instance.shard} is not one of the plan's shards (1 to ${plan.shards})`,
      );
    }
    const earlier = seen.get(instance.id);
    if (earlier !== undefined) {
      problems.push(`${at}.id: ${id} is also instances[${earlier}] (two shards would run it)`);
      return;
    }
    seen.set(instance.id, i);
    if (instance.callExecutionId !== null) {
      const shared = calls.get(instance.callExecutionId);
      if (shared !== undefined) {
        problems.push(`${at}.callExecutionId: is also instances[${shared}]'s`);
      }
      calls.set(instance.callExecutionId, i);
    }
    const mine = wanted.get(instance.id);
    if (mine === undefined) {
      problems.push(`${at}.id: ${id} is not one of the suite's scenarios as planned`);
      return;
    }
    for (const field of ["key", "repeat", "agent", "index"] as const) {
      if (instance[field] !== mine[field]) {
        problems.push(
          `${at}.${field}: ${JSON.stringify(instance[field])}, but the suite's ${id} has ${
            JSON.stringify(mine[field])
          }`,
        );
      }
    }
  });
  for (const instance of expected) {
    if (!seen.has(instance.id)) {
      problems.push(`instances: ${JSON.stringify(instance.id)} is missing (no shard would run it)`);
    }
  }
  problems.push(...executionProblems(plan));
  return problems;
}

/**
 * A matrix's executions: one per agent and epoch, none shared, one for every reported cell (else
 * a shard would put a cell's result into another agent's or epoch's execution, or into none).
 */
function executionProblems(plan: PlanFile): string[] {
  const problems: string[] = [];
  if (plan.agents === null && plan.executions !== null) {
    problems.push("executions: a plan without agents reports through its platform");
  }
  if (plan.agents !== null && plan.platform !== null) {
    problems.push(
      "platform: a plan of a matrix reports through its executions, one per agent and epoch",
    );
  }
  if (plan.executions === null) return problems;
  const groups = new Map<string, number>();
  const runs = new Map<string, number>();
  plan.executions.forEach((execution, i) => {
    const at = `executions[${i}]`;
    const group = `${execution.agent}.${execution.epoch}`;
    const earlier = groups.get(group);
    if (earlier !== undefined) {
      problems.push(
        `${at}: agent ${
          JSON.stringify(execution.agent)
        }, epoch ${execution.epoch} is also executions[${earlier}]`,
      );
    } else groups.set(group, i);
    const shared = runs.get(execution.testExecutionId);
    if (shared !== undefined) {
      problems.push(`${at}.testExecutionId: is also executions[${shared}]'s`);
    } else runs.set(execution.testExecutionId, i);
  });
  plan.instances.forEach((instance, i) => {
    if (instance.callExecutionId === null) return;
    if (!groups.has(`${instance.agent}.${instance.repeat}`)) {
      problems.push(
        `instances[${i}].callExecutionId: no execution of agent ${
          JSON.stringify(instance.agent)
        }, epoch ${instance.repeat} holds it`,
      );
    }
  });
  return problems;
}

export function planSlice(plan: PlanFile, shard: number): PlannedInstance[] {
  return plan.instances.filter((instance) => instance.shard === shard);
}

/** `2/3` → {index: 2, count: 3}; both 1-based. */
export function parseShard(text: string, what = "--shard"): { index: number; count: number } {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = match ? Number(match[1]) : NaN;
  const count = match ? Number(match[2]) : NaN;
  if (!match || count < 1 || index < 1 || index > count) {
    throw new UsageError(`${what} takes I/N with 1 ≤ I ≤ N: got ${JSON.stringify(text)}`, {
      hint: "e.g. --shard 2/3 runs the second of three shards",
    });
  }
  return { index, count };
}

/**
 * The shard to run when --shard is not given: REINS_SHARD (`I/N`, 1-based, as --shard), else
 * JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's 0-based index) with N from the plan.
 */
export function shardFromEnv(env: Env, count: number): { index: number; count: number } | null {
  if (env.REINS_SHARD) return parseShard(env.REINS_SHARD, "REINS_SHARD");
  const raw = env.JOB_COMPLETION_INDEX;
  if (raw === undefined || raw === "") return null;
  if (!/^\d+$/.test(raw) || Number(raw) >= count) {
    throw new UsageError(
      `JOB_COMPLETION_INDEX must be a whole number below the plan's ${count} shards: got ${
        JSON.stringify(raw)
      }`,
      { hint: "set completions and parallelism of the Indexed Job to the plan's shard count" },
    );
  }
  return { index: Number(raw) + 1, count };
}

export interface ShardRun {
  header: SuiteRunFile;
  states: ScenarioState[];
  /** Where it was read from, for messages. */
  source: string;
}

export interface Merged {
  suite: string;
  planId: string;
  shards: number;
  /** Every instance's state, in the plan's order. */
  states: ScenarioState[];
  missingShards: number[];
  /** Problems to tell: a shard given twice, a suite run of another plan. */
  problems: string[];
}

/** Puts the shards of one plan together; refuses runs of different plans. */
export function mergeShards(runs: readonly ShardRun[]): Merged {
  const planned = runs.filter((run) => run.header.options.shard !== null);
  if (planned.length === 0) {
    throw new UsageError("None of the directories holds a suite run of a plan", {
      hint: "merge the suite runs made by reins suite run --plan FILE --shard I/N",
    });
  }
  const plans = new Set(planned.map((run) => run.header.options.shard!.planId));
  if (plans.size > 1) {
    throw new UsageError(`The suite runs belong to ${plans.size} different plans`, {
      hint: "merge the shards of one plan at a time",
    });
  }
  const first = planned[0].header.options.shard!;
  const problems: string[] = [];
  for (const run of runs) {
    if (run.header.options.shard === null) {
      problems.push(`${run.source} is not a shard of a plan: left out`);
    }
  }
  // A shard resumed or run twice: the later suite run's finished scenarios win.
  const byShard = new Map<number, ShardRun>();
  for (
    const run of planned.toSorted((a, b) => a.header.createdAt.localeCompare(b.header.createdAt))
  ) {
    const index = run.header.options.shard!.index;
    const earlier = byShard.get(index);
    if (earlier) {
      problems.push(
        `shard ${index}/${first.count} was given twice (${earlier.source} and ${run.source}): the later one counts`,
      );
    }
    byShard.set(index, run);
  }
  const missingShards: number[] = [];
  for (let index = 1; index <= first.count; index++) {
    if (!byShard.has(index)) missingShards.push(index);
  }
  const states = [...byShard.values()].flatMap((run) => run.states);
  // The plan's order: scenario, agent (by the order the plan names them), epoch.
  const agentOrder = new Map(
    planned[0].header.options.agents?.map((name, i) => [name, i]) ?? [],
  );
  const agentRank = (state: ScenarioState) => agentOrder.get(state.instance.agent ?? "") ?? 0;
  states.sort((a, b) =>
    a.instance.index - b.instance.index || agentRank(a) - agentRank(b) ||
    a.instance.repeat - b.instance.repeat
  );
  return {
    suite: planned[0].header.suite,
    planId: first.planId,
    shards: first.count,
    states,
    missingShards,
    problems,
  };
}

/** Reads and checks a plan file. */
export async function readPlan(path: string): Promise<PlanFile> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`No plan file ${path}`, {
        hint: "make one with: reins suite plan FILE --shards N --out PLAN",
      });
    }
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `Cannot read the plan ${path}: it is not JSON (${(error as Error).message})`,
    );
  }
  const parsed = PlanFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(
      `Cannot use the plan ${path}: ${issue.message} at ${issue.path.join(".") || "(top)"}`,
      { hint: "make it again with: reins suite plan FILE --shards N --out PLAN" },
    );
  }
  return parsed.data;
}

/** Writes a plan file (it travels to other machines: plain JSON, no secrets in it). */
export async function writePlan(path: string, plan: PlanFile): Promise<void> {
  const temp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  await Deno.writeTextFile(temp, `${JSON.stringify(plan, null, 2)}\n`);
  await Deno.rename(temp, path);
}
