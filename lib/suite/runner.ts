// Plays the scenarios of a suite run, `jobs` at a time: for each, a fresh copy of the workdir, the
// setup commands, the conversation (scripted turns, or a simulated user) as turns of one context,
// then the checks and judges, and a status. Every step is saved to the scenario's state (a line of
// the suite run's begun.jsonl, state.ts) before the next begins, so a crash loses at most the step
// in flight and a resume redoes only what did not finish. It prints nothing; hooks tell the caller
// (progress, the platform report).
import type { Confinement, OpenConfinement } from "../confine/mod.ts";
import { describeError, ReinsError } from "../core/errors.ts";
import { isSandboxRefusal } from "../core/sandbox.ts";
import { nowIso } from "../core/clock.ts";
import { createHash } from "node:crypto";
import type { Model } from "../model/mod.ts";
import type { TranscriptItem } from "../platform/mod.ts";
import type { Check } from "./format.ts";
import { cellSpec, type ScenarioSpec, type Suite } from "./load.ts";
import { runCheck } from "./checks.ts";
import { PatternMatcher } from "./matcher.ts";
import { runJudge } from "./judge.ts";
import { type Evidence, scenarioCost, scenarioTokens, type TurnEvidence } from "./evidence.ts";
import { type Exchange, nextUserMove, SimulatedUserError } from "./simulated_user.ts";
import { type CheckResult, statusOf } from "./results.ts";
import { runShell } from "./shell.ts";
import type { Attempt, Instance, ScenarioState, SuiteRunHandle } from "./state.ts";
import type { TurnRunner } from "./turns.ts";
import { makeWorkdir } from "./workdir.ts";

export interface ScenarioEnd {
  state: ScenarioState;
  spec: ScenarioSpec;
  /** What the last attempt left; null when it never got to a conversation. */
  evidence: Evidence | null;
}

export interface RunnerHooks {
  /** A scenario begins (once, before its first attempt). */
  onStart?(state: ScenarioState, spec: ScenarioSpec): void | Promise<void>;
  /** An attempt's conversation begins: its first run exists (the agent has not started yet). */
  onConversation?(state: ScenarioState, runId: string): void | Promise<void>;
  /** A scenario has its final status. */
  onEnd?(end: ScenarioEnd): void | Promise<void>;
  /** An attempt that could not run is tried again. */
  onRetry?(state: ScenarioState, reason: string): void;
}

export interface RunSuiteOptions {
  suite: Suite;
  handle: SuiteRunHandle;
  /** The instances to play now, in order (pending ones, or cut short before). */
  todo: readonly Instance[];
  jobs: number;
  /** Aborted: start nothing more and stop the turns in flight (their scenarios stay unfinished). */
  stop: AbortSignal;
  kill: AbortSignal;
  runTurn: TurnRunner;
  /** A fresh model for a simulated user or a judge (mock scripts start from their first answer). */
  makeModel(spec: string, baseUrl: string | null): Promise<Model>;
  /**
   * Keeps the working directory as the conversation left it, before the checks run (a snapshot
   * under the last turn's end-state id, end_state.ts), for `reins suite regrade`; not called when
   * the directory is empty (the attempt's `emptyEnd` says so instead). Resolves once
   * every file is read; `written` once it is on disk (awaited after the checks, so its fsyncs do
   * not hold them up). Neither rejects.
   */
  keepEndState?(lastRunId: string, cwd: string): Promise<{ written: Promise<void> }>;
  hooks?: RunnerHooks;
  /**
   * The confinement a scenario's setup and command checks run in (null: unconfined); its agent's
   * turns are confined by the turn engine itself.
   */
  shellConfinement?(spec: ScenarioSpec): Promise<OpenConfinement | null>;
}

/**
 * The longest a check's pattern may take to match, when the scenario's time (which bounds it
 * otherwise) is longer or unlimited: a match past it backtracks without end.
 */
const PATTERN_SECONDS = 60;

/** What the scenarios of one runSuite share. */
type Shared = RunSuiteOptions & { matcher: PatternMatcher };

/** An attempt that could not run: the scenario's status is error, with this reason. */
class AttemptEnd extends Error {}

/** A context id per attempt: a retry starts a fresh conversation. Safe as a path segment. */
export function contextIdOf(suiteRunId: string, instanceId: string, attempt: number): string {
  const tail = suiteRunId.replace(/-/g, "").slice(-12);
  const id = `suite.${tail}.${attempt}.${instanceId}`;
  if (id.length <= 128) return id;
  const digest = createHash("sha256").update(instanceId).digest("hex").slice(0, 16);
  return `suite.${tail}.${attempt}.${instanceId.slice(0, 80)}.${digest}`;
}

