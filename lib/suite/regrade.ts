// `reins suite regrade`: the checks and judges of a suite file, as it is now, run again on what a
// suite run's scenarios recorded — their runs' transcripts, costs and answers, and the working
// directory as each conversation left it (its end-state snapshot, restored into the data root's
// tmp/) — with no agent started. The result is a new suite run (options.regradeOf) that show,
// compare and JUnit read like any other. Restoring a snapshot is the snapshot room's: the caller
// hands it in.
import { describeError } from "../core/errors.ts";
import type { Store } from "../store/mod.ts";
import type { Model } from "../model/mod.ts";
import type { Check } from "./format.ts";
import type { ScenarioSpec, Suite } from "./load.ts";
import { runCheck } from "./checks.ts";
import { runJudge } from "./judge.ts";
import { PatternMatcher } from "./matcher.ts";
import { type CheckResult, statusOf } from "./results.ts";
import {
  hasScenarioFiles,
  readBegun,
  readScenarioState,
  type ScenarioState,
  type SuiteRunFile,
  SuiteRunHandle,
} from "./state.ts";
import { readRecordedScenario } from "./turns.ts";
import { copyTree } from "./workdir.ts";

/** The longest a regex check may take to match (as the runner's bound). */
const PATTERN_SECONDS = 60;

export interface RegradeOptions {
  store: Store;
  /** The suite file as it is now (re-read: the point of a regrade). */
  suite: Suite;
  from: SuiteRunFile;
  makeModel(spec: string, baseUrl: string | null): Promise<Model>;
  /**
   * Restores the end state kept for the scenario whose last turn was `lastRunId` into the empty
   * directory `target`: null when done, else why it could not be (no snapshot, skipped, damaged).
   */
  restoreEndState(lastRunId: string, target: string): Promise<string | null>;
  /** A scenario has its new result. */
  onScenario?(state: ScenarioState): void;
}

/** Kinds of check that look at the working directory. */
const NEEDS_WORKDIR = new Set<Check["kind"]>(["file", "command"]);

function gradingError(check: Check, detail: string): CheckResult {
  return {
    name: check.name,
    kind: check.kind,
    outcome: "grading_error",
    met: false,
    checkpoint: check.kind !== "judge" || check.pass !== undefined,
    detail,
    score: null,
    by: null,
    reason: null,
  };
}

/**
 * Where the checks look: the restored end state (none when it was empty), else the attempt's kept
 * copy, else nothing.
 */
async function endStateOf(
  options: RegradeOptions,
  state: ScenarioState,
  cwd: string,
): Promise<string | null> {
  // Empty when the conversation ended: nothing was kept, and nothing is to restore.
  if (state.attempts[state.attempts.length - 1]?.emptyEnd === true) return null;
  const last = state.runIds[state.runIds.length - 1];
  const restored = await options.restoreEndState(last, cwd);
  if (restored === null) return null;
  const kept = state.attempts[state.attempts.length - 1]?.workdir ?? null;
  if (kept !== null) {
    try {
      await copyTree(kept, cwd);
      return null;
    } catch { /* gone since: said below */ }
  }
  return `no end state of its working directory was kept (${restored})`;
}

async function regradeOne(
  options: RegradeOptions,
  spec: ScenarioSpec,
  old: ScenarioState,
  matcher: PatternMatcher,
): Promise<ScenarioState> {
  const recorded = readRecordedScenario(options.store, old);
  if ("unreadable" in recorded) {
    return {
      ...old,
      status: "error",
      reason: `cannot be read: ${recorded.unreadable}`,
      checks: [],
    };
  }
  const tmp = options.store.layout.tmp();
  options.store.ensureDir(tmp);
  const cwd = await Deno.realPath(
    await Deno.makeTempDir({ dir: tmp, prefix: `regrade-${old.instance.key.slice(0, 40)}-` }),
  );
  try {
    const missing = await endStateOf(options, old, cwd);
    const evidence = { ...recorded.evidence, cwd };
    const signal = new AbortController().signal;
    const checks: CheckResult[] = [];
    for (const check of spec.checks) {
      if (missing !== null && NEEDS_WORKDIR.has(check.kind)) {
        checks.push(gradingError(check, `cannot check anew: ${missing}`));
      } else if (check.kind === "judge") {
        let model: Model;
        try {
          model = await options.makeModel(check.judge.model, check.judge.baseUrl ?? null);
        } catch (error) {
          checks.push(gradingError(check, `the judge could not be made: ${describeError(error)}`));
          continue;
        }
        checks.push(await runJudge(check, spec, evidence, model, signal));
      } else {
        checks.push(
          await runCheck(check, evidence, { matcher, timeoutSeconds: PATTERN_SECONDS, signal }),
        );
      }
    }
    return { ...old, name: spec.name, status: statusOf(checks), reason: null, checks };
  } finally {
    await Deno.remove(cwd, { recursive: true }).catch(() => {});
  }
}

/**
 * Regrades a suite run into a new one. Scenarios that did not reach their checks (error,
 * skipped, unfinished) are carried over as they were; one the suite file no longer has is skipped.
 */
export async function regradeSuiteRun(options: RegradeOptions): Promise<SuiteRunHandle> {
  const { store, suite, from } = options;
  const handle = SuiteRunHandle.create(store, {
    suite: suite.name,
    file: suite.file,
    digest: suite.digest,
    options: { ...from.options, report: false, regradeOf: from.id },
    instances: from.instances.map((instance) => ({ ...instance, name: instance.key })),
  });
  try {
    const specs = new Map(suite.scenarios.map((spec) => [spec.key, spec]));
    const fromDir = store.layout.suite(from.id);
    using matcher = new PatternMatcher();
    const begun = readBegun(store, fromDir);
    const files = hasScenarioFiles(fromDir);
    for (const instance of from.instances) {
      const old = readScenarioState(store, fromDir, instance, begun, files);
      const spec = specs.get(instance.key);
      let state: ScenarioState;
      if (old.status !== "passed" && old.status !== "failed") {
        state = old;
      } else if (spec === undefined) {
        state = {
          ...old,
          status: "skipped",
          reason: "the suite file no longer has this scenario",
          checks: [],
        };
      } else {
        state = await regradeOne(options, spec, old, matcher);
      }
      await handle.writeScenario(state);
      options.onScenario?.(state);
    }
    handle.end("finished");
    return handle;
  } catch (error) {
    handle.end("stopped");
    handle.close();
    throw error;
  }
}
