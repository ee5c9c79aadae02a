// One agent turn of a scenario, as the runner needs it: a prompt in a context, recorded as a run
// with trigger `suite` and the scenario's first run as its family parent; out comes the settled
// run's summary and what it recorded (for the transcript). The engine does the turn; this maps a
// scenario's settings onto its request and reads back what was stored.
import type { Settings } from "../core/config.ts";
import { readEvents } from "../store/event_log.ts";
import { runDir } from "../store/run_files.ts";
import { inspectRun } from "../store/run_record.ts";
import { runReportOf } from "../platform/run_outcome.ts";
import type { TranscriptItem } from "../platform/payloads.ts";
import type { RecordingSource } from "../platform/run_outcome.ts";
import { executeRun } from "../cli/run_turn.ts";
import type { ScenarioSpec } from "./load.ts";
import type { TurnEvidence } from "./evidence.ts";

export interface SuiteTurn {
  scenario: ScenarioSpec;
  prompt: string;
  cwd: string;
  contextId: string;
  parentRunId: string | null;
  /** The turn's limit: the scenario's turnSeconds, or less when the scenario's time runs out. */
  timeoutSeconds: number | null;
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

/** The settings a scenario's turn runs with: a harness model named in the suite file wins. */
export function scenarioSettings(settings: Settings, scenario: ScenarioSpec): Settings {
  if (scenario.model === null || scenario.driver === "loop" || scenario.driver === "command") {
    return settings;
  }
  return {
    ...settings,
    drivers: {
      ...settings.drivers,
      [scenario.driver]: { ...settings.drivers[scenario.driver], model: scenario.model },
    },
  };
}

/** Reads back what a settled turn recorded: its transcript, as a platform report maps it. */
export function recordedTurn(home: string, runId: string, prompt: string): TurnResult {
  const { record } = inspectRun(home, runId);
  const { events } = readEvents(home, runId);
  const report = runReportOf(record, events, { runDir: runDir(home, runId) });
  let costUsd: number | null = null;
  for (const event of events) {
    if (event.type === "usage.updated" && event.ignored === undefined) {
      costUsd = event.payload.costUsd ?? null;
    }
  }
  let result: string | null = null;
  for (const event of events) {
    if ((event.type === "completed" || event.type === "failed") && event.ignored === undefined) {
      result = typeof event.payload.result === "string" ? event.payload.result : null;
    }
  }
  const status = record.status === "completed" || record.status === "failed"
    ? record.status
    : "interrupted";
  return {
    evidence: { runId, prompt, status, reason: record.terminalReason, costUsd, result },
    transcript: [...report.outcome.transcript],
    recordings: report.recordings,
  };
}

/** Turns through the engine of `reins run`, one at a time per scenario, many scenarios at once. */
export function engineTurns(
  home: string,
  settings: Settings,
  warn: (message: string) => void,
): TurnRunner {
  return async (turn) => {
    const { scenario } = turn;
    const { summary } = await executeRun({
      home,
      settings: scenarioSettings(settings, scenario),
      driverName: scenario.driver,
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
      model: scenario.driver === "loop" ? scenario.model : null,
      baseUrl: null,
      exec: scenario.exec,
      idleTimeoutSeconds: null,
      parentRunId: turn.parentRunId,
      trigger: "suite",
      attachments: [],
      warn,
      onCreated: (runId) => turn.onCreated(runId),
    });
    return recordedTurn(home, summary.runId, turn.prompt);
  };
}
