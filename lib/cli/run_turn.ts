// One recorded turn, the core of `reins run` and `reins replay`: resolve the context's session,
// create the run, drive the driver with a recording sink, stop it on SIGINT/SIGTERM or the
// timeout, and settle the run from what happened. It prints nothing itself but the warnings it
// is handed a function for.
import type { DriverName, Settings } from "../core/config.ts";
import { describeError } from "../core/errors.ts";
import { newId } from "../core/ids.ts";
import { joinPath } from "../core/paths.ts";
import { appendPrivateLine } from "../core/private_files.ts";
import { ContextMap } from "../store/contexts.ts";
import type { EventInput, RunEvent, Trigger, Usage } from "../store/contracts.ts";
import { createRun, resolveRunId, sessionEvents } from "../store/runs.ts";
import type {
  ApprovalPolicy,
  Budget,
  Driver,
  DriverInput,
  DriverResult,
  EventSink,
} from "../drivers/driver.ts";
import { createDriver } from "../drivers/registry.ts";
import { logDecisions } from "./decisions.ts";

const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;
const KILL_GRACE_MS = 5_000;

export interface TurnRequest {
  home: string;
  settings: Settings;
  driverName: DriverName;
  /** A ready driver (replay brings one with its recorded model); else made from driverName. */
  driver?: Driver;
  prompt: string;
  /** Absolute, existing directory. */
  cwd: string;
  contextId: string | null;
  approval: ApprovalPolicy;
  budget: Budget;
  timeoutSeconds: number | null;
  model: string | null;
  baseUrl: string | null;
  exec: string | null;
  idleTimeoutSeconds: number | null;
  parentRunId: string | null;
  trigger: Trigger;
  relation?: string | null;
  resumedFromRunId?: string | null;
  /**
   * The conversation so far, when the caller knows it better than the context does (a replay of
   * a resumed turn brings the turns before it); else it comes from the context's session.
   */
  history?: readonly EventInput[];
  /** Files to copy into the run before it starts (absolute paths). */
  attachments: readonly string[];
  /** A message for people (stderr). */
  warn(message: string): void;
  /** Each event as it is stored (for --events and the progress line). */
  onEvent?(event: RunEvent): void;
  /** Called once the run exists, before the driver starts. */
  onCreated?(runId: string): void | Promise<void>;
}

export interface RunSummary {
  runId: string;
  status: "completed" | "failed" | "interrupted";
  sessionId: string;
  contextId: string | null;
  result: string | null;
  reason: string | null;
  usage: Usage | null;
  costUsd: number | null;
}

export interface TurnOutcome {
  summary: RunSummary;
  /** Protocol lines (or other input) that were refused and kept as `problem` events. */
  problems: number;
  /** What the driver threw, if it threw (the run is then `failed` with its message). */
  error: unknown;
}