/** Stop signals of one scenario: the suite's stop, and its own scenarioSeconds. */
class ScenarioClock implements Disposable {
  readonly #timeout = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #deadlineMs: number | null;
  readonly signal: AbortSignal;

  constructor(readonly seconds: number | null, suiteStop: AbortSignal) {
    this.#deadlineMs = seconds === null ? null : Date.now() + seconds * 1000;
    this.#timer = seconds === null
      ? undefined
      : setTimeout(() => this.#timeout.abort(), seconds * 1000);
    this.signal = AbortSignal.any([suiteStop, this.#timeout.signal]);
  }

  /** The scenario's time is up (its timer may not have fired yet). */
  get timedOut(): boolean {
    return this.#timeout.signal.aborted ||
      (this.#deadlineMs !== null && Date.now() >= this.#deadlineMs - 5);
  }

  /** Seconds left, or null without a scenario limit. */
  left(): number | null {
    return this.#deadlineMs === null
      ? null
      : Math.max(0.001, (this.#deadlineMs - Date.now()) / 1000);
  }

  /** The tighter of a step's own limit and what the scenario has left. */
  limit(own: number | null): number | null {
    const left = this.left();
    if (left === null) return own;
    return own === null ? left : Math.min(own, left);
  }

  [Symbol.dispose](): void {
    clearTimeout(this.#timer);
  }
}

interface Played {
  status: "passed" | "failed" | "error";
  reason: string | null;
  evidence: Evidence | null;
  checks: CheckResult[];
  ended: string | null;
}

async function playAttempt(
  options: Shared,
  spec: ScenarioSpec,
  state: ScenarioState,
  attempt: Attempt,
): Promise<Played> {
  const { handle } = options;
  using clock = new ScenarioClock(spec.scenarioSeconds, options.stop);
  const endIfStopped = () => {
    if (options.stop.aborted) throw new AbortedByStop();
    if (clock.timedOut) {
      throw new AttemptEnd(`timed out after ${spec.scenarioSeconds} s (timeouts.scenarioSeconds)`);
    }
  };
  // Saved with the attempt's first run (below), or with its end: each save is an fsync, and a
  // crash before the first run leaves a scenario a resume plays all the same.
  const cwd = await makeWorkdir(spec, handle);
  attempt.workdir = cwd;
  const evidence: Evidence = { cwd, turns: [], transcript: [], recordings: [] };
  let confined: OpenConfinement | null = null;
  try {
    confined = await options.shellConfinement?.(spec) ?? null;
    for (const command of spec.setup) {
      endIfStopped();
      const ran = await runShell(command, {
        cwd,
        timeoutSeconds: clock.left(),
        signal: clock.signal,
        env: spec.env,
        confine: confined?.confinement,
      });
      endIfStopped();
      if (ran.code !== 0) {
        throw new AttemptEnd(
          `setup ${JSON.stringify(command)} ${ran.exit}${ran.output ? `: ${ran.output}` : ""}`,
        );
      }
    }

    const contextId = contextIdOf(handle.id, state.instance.id, attempt.attempt);
    let parentRunId: string | null = null;
    const exchanges: Exchange[] = [];
    const turn = async (prompt: string) => {
      endIfStopped();
      const { evidence: turnEvidence, transcript, recordings } = await options.runTurn({
        scenario: spec,
        prompt,
        cwd,
        contextId,
        parentRunId,
        timeoutSeconds: clock.limit(spec.turnSeconds),
        stop: clock.signal,
        kill: options.kill,
        onCreated: async (runId) => {
          attempt.runIds.push(runId);
          // The attempt's first run is saved at once (a crash then leaves the attempt and its
          // working directory findable), appended to begun.jsonl; later ones go with its end.
          if (parentRunId === null) {
            await handle.noteBegun(state);
            await options.hooks?.onConversation?.(state, runId);
          }
        },
      });
      parentRunId ??= turnEvidence.runId;
      if (!attempt.runIds.includes(turnEvidence.runId)) attempt.runIds.push(turnEvidence.runId);
      evidence.turns.push(turnEvidence);
      evidence.transcript.push(...transcript);
      evidence.recordings.push(...recordings);
      exchanges.push({ user: prompt, agent: lastAgentText(transcript, turnEvidence) });
      endIfStopped();
      if (turnEvidence.status !== "completed") {
        throw new AttemptEnd(
          `turn ${evidence.turns.length} ${turnEvidence.status}${
            turnEvidence.reason ? `: ${turnEvidence.reason}` : ""
          }`,
        );
      }
    };

    let ended: string;
    const conversation = spec.conversation;
    if (conversation.kind === "scripted") {
      for (const prompt of conversation.turns) await turn(prompt);
      ended = `the ${conversation.turns.length} scripted turns were said`;
    } else {
      const { user } = conversation;
      const model = await options.makeModel(user.model, user.baseUrl ?? null);
      ended = `the simulated user reached maxTurns (${user.maxTurns})`;
      for (let i = 0; i < user.maxTurns; i++) {
        endIfStopped();
        let text: string;
        if (i === 0 && user.opening !== undefined) {
          text = user.opening;
        } else {
          let move;
          try {
            move = await nextUserMove(model, spec, exchanges, clock.signal);
          } catch (error) {
            endIfStopped();
            if (error instanceof SimulatedUserError) throw new AttemptEnd(error.message);
            throw error;
          }
          if (move.kind === "end") {
            ended = `the simulated user ended it: ${move.reason}`;
            break;
          }
          text = move.text;
        }
        await turn(text);
      }
      if (evidence.turns.length === 0) {
        throw new AttemptEnd("the simulated user ended the conversation before it began");
      }
    }

    const last = evidence.turns[evidence.turns.length - 1];
    // An empty working directory has nothing to keep: the attempt says so (one file less a
    // scenario, its manifest), and regrade checks anew in an empty folder.
    let kept: { written: Promise<void> } | undefined;
    if (last !== undefined && options.keepEndState !== undefined) {
      if (isEmptyDir(cwd)) attempt.emptyEnd = true;
      else kept = await options.keepEndState(last.runId, cwd);
    }
    let checks: CheckResult[];
    try {
      checks = await runChecks(
        options,
        spec,
        evidence,
        clock,
        endIfStopped,
        confined?.confinement ?? null,
      );
    } finally {
      await kept?.written;
    }
    return { status: statusOf(checks), reason: null, evidence, checks, ended };
  } catch (error) {
    if (error instanceof AttemptEnd && !options.stop.aborted) {
      return { status: "error", reason: error.message, evidence, checks: [], ended: null };
    }
    if (error instanceof AbortedByStop) throw error;
    if (options.stop.aborted) throw new AbortedByStop();
    if (isSandboxRefusal(error)) throw error;
    if (clock.timedOut) {
      return {
        status: "error",
        reason: `timed out after ${spec.scenarioSeconds} s (timeouts.scenarioSeconds)`,
        evidence,
        checks: [],
        ended: null,
      };
    }
    return { status: "error", reason: describeError(error), evidence, checks: [], ended: null };
  } finally {
    await confined?.close();
  }
}

/** Whether `dir` has no entries; false when it cannot be read (the snapshot then says why). */
function isEmptyDir(dir: string): boolean {
  try {
    // One open and getdents: cheaper at once than through the blocking pool.
    for (const _ of Deno.readDirSync(dir)) return false;
    return true;
  } catch {
    return false;
  }
}

class AbortedByStop extends Error {
  constructor() {
    super("the suite run was stopped");
  }
}

function lastAgentText(transcript: readonly TranscriptItem[], turn: TurnEvidence): string | null {
  if (turn.result) return turn.result;
  for (let i = transcript.length - 1; i >= 0; i--) {
    const item = transcript[i];
    if (item.kind === "message" && item.speaker === "assistant") return item.text;
  }
  return null;
}

async function runChecks(
  options: Shared,
  spec: ScenarioSpec,
  evidence: Evidence,
  clock: ScenarioClock,
  endIfStopped: () => void,
  confine: Confinement | null,
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of spec.checks) {
    endIfStopped();
    results.push(await runOne(options, spec, check, evidence, clock, confine));
  }
  endIfStopped();
  return results;
}

async function runOne(
  options: Shared,
  spec: ScenarioSpec,
  check: Check,
  evidence: Evidence,
  clock: ScenarioClock,
  confine: Confinement | null,
): Promise<CheckResult> {
  if (check.kind !== "judge") {
    return await runCheck(check, evidence, {
      matcher: options.matcher,
      timeoutSeconds: clock.limit(PATTERN_SECONDS)!,
      signal: clock.signal,
      confine,
    });
  }
  let model: Model;
  try {
    model = await options.makeModel(check.judge.model, check.judge.baseUrl ?? null);
  } catch (error) {
    return {
      name: check.name,
      kind: "judge",
      outcome: "grading_error",
      met: false,
      checkpoint: check.pass !== undefined,
      detail: `the judge could not be made: ${describeError(error)}`,
      score: null,
      by: null,
      reason: null,
    };
  }
  return await runJudge(check, spec, evidence, model, clock.signal);
}

/** Plays one scenario to its final status (or leaves it unfinished when the suite stops). */
async function runScenario(options: Shared, spec: ScenarioSpec, instance: Instance) {
  const { handle, hooks } = options;
  const state = handle.readScenario(instance);
  state.name = spec.name;
  const finish = async (evidence: Evidence | null) => {
    await handle.writeScenario(state);
    await hooks?.onEnd?.({ state, spec, evidence });
  };
  if (spec.skip !== null) {
    state.status = "skipped";
    state.reason = spec.skip;
    await finish(null);
    return;
  }
  // Saved with the attempt's working directory (playAttempt): a crash before that leaves a
  // pending scenario, which a resume plays all the same.
  const firstStart = state.startedAt === null;
  state.status = "running";
  state.startedAt ??= nowIso();
  if (firstStart) await hooks?.onStart?.(state, spec);
  while (true) {
    const attempt: Attempt = {
      attempt: state.attempts.length + 1,
      startedAt: nowIso(),
      endedAt: null,
      status: null,
      reason: null,
      runIds: [],
      workdir: null,
    };
    state.attempts.push(attempt);
    const startedMs = Date.now();
    let played: Played;
    try {
      played = await playAttempt(options, spec, state, attempt);
    } catch (error) {
      if (!(error instanceof AbortedByStop)) throw error;
      // Cut short by the suite's stop: unfinished, for a resume to play again.
      attempt.endedAt = nowIso();
      attempt.reason = "the suite run was stopped";
      state.status = "pending";
      await handle.writeScenario(state);
      return;
    }
    attempt.endedAt = nowIso();
    attempt.status = played.status;
    attempt.reason = played.reason;
    if (played.status === "passed" && attempt.workdir !== null) {
      await Deno.remove(attempt.workdir, { recursive: true }).catch(() => {});
      attempt.workdir = null;
    }
    const errors = state.attempts.filter((a) => a.status === "error").length;
    if (played.status === "error" && errors <= spec.retryErrors && !options.stop.aborted) {
      hooks?.onRetry?.(state, played.reason ?? "it could not run");
      continue;
    }
    state.status = played.status;
    state.reason = played.reason;
    state.runIds = [...attempt.runIds];
    state.turns = played.evidence?.turns.length ?? 0;
    state.costUsd = played.evidence?.turns.length ? scenarioCost(played.evidence) : null;
    state.tokens = played.evidence?.turns.length ? scenarioTokens(played.evidence) : null;
    state.durationMs = Date.now() - startedMs;
    state.checks = played.checks;
    state.ended = played.ended;
    state.endedAt = nowIso();
    await finish(played.evidence);
    return;
  }
}

/** Plays `todo`, `jobs` at a time. Resolves when all have ended or the stop was honoured. */
export async function runSuite(given: RunSuiteOptions): Promise<{ stopped: boolean }> {
  const specs = new Map(given.suite.scenarios.map((spec) => [spec.index, spec]));
  let next = 0;
  let fatal: unknown = null;
  // What reins itself cannot go on after (a sandbox refusal) stops the other scenarios too.
  const halt = new AbortController();
  using matcher = new PatternMatcher();
  const options: Shared = { ...given, stop: AbortSignal.any([given.stop, halt.signal]), matcher };
  const worker = async () => {
    while (!options.stop.aborted) {
      const instance = options.todo[next++];
      if (instance === undefined) return;
      const scenario = specs.get(instance.index);
      if (scenario === undefined) {
        throw new ReinsError("internal", `Scenario ${instance.key} is not in the suite file`);
      }
      try {
        // A matrix cell: the scenario as its agent plays it.
        await runScenario(options, cellSpec(scenario, instance.agent), instance);
      } catch (error) {
        fatal ??= error;
        halt.abort();
        return;
      }
    }
  };
  const workers = Array.from(
    { length: Math.max(1, Math.min(options.jobs, options.todo.length)) },
    worker,
  );
  await Promise.all(workers);
  if (fatal !== null) throw fatal;
  return { stopped: given.stop.aborted };
}
