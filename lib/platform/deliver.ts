// Reports, from the outbox to the platform: report_entry.ts writes every step a report needs
// before anything is sent; deliverEntry() walks the steps (provision, start, batch, then per
// scenario: its ONGOING ping when one is due, its result once it has one, its recordings),
// saving each acknowledgement before the next request, retrying what may pass and stopping on
// what will not. Every request carries an Idempotency-Key that is the same on every resume, so a
// platform that honours it never applies a step twice; a result is a PATCH of its own call, so
// even one that does not ends with one result per call. Once every scenario's result is
// acknowledged the report is remembered in platform.json (where each run went) and only then
// removed from the outbox: a crash between the two leaves an entry whose resume sends nothing.
// Nothing here fails a run or touches its files: the outcome says what was reported, what is
// pending and why.
import { sleep } from "../core/clock.ts";
import { describeError, PlatformError } from "../core/errors.ts";
import type { DataRoot } from "../store/mod.ts";
import type { PlatformClient } from "./client.ts";
import { RecordingChangedError } from "./multipart.ts";
import {
  listEntryIds,
  lockEntry,
  type OutboxEntry,
  readEntry,
  removeEntry,
  writeEntry,
} from "./outbox.ts";
import { forgetTest, rememberReport } from "./reported.ts";
import { type RetryPolicy, withRetry } from "../net/retry.ts";
import { dashboardPath, type StartBody } from "./wire.ts";

/**
 * "reported": every scenario is on the platform; "open": a live report whose remaining scenarios
 * have not finished (all that is ready was sent); "pending": to be tried again; "refused": the
 * platform said no; "busy": another process is sending it; "unreadable": its file is damaged.
 */
export type ReportState = "reported" | "open" | "pending" | "refused" | "busy" | "unreadable";

export interface ReportOutcome {
  /** The outbox id. */
  id: string;
  name: string | null;
  state: ReportState;
  /** The runs behind its scenarios (a live scenario not started yet has none). */
  runIds: string[];
  runTestId: string | null;
  testExecutionId: string | null;
  /** The dashboard path of the execution. */
  url: string | null;
  /** Run id → call execution id, for every run whose result the platform acknowledged. */
  calls: Record<string, string>;
  /** What did not go through in a report that otherwise did (a recording, say). */
  problems: string[];
  /** Why it is pending, refused, busy or unreadable. */
  reason: string | null;
  /** What to do about it, when the platform's answer suggests something. */
  hint: string | null;
}

/**
 * How often a platform call is tried: five times over about eight seconds of backoff at most,
 * and a Retry-After of up to two minutes is waited for; a longer one leaves the report pending.
 */
export const PLATFORM_RETRY: RetryPolicy = {
  attempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
};

/** A platform failure that may pass: unreachable, 408, 429 or 5xx (client.ts decides). */
function isRetriable(error: unknown): boolean {
  return error instanceof PlatformError && error.transient;
}

function retryAfterOf(error: unknown): number | null {
  const value = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof value === "number" ? value : null;
}

export interface DeliverOptions {
  retry?: RetryPolicy;
  /** Told before each retry wait, for a progress line. */
  onRetry?: (message: string, waitMs: number) => void;
  /** Also try reports the platform refused before. */
  retryRefused?: boolean;
}

function outcomeOf(
  entry: OutboxEntry,
  state: ReportState,
  reason: string | null,
  hint: string | null = null,
): ReportOutcome {
  const calls: Record<string, string> = {};
  for (const call of entry.calls) {
    if (call.resultSent && call.callExecutionId && call.runId) {
      calls[call.runId] = call.callExecutionId;
    }
  }
  return {
    id: entry.id,
    name: entry.name,
    state,
    runIds: runIdsOf(entry),
    runTestId: entry.runTestId,
    testExecutionId: entry.testExecutionId,
    url: entry.runTestId ? dashboardPath(entry.runTestId, entry.testExecutionId) : null,
    calls,
    problems: [...entry.problems],
    reason,
    hint,
  };
}

function runIdsOf(entry: OutboxEntry): string[] {
  return entry.calls.flatMap((call) => call.runId === null ? [] : [call.runId]);
}

function startBody(entry: OutboxEntry): StartBody {
  const body: StartBody = {};
  if (entry.scenarioIds.length) body.scenario_ids = entry.scenarioIds;
  if (entry.jobId) body.harness_job_id = entry.jobId;
  if (entry.selectors.length) body.scenario_selectors = entry.selectors;
  return body;
}