/** Runs one turn and records it; resolves when the run has settled. */
export async function executeRun(request: TurnRequest): Promise<TurnOutcome> {
  const { home, settings, driverName } = request;
  let driver: Driver;
  if (request.driver) {
    driver = request.driver;
  } else if (driverName === "loop") {
    // The loop serves `--model replay:RUN` from this data root's recordings; a bad --model fails
    // here, before a run is recorded.
    const loop = await import("../drivers/loop/mod.ts");
    if (request.model?.startsWith("replay:") && request.model.length > 7) {
      // Pin `replay:last` (or a prefix) to its run now: once this run exists, "last" is itself.
      request = { ...request, model: `replay:${resolveRunId(home, request.model.slice(7))}` };
    }
    const loadRecording = (await import("../session/replay.ts")).recordingLoader(home);
    await loop.checkModelSpec(request.model, settings, { baseUrl: request.baseUrl, loadRecording });
    driver = loop.createLoopDriver({ resolve: { loadRecording } });
  } else {
    driver = await createDriver(driverName, settings);
  }

  // The context's session: resume it when it was made by this driver, else start afresh.
  const contexts = new ContextMap(home, (message) => {
    request.warn(message);
    try {
      appendPrivateLine(
        home,
        joinPath(home, "logs", "reins.log"),
        `${new Date().toISOString()} ${message}`,
      );
    } catch { /* the log is as unwritable as the rest */ }
  });
  const { contextId } = request;
  const entry = contextId === null ? null : contexts.get(contextId);
  let resume: DriverInput["resume"] = null;
  if (entry && entry.driver === driver.name) {
    resume = { sessionId: entry.session_id, nativeSessionId: entry.native_session_id };
  } else if (entry) {
    request.warn(
      `context '${contextId}' was last used with --driver ${entry.driver}; starting a fresh ${driver.name} session`,
    );
  }
  const sessionId = resume?.sessionId ?? newId();
  // The built-in loop rebuilds its history from the session's earlier runs; codex needs them
  // to turn its thread-wide usage totals into this turn's. Other harnesses keep their own.
  const history = request.history ??
    (resume && (driver.name === "loop" || driver.name === "codex")
      ? sessionEvents(home, sessionId)
      : []);

  const writer = createRun(home, {
    sessionId,
    contextId,
    nativeSessionId: resume?.nativeSessionId ?? null,
    parentRunId: request.parentRunId,
    resumedFromRunId: request.resumedFromRunId ?? null,
    relation: request.relation ?? (resume ? "resume" : null),
    harness: driver.harness,
    driver: driver.name,
    trigger: request.trigger,
    cwd: request.cwd,
    goal: request.prompt,
    resumeOf: resume ? sessionId : request.resumedFromRunId ?? null,
  });
  const runId = writer.runId;
  let nativeSessionId = resume?.nativeSessionId ?? null;
  const remember = () => {
    if (contextId === null) return;
    contexts.put(contextId, {
      sessionId,
      nativeSessionId,
      harness: driver.harness,
      driver: driver.name,
    });
  };
  remember();

  let problems = 0;
  const record = (event: EventInput): RunEvent => {
    const stored = writer.append(event);
    if (stored.type === "problem") problems++;
    request.onEvent?.(stored);
    if (stored.type === "session.linked" && stored.payload.nativeSessionId !== nativeSessionId) {
      nativeSessionId = stored.payload.nativeSessionId;
      remember();
    }
    return stored;
  };
  request.onEvent?.(writer.started);
  const sink: EventSink = { emit: (event) => void record(event) };

  const stop = new AbortController();
  const kill = new AbortController();
  let stopReason: string | null = null;
  let timedOut = false;
  const onSignal = (signal: string) => () => {
    if (stop.signal.aborted) {
      kill.abort();
      return;
    }
    stopReason = `stopped by ${signal}`;
    request.warn(`stopping run ${runId} (${signal}); press Ctrl-C again to kill it now`);
    stop.abort();
    setTimeout(() => kill.abort(), KILL_GRACE_MS).unref?.();
  };
  const handlers = STOP_SIGNALS.map((signal) => [signal, onSignal(signal)] as const);
  for (const [signal, handler] of handlers) Deno.addSignalListener(signal, handler);
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const timer = request.timeoutSeconds === null ? undefined : setTimeout(() => {
    timedOut = true;
    stop.abort();
    graceTimer = setTimeout(() => kill.abort(), KILL_GRACE_MS);
  }, request.timeoutSeconds * 1000);

  let result: DriverResult;
  let error: unknown = null;
  try {
    await request.onCreated?.(runId);
    for (const file of request.attachments) {
      const { attachFile } = await import("../platform/attachments.ts");
      record({ type: "attachment.added", payload: await attachFile(home, runId, file) });
    }
    result = await driver.start(
      {
        prompt: request.prompt,
        cwd: request.cwd,
        runId,
        sessionId,
        contextId,
        resume,
        history,
        approval: request.approval,
        budget: request.budget,
        model: request.model,
        baseUrl: request.baseUrl,
        exec: request.exec,
        env: {},
        settings,
        decisions: logDecisions(home, runId, record),
        idleTimeoutSeconds: request.idleTimeoutSeconds,
        kill: kill.signal,
      },
      sink,
      stop.signal,
    );
  } catch (thrown) {
    error = thrown;
    result = { status: "failed", reason: describeError(thrown), result: null, exitCode: null };
  } finally {
    clearTimeout(timer);
    clearTimeout(graceTimer);
    for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
  }
  if (timedOut) {
    // Keep what the driver said of how it stopped (the CLI's name, its last words).
    const how = result.reason ? `: ${result.reason}` : "";
    result = {
      ...result,
      status: "failed",
      reason: `timed out after ${request.timeoutSeconds} s${how}`,
    };
  } else if (stopReason !== null && result.status !== "failed") {
    result = { ...result, status: "interrupted", reason: result.reason ?? stopReason };
  }

  for (const file of result.attachments ?? []) {
    try {
      const { attachFile } = await import("../platform/attachments.ts");
      record({ type: "attachment.added", payload: await attachFile(home, runId, file) });
    } catch (thrown) {
      record({
        type: "problem",
        payload: {
          source: driver.name,
          reason: `a declared attachment was not kept: ${describeError(thrown)}`,
          text: file,
        },
      });
    }
  }
  switch (result.status) {
    case "completed":
      record({ type: "completed", payload: { reason: result.reason, result: result.result } });
      break;
    case "failed":
      record({ type: "failed", payload: { reason: result.reason, result: result.result } });
      break;
    case "interrupted":
      record({ type: "status.changed", payload: { status: "interrupted", reason: result.reason } });
      break;
  }
  if (result.exitCode !== null) writer.update({ exitCode: result.exitCode });
  const usage = writer.lastUsage();
  writer.close();
  return {
    summary: {
      runId,
      status: result.status,
      sessionId,
      contextId,
      result: result.result,
      reason: result.reason,
      usage,
      costUsd: usage?.costUsd ?? null,
    },
    problems,
    error,
  };
}
