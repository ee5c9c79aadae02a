// One agent turn of a scenario, as the runner needs it: a prompt in a context, recorded as a run
// with trigger `suite` and the scenario's first run as its family parent; out comes the settled
// run's evidence and what it recorded (the transcript, its recordings). The turn engine
// (lib/turn) does the turn; this maps a scenario's settings onto its request and reads back what
// was stored, through the same mapping a platform report uses.
import { assertNever } from "../core/assert_never.ts";
import { isSandboxRefusal } from "../core/sandbox.ts";
import { HARNESS_DRIVERS, type Settings } from "../core/config.ts";
import type { AgentSpec } from "../drivers/mod.ts";
import type { Store } from "../store/mod.ts";
import { runTurn } from "../turn/run_turn.ts";
import { spentIn } from "../turn/gateway_use.ts";
import type { BudgetScope } from "../core/mod.ts";
import { type RecordingSource, runReportOf } from "../platform/run_outcome.ts";
import type { TranscriptItem } from "../platform/mod.ts";
import type { ScenarioSpec } from "./load.ts";
import type { Evidence, TurnEvidence } from "./evidence.ts";
import type { ScenarioState } from "./state.ts";
import { ReinsError } from "../core/errors.ts";
import type { SuiteReuse } from "./reuse.ts";

export interface SuiteTurn {
  scenario: ScenarioSpec;
  prompt: string;
  cwd: string;
  contextId: string;
  parentRunId: string | null;
  /** The turn's limit: the scenario's turnSeconds, or less when the scenario's time runs out. */
  timeoutSeconds: number | null;
  /** End the turn (its run ends interrupted); `kill`: kill the agent now. */
  stop: AbortSignal;
  kill: AbortSignal;
  /** The run exists (before the agent starts): the state file can name it from now on. */
  onCreated(runId: string): void | Promise<void>;
}

export interface TurnResult {
  evidence: TurnEvidence;
  transcript: TranscriptItem[];
  recordings: RecordingSource[];
}

export type TurnRunner = (turn: SuiteTurn) => Promise<TurnResult>;

/** The engine's agent for a scenario (load.ts made sure a command scenario has its exec). */
export function agentOf(scenario: ScenarioSpec): AgentSpec {
  switch (scenario.driver) {
    case "loop":
      return { kind: "loop", model: scenario.model, baseUrl: null };
    case "command":
      return { kind: "command", exec: scenario.exec!, idleTimeoutSeconds: null };
    case "claude":
    case "codex":
    case "gemini":
    case "opencode":
      return {
        kind: "harness",
        driver: HARNESS_DRIVERS.find((name) => name === scenario.driver)!,
        idleTimeoutSeconds: null,
        ...(scenario.model === null ? {} : { model: scenario.model }),
        ...(scenario.args.length === 0 ? {} : { args: scenario.args }),
      };
    default:
      return assertNever(scenario.driver, "driver");
  }
}

/** Reads back what a settled turn recorded: its transcript, as a platform report maps it. */
export function recordedTurn(store: Store, runId: string, prompt: string): TurnResult {
  const { record } = store.inspectRun(runId);
  const { events } = store.readEvents(runId);
  const report = runReportOf(record, events, { runDir: store.layout.run(runId) });
  let costUsd: number | null = null;
  let tokens: number | null = null;
  let result: string | null = null;
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    if (event.type === "usage.updated") {
      costUsd = event.payload.costUsd ?? null;
      const { inputTokens, outputTokens } = event.payload;
      tokens = inputTokens === null && outputTokens === null
        ? null
        : (inputTokens ?? 0) + (outputTokens ?? 0);
    }
    if (event.type === "completed" || event.type === "failed") {
      result = typeof event.payload.result === "string" ? event.payload.result : null;
    }
  }
  const status = record.status === "completed" || record.status === "failed"
    ? record.status
    : "interrupted";
  return {
    evidence: { runId, prompt, status, reason: record.terminalReason, costUsd, tokens, result },
    transcript: [...report.outcome.transcript],
    recordings: report.recordings,
  };
}