interface Steps {
  root: DataRoot;
  entry: OutboxEntry;
  client: PlatformClient;
  save: () => void;
  retry: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** An idempotency key per step: the same on every resume of the same report. */
function stepKey(entry: OutboxEntry, step: string): string {
  return `reins-${entry.id}-${step}`;
}

async function provisionAndStart(steps: Steps): Promise<void> {
  const { root, entry, client, save, retry } = steps;
  if (entry.runTestId === null) {
    const key = stepKey(entry, `provision-${entry.provisions + 1}`);
    const provisioned = await retry(() => client.provision(entry.provision, key));
    entry.provisions++;
    entry.runTestId = provisioned.run_test_id;
    entry.runTestSource = "provisioned";
    entry.scenarioIds = provisioned.scenario_ids;
    save();
  }
  if (entry.testExecutionId !== null) return;
  const runTestId = entry.runTestId;
  let started: { test_execution_id: string };
  try {
    started = await retry(() =>
      client.start(runTestId, startBody(entry), stepKey(entry, `start-${runTestId}`))
    );
  } catch (error) {
    // A remembered test the platform no longer has: forget it and provision a new one.
    if (
      error instanceof PlatformError && error.status === 404 && entry.runTestSource === "remembered"
    ) {
      forgetTest(root, entry.baseUrl, entry.name, runTestId);
      entry.runTestId = null;
      entry.runTestSource = null;
      entry.scenarioIds = [];
      save();
      return provisionAndStart(steps);
    }
    throw error;
  }
  entry.testExecutionId = started.test_execution_id;
  save();
}

async function runSteps(steps: Steps): Promise<void> {
  const { entry, client, save, retry } = steps;
  await provisionAndStart(steps);
  if (!entry.allocated) {
    const executionId = entry.testExecutionId!;
    const claimed = await retry(() =>
      client.batch(executionId, Math.max(1, entry.calls.length), stepKey(entry, "batch"))
    );
    const ids = claimed.call_execution_ids;
    entry.calls.forEach((call, i) => call.callExecutionId = ids[i] ?? null);
    if (ids.length < entry.calls.length) {
      entry.problems.push(
        `the platform allocated ${ids.length} calls for ${entry.calls.length} runs, ` +
          `so ${entry.calls.slice(ids.length).map((c) => c.runId).join(", ")} were not reported`,
      );
    }
    entry.allocated = true;
    save();
  }
  for (const call of entry.calls) {
    const callId = call.callExecutionId;
    if (callId === null) continue;
    if (call.ongoing === "pending" && !call.resultSent) {
      // Presentation state, not evidence: one try, and a refusal is not worth stopping for.
      try {
        await client.ongoing(callId, stepKey(entry, `ongoing-${callId}`));
        call.ongoing = "sent";
      } catch (error) {
        if (!(error instanceof PlatformError)) throw error;
        call.ongoing = "skipped";
      }
      // A live scenario's ping is saved before its result exists; a crash right after it only
      // means a ping the platform ignores (it applies one to a pending call only).
      if (call.result === null) save();
    }
    const result = call.result;
    if (result === null) continue;
    if (!call.resultSent) {
      await retry(() => client.result(callId, result, stepKey(entry, `result-${callId}`)));
      call.resultSent = true;
      save();
    }
    for (const [index, recording] of call.recordings.entries()) {
      if (recording.state !== "pending") continue;
      try {
        await retry(() =>
          client.recording(callId, recording, stepKey(entry, `recording-${callId}-${index}`))
        );
        recording.state = "sent";
      } catch (error) {
        const permanent = error instanceof RecordingChangedError ||
          error instanceof Deno.errors.NotFound ||
          error instanceof Deno.errors.NotCapable ||
          (error instanceof PlatformError && !error.transient);
        if (!permanent) throw error;
        const why = error instanceof Deno.errors.NotFound
          ? `the file ${recording.path} is gone`
          : error instanceof Deno.errors.NotCapable
          ? `the sandbox may not read ${recording.path} (attach files with reins run --attach)`
          : describeError(error);
        recording.state = "failed";
        recording.reason = why;
        entry.problems.push(
          `recording ${recording.name} of ${call.runId ? `run ${call.runId}` : call.scenarioKey} ` +
            `not sent: ${why}`,
        );
      }
      save();
    }
  }
}

/**
 * The entry's delivery lock, waiting a moment for a holder that is just finishing (another
 * reins process closing its last step) before calling the entry busy.
 */
async function lockEntrySoon(
  root: DataRoot,
  id: string,
  waitMs = 500,
): Promise<Disposable | null> {
  const deadline = Date.now() + waitMs;
  while (true) {
    const lock = lockEntry(root, id);
    if (lock !== null || Date.now() >= deadline) return lock;
    await sleep(25);
  }
}

/**
 * Delivers one report from the outbox, resuming after its last acknowledged step. Returns its
 * outcome; throws only for what is not the platform's doing (a refused sandbox permission, a bug).
 */
export async function deliverEntry(
  root: DataRoot,
  id: string,
  client: PlatformClient,
  options: DeliverOptions = {},
): Promise<ReportOutcome> {
  const blank = (state: ReportState, reason: string): ReportOutcome => ({
    id,
    name: null,
    state,
    runIds: [],
    runTestId: null,
    testExecutionId: null,
    url: null,
    calls: {},
    problems: [],
    reason,
    hint: null,
  });
  using lock = await lockEntrySoon(root, id);
  if (lock === null) {
    const read = readEntry(root, id);
    const busy = "another reins process is sending it now";
    return read?.ok ? outcomeOf(read.entry, "busy", busy) : blank("busy", busy);
  }
  const read = readEntry(root, id);
  if (read === null) return blank("reported", "another reins process sent it");
  if (!read.ok) return blank("unreadable", `outbox/${id}.json cannot be used: ${read.reason}`);
  const entry = read.entry;
  if (entry.state === "refused" && !options.retryRefused) {
    return outcomeOf(entry, "refused", entry.lastError);
  }
  const target = client.target;
  if (entry.baseUrl !== target.url || entry.workspaceId !== target.workspaceId) {
    const where = (url: string, workspace: string | null) =>
      `${url}${workspace ? ` (workspace ${workspace})` : ""}`;
    return outcomeOf(
      entry,
      "pending",
      `it is for ${where(entry.baseUrl, entry.workspaceId)}, and the settings now point at ${
        where(target.url, target.workspaceId)
      }`,
    );
  }
  entry.state = "pending";
  const save = () => writeEntry(root, entry);
  const policy = options.retry ?? PLATFORM_RETRY;
  const retry = <T>(fn: () => Promise<T>) =>
    withRetry(fn, policy, {
      isRetriable,
      retryAfterMs: retryAfterOf,
      onRetry: (error, waitMs) => options.onRetry?.((error as Error).message, waitMs),
    });
  try {
    await runSteps({ root, entry, client, save, retry });
  } catch (error) {
    if (error instanceof PlatformError) {
      entry.attempts++;
      entry.lastError = error.message;
      if (!error.transient) entry.state = "refused";
      save();
      return outcomeOf(entry, entry.state, error.message, error.hint ?? null);
    }
    entry.lastError = describeError(error);
    save();
    throw error;
  }
  const unfinished = entry.calls.filter((call) => call.result === null && call.callExecutionId);
  if (unfinished.length > 0) {
    save();
    return outcomeOf(
      entry,
      "open",
      `${unfinished.length} of ${entry.calls.length} scenarios have not finished yet`,
    );
  }
  const reportedMs = Date.now();
  const calls = outcomeOf(entry, "reported", null);
  rememberReport(root, {
    test: {
      base_url: entry.baseUrl,
      modality: entry.provision.modality,
      name: entry.name,
      run_test_id: entry.runTestId!,
      scenario_keys: entry.calls.map((call) => call.scenarioKey),
      test_execution_id: entry.testExecutionId,
      url: calls.url!,
    },
    runs: Object.fromEntries(
      Object.entries(calls.calls).map(([runId, callId]) => [runId, {
        base_url: entry.baseUrl,
        workspace_id: entry.workspaceId,
        name: entry.name,
        run_test_id: entry.runTestId!,
        test_execution_id: entry.testExecutionId!,
        call_execution_id: callId,
        url: calls.url!,
        reported_ms: reportedMs,
      }]),
    ),
  });
  removeEntry(root, id);
  return calls;
}

/** The outbox reports (pending or refused) that include any of `runIds`, oldest first. */
export function entriesFor(
  root: DataRoot,
  runIds: readonly string[],
): { id: string; name: string; state: OutboxEntry["state"]; runIds: string[] }[] {
  const wanted = new Set(runIds);
  const found: { id: string; name: string; state: OutboxEntry["state"]; runIds: string[] }[] = [];
  for (const id of listEntryIds(root)) {
    const read = readEntry(root, id);
    if (!read?.ok) continue;
    const ids = runIdsOf(read.entry);
    if (!ids.some((runId) => wanted.has(runId))) continue;
    found.push({ id, name: read.entry.name, state: read.entry.state, runIds: ids });
  }
  return found;
}

/** Delivers every report in the outbox (refused ones only with `retryRefused`), oldest first. */
export async function deliverPending(
  root: DataRoot,
  client: PlatformClient,
  options: DeliverOptions & { skip?: ReadonlySet<string> } = {},
): Promise<ReportOutcome[]> {
  const outcomes: ReportOutcome[] = [];
  for (const id of listEntryIds(root)) {
    if (options.skip?.has(id)) continue;
    outcomes.push(await deliverEntry(root, id, client, options));
  }
  return outcomes;
}
