// A report as an outbox entry: what createReport() writes before anything is sent, and the
// changes a live report takes as its scenarios start and finish. deliver.ts sends what an entry
// says is ready. A report is of N scenarios, each one call on the platform:
//
// - `reins report RUN...` reports finished runs: every scenario has its outcome at creation, no
//   ONGOING ping is wanted (the seed pings only when a scenario actually starts), and one
//   deliverEntry() sends it all.
// - a suite reports as it goes: createReport({ live: true }) with each scenario's outcome null,
//   deliverEntry() right away (the platform shows the execution while it runs); then per
//   scenario updateReport(…, scenarioStarted(key, runId)) + deliverEntry() (the ping), and
//   updateReport(…, scenarioFinished(key, report)) + deliverEntry() (its result and recordings).
//   Until every scenario has its result the entry stays in the outbox as "open"; once the last
//   one is acknowledged it is remembered in platform.json and removed, like any other.
import { nowIso, sleep } from "../core/clock.ts";
import { newId } from "../core/ids.ts";
import type { DataRoot } from "../store/mod.ts";
import type { PlatformTarget } from "./client.ts";
import {
  type CallStep,
  lockEntry,
  OUTBOX_ENTRY_TYPE,
  type OutboxEntry,
  readEntry,
  writeEntry,
} from "./outbox.ts";
import {
  agentNameOf,
  personaOf,
  resultOf,
  type ScenarioInput,
  type ScenarioOutcome,
  selectorOf,
} from "./payloads.ts";
import { rememberedTest } from "./reported.ts";
import { modalityOf, type RecordingSource } from "./run_outcome.ts";

/** One scenario of a report: a run's (run_outcome.ts) or a suite's. */
export interface ScenarioReport {
  /** The run behind it; null for a live scenario that has not started. */
  runId: string | null;
  scenario: ScenarioInput;
  /** What happened; null for a live scenario that has not finished. */
  outcome: ScenarioOutcome | null;
  recordings: readonly RecordingSource[];
}

export type Modality = "text" | "voice";

export interface NewReport {
  /** The test's name on the platform (`--name`, displayRunName, or the suite's). */
  name: string;
  scenarios: readonly ScenarioReport[];
  target: PlatformTarget;
  /**
   * How the platform renders the calls. By default "voice" when any scenario has an audio
   * recording (a spoken call shown as text has no player), else "text". A live report, whose
   * recordings come later, should say.
   */
  modality?: Modality;
  /** Made before its scenarios ran: ONGOING pings are sent as they start. */
  live?: boolean;
  /**
   * Calls allocated by another process (a suite plan provisions, starts and allocates once for
   * all its shards): this report sends nothing but pings and results into them, one per scenario
   * in order.
   */
  preallocated?: {
    runTestId: string;
    testExecutionId: string;
    callExecutionIds: readonly string[];
  };
  /**
   * The run test to add this report's execution to, known from another report of the same test
   * (a matrix's later epochs join the test its first one provisioned): taken as a remembered
   * test, so that one the platform no longer has is provisioned afresh.
   */
  joinTest?: string;
}

/** Makes each scenario key unique within one report (two runs of the same task). */
function uniqueKeys(scenarios: readonly ScenarioReport[]): ScenarioReport[] {
  const seen = new Map<string, number>();
  return scenarios.map((item) => {
    const count = (seen.get(item.scenario.name) ?? 0) + 1;
    seen.set(item.scenario.name, count);
    if (count === 1) return item;
    const key = `${item.scenario.name}-${count}`;
    return {
      ...item,
      scenario: { ...item.scenario, name: key, scenarioKey: key },
      outcome: item.outcome && { ...item.outcome, scenario: key },
    };
  });
}

function recordingSteps(recordings: readonly RecordingSource[]): CallStep["recordings"] {
  return recordings.map((recording) => ({ ...recording, state: "pending", reason: null }));
}

/**
 * Writes a new report to the outbox and returns it. It joins the test remembered for this
 * platform and name when that test has every scenario of this report and the same modality;
 * otherwise it will provision a new one.
 */
