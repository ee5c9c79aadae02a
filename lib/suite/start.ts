// Which suite run to drive and what is left in it: a fresh one (the file's scenarios, filtered and
// repeated), a resume of one cut short (only what did not finish; finished results stay as they
// are), a rerun of another's failures or errors (a new suite run linked to it), or one shard of a
// plan. Everything here is checked before anything runs.
import { NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { nearest } from "../core/suggest.ts";
import type { DataRoot } from "../store/mod.ts";
import type { Suite } from "./load.ts";
import { globMatcher } from "./glob.ts";
import { type PlanFile, planProblems, planSlice } from "./plan.ts";
import { isFinished } from "./results.ts";
import {
  type Instance,
  listSuiteRunIds,
  readScenarioStates,
  readSuiteRun,
  resolveSuiteRunId,
  type SuiteRunFile,
  SuiteRunHandle,
  type SuiteRunOptions,
} from "./state.ts";

export type StartMode =
  /** `repeat`: the epochs; `agents`: those of a matrix to play (null: all, or none). */
  | { kind: "fresh"; filter: string | null; repeat: number; agents?: string[] | null }
  | { kind: "resume"; ref: string | null }
  | { kind: "rerun"; from: string; which: ("failed" | "error")[] }
  /** `planFile`: where the plan was read, for messages. */
  | { kind: "shard"; plan: PlanFile; planFile: string; index: number };

export interface Started {
  handle: SuiteRunHandle;
  /** What to play now, in order. */
  todo: Instance[];
  /** A suite run resumed (its finished scenarios are not played again). */
  resumed: boolean;
}

/**
 * A row's name (its instance id): `key`, `key.N` for the Nth of several epochs; in a matrix
 * `key.AGENT`, `key.AGENT.N`. Unambiguous — a key has no dot, an agent's name starts with a letter
 * — and stable: the same cell of the same suite is named the same in every suite run of it.
 */
export function instanceIdOf(
  key: string,
  agent: string | null,
  epoch: number,
  epochs: number,
): string {
  const cell = agent === null ? key : `${key}.${agent}`;
  return epochs === 1 ? cell : `${cell}.${epoch}`;
}

/**
 * The agents of a matrix to play: `wanted` (from --agent), each one of the suite's, in the file's
 * order; all of them when none is wanted; null for a suite without agents.
 */
export function selectedAgents(suite: Suite, wanted: readonly string[] | null): string[] | null {
  if (suite.agents === null) {
    if (wanted !== null && wanted.length > 0) {
      throw new UsageError(`--agent ${wanted[0]}: ${suite.file} has no agents:`, {
        hint:
          "name agents in the suite file (docs/suites.md, Matrix and epochs), or leave --agent out",
      });
    }
    return null;
  }
  if (wanted === null || wanted.length === 0) return [...suite.agents];
  for (const name of wanted) {
    if (!suite.agents.includes(name)) {
      const guess = nearest(name, suite.agents);
      throw new UsageError(
        `--agent ${JSON.stringify(name)} is not one of the suite's agents${
          guess ? ` (did you mean '${guess}'?)` : ""
        }`,
        { hint: `its agents are ${suite.agents.join(", ")}` },
      );
    }
  }
  return suite.agents.filter((name) => wanted.includes(name));
}

/**
 * The suite's cells as instances, in the order they are played: each scenario, against each agent
 * (`agents`, a matrix; null: the scenario's own), `repeat` epochs of each.
 */
export function instancesOf(
  suite: Suite,
  options: { filter: string | null; repeat: number; agents?: readonly string[] | null },
): (Instance & { name: string })[] {
  const matches = options.filter === null ? () => true : globMatcher(options.filter);
  const chosen = suite.scenarios.filter((spec) => matches(spec.key));
  if (chosen.length === 0) {
    throw new UsageError(
      `--filter ${
        JSON.stringify(options.filter)
      } matches none of the ${suite.scenarios.length} scenarios`,
      {
        hint: `the keys are ${suite.scenarios.slice(0, 8).map((s) => s.key).join(", ")}${
          suite.scenarios.length > 8 ? ", …" : ""
        }`,
      },
    );
  }
  const agents: readonly (string | null)[] = options.agents ?? [null];
  return chosen.flatMap((spec) =>
    agents.flatMap((agent) =>
      Array.from({ length: options.repeat }, (_, i) => ({
        id: instanceIdOf(spec.key, agent, i + 1, options.repeat),
        key: spec.key,
        repeat: i + 1,
        agent,
        index: spec.index,
        name: spec.name,
      }))
    )
  );
}

function sameFile(suite: Suite, header: SuiteRunFile): boolean {
  return header.file === suite.file && header.suite === suite.name;
}

/**
 * Refuses a suite run of another suite (`--rerun --from`, `--reuse`): its scenario keys would be
 * matched against this file's as if they were the same scenarios. The file may have moved (a CI
 * job's fresh clone); its suite's name is what must agree.
 */
export function requireSameSuite(
  suite: Pick<Suite, "name" | "file">,
  header: Pick<SuiteRunFile, "id" | "suite" | "file">,
  doing: string,
): void {
  if (header.suite === suite.name) return;
  throw new UsageError(
    `Cannot ${doing} suite run ${header.id}: it ran suite ${
      JSON.stringify(header.suite)
    } (${header.file}), not ${JSON.stringify(suite.name)} (${suite.file})`,
    { hint: "name a suite run of this suite file: reins suite list" },
  );
}

/** The suite run to resume: the one named, else this file's latest that did not finish. */
function findResumable(root: DataRoot, suite: Suite, ref: string | null): SuiteRunFile {
  if (ref !== null) {
    const header = readSuiteRun(root, resolveSuiteRunId(root, ref));
    if (!sameFile(suite, header)) {
      throw new UsageError(
        `Suite run ${header.id} ran ${header.file} (suite ${
          JSON.stringify(header.suite)
        }), not ${suite.file}`,
        { hint: "resume it with the file it ran" },
      );
    }
    return header;
  }
  const unreadable: string[] = [];
  for (const id of listSuiteRunIds(root)) {
    let header: SuiteRunFile;
    try {
      header = readSuiteRun(root, id);
    } catch (error) {
      if (!(error instanceof ReinsError)) throw error;
      unreadable.push(id);
      continue;
    }
    if (sameFile(suite, header) && header.state !== "finished") return header;
  }
  throw new NotFoundError(`No suite run of ${suite.file} is left to resume`, {
    hint: unreadable.length > 0
      ? `${unreadable.length} suite run${unreadable.length === 1 ? "" : "s"} cannot be read (${
        unreadable.slice(0, 3).join(", ")
      }): reins suite list says why; resume one by its id, or run the suite afresh`
      : "every one finished; run it afresh without --resume (reins suite list shows them)",
  });
}

export function startSuiteRun(
  root: DataRoot,
  suite: Suite,
  mode: StartMode,
  options: { jobs: number; report: boolean },
): Started {
  const base: Omit<SuiteRunOptions, "filter" | "repeat" | "agents" | "shard" | "rerunOf"> = {
    jobs: options.jobs,
    report: options.report,
  };
  switch (mode.kind) {
    case "fresh": {
      const agents = selectedAgents(suite, mode.agents ?? null);
      const instances = instancesOf(suite, { ...mode, agents });
      const handle = SuiteRunHandle.create(root, {
        suite: suite.name,
        file: suite.file,
        digest: suite.digest,
        options: {
          ...base,
          filter: mode.filter,
          repeat: mode.repeat,
          agents,
          shard: null,
          rerunOf: null,
        },
        instances,
      });
      return { handle, todo: instances.map(({ name: _, ...bare }) => bare), resumed: false };
    }
    case "resume": {
      const header = findResumable(root, suite, mode.ref);
      if (header.digest !== suite.digest) {
        throw new ReinsError(
          "conflict",
          `Cannot resume suite run ${header.id}: ${suite.file} changed since it began`,
          {
            hint:
              "restore the file as it was, or run the suite afresh (results would mix two versions)",
            exitCode: 2,
          },
        );
      }
      const handle = SuiteRunHandle.resume(root, header.id);
      try {
        handle.header.options.jobs = options.jobs;
        handle.header.options.report = options.report;
        handle.saveHeader();
        const states = readScenarioStates(root, handle.header);
        const todo = states.filter((state) => !isFinished(state.status)).map((s) => s.instance);
        return { handle, todo, resumed: true };
      } catch (error) {
        handle.close();
        throw error;
      }
    }
    case "rerun": {
      const fromId = resolveSuiteRunId(root, mode.from);
      const from = readSuiteRun(root, fromId);
      requireSameSuite(suite, from, "rerun the failures of");
      const wanted = new Set<string>(mode.which);
      const states = readScenarioStates(root, from).filter((state) => wanted.has(state.status));
      const keys = new Map(suite.scenarios.map((spec) => [spec.key, spec]));
      const instances: (Instance & { name: string })[] = [];
      const gone: string[] = [];
      for (const state of states) {
        const spec = keys.get(state.instance.key);
        if (spec === undefined) gone.push(state.instance.key);
        else if (state.instance.agent !== null && !suite.agents?.includes(state.instance.agent)) {
          gone.push(`${state.instance.key} (agent ${state.instance.agent})`);
        } else instances.push({ ...state.instance, index: spec.index, name: spec.name });
      }
      if (gone.length > 0) {
        throw new UsageError(
          `Cannot rerun ${gone.join(", ")}: no such scenario in ${suite.file} any more`,
          { hint: "rerun with the suite file the suite run used, or run the suite afresh" },
        );
      }
      if (instances.length === 0) {
        throw new ReinsError(
          "not_found",
          `Suite run ${fromId} has no ${
            mode.which.map((w) => w === "error" ? "errors" : w).join(" or ")
          } to rerun`,
          { hint: `reins suite show ${fromId} shows its results`, exitCode: 0 },
        );
      }
      const handle = SuiteRunHandle.create(root, {
        suite: suite.name,
        file: suite.file,
        digest: suite.digest,
        options: {
          ...base,
          filter: from.options.filter,
          repeat: from.options.repeat,
          agents: from.options.agents,
          shard: null,
          rerunOf: { suiteRunId: fromId, which: mode.which },
        },
        instances,
      });
      return { handle, todo: instances.map(({ name: _, ...bare }) => bare), resumed: false };
    }
    case "shard": {
      const { plan, index } = mode;
      if (plan.digest !== suite.digest) {
        throw new UsageError(
          `The plan ${plan.id} was made from another version of ${suite.file}`,
          { hint: "every shard must run the file the plan was made from; make the plan again" },
        );
      }
      // A plan changed by hand could run a scenario twice, or none, or the wrong one's turns.
      const problems = planProblems(plan, instancesOf(suite, plan));
      if (problems.length > 0) {
        const shown = problems.slice(0, 5).map((problem) => `${mode.planFile}: ${problem}`);
        if (problems.length > 5) shown.push(`… and ${problems.length - 5} more`);
        throw new UsageError(
          `Cannot run the plan ${plan.id}: it does not match ${suite.file}: ${shown.join("; ")}`,
          { hint: "make the plan again with: reins suite plan FILE --shards N --out PLAN" },
        );
      }
      const names = new Map(suite.scenarios.map((spec) => [spec.index, spec.name]));
      const slice = planSlice(plan, index).map((
        { shard: _, callExecutionId: __, ...instance },
      ) => ({
        ...instance,
        name: names.get(instance.index) ?? instance.key,
      }));
      const handle = SuiteRunHandle.create(root, {
        suite: suite.name,
        file: suite.file,
        digest: suite.digest,
        options: {
          ...base,
          filter: plan.filter,
          repeat: plan.repeat,
          agents: plan.agents,
          shard: { planId: plan.id, index, count: plan.shards, total: plan.instances.length },
          rerunOf: null,
        },
        instances: slice,
      });
      return { handle, todo: slice.map(({ name: _, ...bare }) => bare), resumed: false };
    }
  }
}