/**
 * What a finished scenario's runs recorded, read back (its evidence and recordings), for a report
 * that lacks its result; null when one of its runs cannot be read.
 */
export function recordedScenario(
  store: Store,
  state: ScenarioState,
): { evidence: Evidence; recordings: RecordingSource[] } | null {
  const read = readRecordedScenario(store, state);
  return "unreadable" in read ? null : read;
}

/** recordedScenario(), or which of its runs cannot be read and why (for a regrade's reason). */
export function readRecordedScenario(
  store: Store,
  state: ScenarioState,
): { evidence: Evidence; recordings: RecordingSource[] } | { unreadable: string } {
  const turns: TurnResult[] = [];
  for (const runId of state.runIds) {
    try {
      turns.push(recordedTurn(store, runId, ""));
    } catch (error) {
      if (!(error instanceof ReinsError)) throw error;
      return { unreadable: `its run ${runId} (${store.layout.run(runId)}): ${error.message}` };
    }
  }
  const recordings = turns.flatMap((turn) => turn.recordings);
  return {
    evidence: {
      cwd: state.attempts[state.attempts.length - 1]?.workdir ?? "",
      turns: turns.map((turn) => turn.evidence),
      transcript: turns.flatMap((turn) => turn.transcript),
      recordings,
    },
    recordings,
  };
}

/**
 * The scenario's own limits (scenarioMax*): over its turns so far — the family of its first
 * run — and this one.
 */
function scenarioScopes(
  store: Store,
  budget: ScenarioSpec["budget"],
  firstRunId: string | null,
): BudgetScope[] {
  const limits = {
    maxTurns: budget.scenarioMaxTurns,
    maxTokens: budget.scenarioMaxTokens,
    maxUsd: budget.scenarioMaxUsd,
  };
  if (Object.values(limits).every((limit) => limit === undefined)) return [];
  const earlier = firstRunId === null
    ? []
    : store.runFamily(firstRunId).runs.flatMap((member) =>
      store.readEvents(member.record.id).events
    );
  return [{ scope: "scenario", limits, spentBefore: spentIn(earlier) }];
}

/** Turns through the engine, one at a time per scenario, many scenarios at once. */
export function engineTurns(
  store: Store,
  settings: Settings,
  warn: (message: string) => void,
  reuse: SuiteReuse | null = null,
): TurnRunner {
  return async (turn) => {
    const { scenario } = turn;
    // --reuse: the recorded turn's calls answer what they match (lib/suite/reuse.ts).
    const lease = reuse === null ? null : await reuse.lease(turn);
    const server = lease?.server ?? null;
    const { summary, error } = await runTurn(
      store,
      settings,
      {
        agent: agentOf(scenario),
        prompt: turn.prompt,
        cwd: turn.cwd,
        contextId: turn.contextId,
        approval: scenario.approve,
        budget: {
          maxTurns: scenario.budget.maxTurns,
          maxTokens: scenario.budget.maxTokens,
          maxUsd: scenario.budget.maxUsd,
        },
        timeoutSeconds: turn.timeoutSeconds,
        parentRunId: turn.parentRunId,
        trigger: "suite",
        env: scenario.env,
        ...(scenario.confine === null ? {} : { confine: scenario.confine }),
        allowHosts: scenario.allowHosts,
        budgetScopes: scenarioScopes(store, scenario.budget, turn.parentRunId),
        ...(server === null
          ? {}
          : { upstreamOf: (route: string, up: string) => server.upstreamOf(route, up) }),
      },
      { stop: turn.stop, kill: turn.kill },
      { warn, onCreated: (runId) => turn.onCreated(runId) },
    ).finally(() => lease === null ? undefined : reuse?.release(lease));
    // The sandbox refusing the agent refuses every scenario alike: the suite stops (exit 4)
    // rather than record each as an error.
    if (isSandboxRefusal(error)) throw error;
    return recordedTurn(store, summary.runId, turn.prompt);
  };
}