export function createReport(root: DataRoot, report: NewReport): OutboxEntry {
  if (report.scenarios.length === 0) throw new RangeError("Cannot make a report of no scenarios");
  const scenarios = uniqueKeys(report.scenarios);
  const keys = scenarios.map((item) => item.scenario.name);
  const modality = report.modality ??
    (scenarios.some((item) => modalityOf(item.recordings) === "voice") ? "voice" : "text");
  const remembered = rememberedTest(root, report.target.url, report.name);
  const joins = remembered !== null && remembered.modality === modality &&
    keys.every((key) => remembered.scenario_keys.includes(key));
  const now = nowIso();
  const live = report.live ?? false;
  const given = report.preallocated;
  if (given && given.callExecutionIds.length !== scenarios.length) {
    throw new RangeError(
      `Cannot report ${scenarios.length} scenarios into ${given.callExecutionIds.length} allocated calls`,
    );
  }
  const entry: OutboxEntry = {
    type: OUTBOX_ENTRY_TYPE,
    version: 1,
    id: newId(),
    createdAt: now,
    updatedAt: now,
    baseUrl: report.target.url,
    workspaceId: report.target.workspaceId,
    jobId: report.target.jobId,
    name: report.name,
    provision: {
      name: report.name,
      agent_name: agentNameOf(report.name),
      personas: scenarios.map((item) => personaOf(item.scenario)),
      modality,
    },
    selectors: scenarios.map((item) => selectorOf(item.scenario)),
    runTestId: given ? given.runTestId : report.joinTest ?? (joins ? remembered.run_test_id : null),
    runTestSource: given ? "provisioned" : report.joinTest || joins ? "remembered" : null,
    provisions: 0,
    scenarioIds: [],
    testExecutionId: given ? given.testExecutionId : null,
    allocated: given !== undefined,
    live,
    calls: scenarios.map((item, i) => ({
      runId: item.runId,
      scenarioKey: item.scenario.name,
      callExecutionId: given ? given.callExecutionIds[i] : null,
      ongoing: "none",
      resultSent: false,
      result: item.outcome === null ? null : resultOf(item.outcome),
      recordings: recordingSteps(item.recordings),
    })),
    state: "pending",
    attempts: 0,
    lastError: null,
    problems: [],
  };
  writeEntry(root, entry);
  return entry;
}

function callOf(entry: OutboxEntry, scenarioKey: string): CallStep {
  const call = entry.calls.find((c) => c.scenarioKey === scenarioKey);
  if (!call) {
    throw new RangeError(
      `Cannot find the scenario ${JSON.stringify(scenarioKey)} in report ${entry.id}`,
    );
  }
  return call;
}

/** A live scenario started (as run `runId`): its ONGOING ping goes with the next delivery. */
export function scenarioStarted(scenarioKey: string, runId: string) {
  return (entry: OutboxEntry): void => {
    const call = callOf(entry, scenarioKey);
    call.runId = runId;
    if (call.ongoing === "none" && !call.resultSent) call.ongoing = "pending";
  };
}

/** A live scenario finished: its result and recordings go with the next delivery. */
export function scenarioFinished(
  scenarioKey: string,
  report: {
    runId: string | null;
    outcome: ScenarioOutcome;
    recordings: readonly RecordingSource[];
  },
) {
  return (entry: OutboxEntry): void => {
    const call = callOf(entry, scenarioKey);
    if (call.resultSent) {
      throw new RangeError(`Cannot change the result of ${scenarioKey}: the platform has it`);
    }
    call.runId = report.runId ?? call.runId;
    call.result = resultOf({ ...report.outcome, scenario: scenarioKey });
    call.recordings = recordingSteps(report.recordings);
  };
}

/**
 * Changes an entry under its lock (waiting for a delivery in progress to finish) and writes it
 * back. Throws a RangeError when the entry is gone or unreadable.
 */
export async function updateReport(
  root: DataRoot,
  id: string,
  change: (entry: OutboxEntry) => void,
  options: { waitMs?: number } = {},
): Promise<OutboxEntry> {
  const deadline = Date.now() + (options.waitMs ?? 30_000);
  let lock = lockEntry(root, id);
  while (lock === null) {
    if (Date.now() >= deadline) {
      throw new RangeError(`Cannot change report ${id}: another process holds it`);
    }
    await sleep(25);
    lock = lockEntry(root, id);
  }
  using _held = lock;
  const read = readEntry(root, id);
  if (read === null) throw new RangeError(`Cannot change report ${id}: it is not in the outbox`);
  if (!read.ok) throw new RangeError(`Cannot change report ${id}: ${read.reason}`);
  change(read.entry);
  writeEntry(root, read.entry);
  return read.entry;
}
