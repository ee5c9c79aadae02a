// One recorded turn: take the context (one turn per context at a time), resolve its session,
// create the run, drive the driver with a recording sink, stop it when the caller's signals or the
// turn's timeout say so, and settle the run from what happened. Everything it keeps lives in this
// call, so any number of turns run at once in one process; it installs no signal handler and
// prints nothing (hooks.warn gets what people should hear).
import { importLazily } from "../core/lazy_import.ts";
import type { AgentProcess, BudgetLedger, Settings } from "../core/mod.ts";
import { describeError, NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { newId, safeName } from "../core/ids.ts";
import { isInside, resolvePath } from "../core/paths.ts";
import type { Driver, DriverInput, DriverResult, EventSink } from "../drivers/mod.ts";
import type { EventInput, RunEvent, RunWriter, Store } from "../store/mod.ts";
import { loadSqlite } from "../core/sqlite.ts";
import { endpointConfigured } from "../otel/target.ts";
import { continuedAgent, prepareAgent } from "./agent.ts";
import { ContextLock } from "./context_lock.ts";
import { logDecisions } from "./decisions.ts";
import { settle, type Settlement, stopReasonOf, summarize } from "./settle.ts";
import type { TurnHooks, TurnOutcome, TurnRequest, TurnSignals } from "./types.ts";
import { snapshotAtRunStart } from "../snapshot/run_start.ts";
import type { ConfinementSetup, ConfineRequest, OpenConfinement } from "../confine/mod.ts";
import { allowedHosts } from "../confine/allow_host.ts";
import { openConfinement } from "../confine/confinement.ts";
import { requireConfinement } from "../confine/probe.ts";
import { keepsHarnessState } from "../confine/stores.ts";
import {
  bindGateway,
  BUDGET_STOP_GRACE_MS,
  decideGateway,
  type GatewayDecision,
  type TurnGateway,
  turnLedger,
} from "./gateway_use.ts";

/** How long a timed-out agent is given to stop before it is killed. */
const KILL_GRACE_MS = 5_000;

/**
 * Runs one turn and records it; resolves when the run has settled (and onSettled has run, and
 * the run was exported to the OpenTelemetry collector, if one is configured).
 * Throws, with no run recorded, for a request that cannot start: a bad cwd or context id, a bad
 * loop model, a busy context with `contextBusy: "fail"`, or a stop while waiting for the context.
 */
export async function runTurn(
  store: Store,
  settings: Settings,
  request: TurnRequest,
  signals: TurnSignals,
  hooks: TurnHooks = {},
): Promise<TurnOutcome> {
  checkRequest(request);
  if (signals.stop.aborted) {
    throw new ReinsError("run_failed", "Stopped before the turn started: no run was started");
  }
  // Refused before any run exists where agents cannot be confined: never a silent unconfined run.
  const confine = confineRequestOf(settings, request);
  if (confine !== null) await requireConfinement();
  const asked = await continuedAgent(store, request.agent, request.contextId);
  const prepared = request.driver
    ? { driver: request.driver, agent: asked }
    : await prepareAgent(store, settings, asked);
  // Through the model gateway, a harness is held to its whole budget; otherwise what of the
  // budget the agent cannot be held to is said before anything runs, never ignored.
  const gateway = await decideGateway(
    settings,
    { ...request, agent: prepared.agent },
    prepared.driver,
  );
  if (gateway?.use.enabled !== true) {
    for (
      const note of prepared.driver.budgetNotes?.({
        budget: request.budget,
        agent: prepared.agent,
        settings,
      }) ?? []
    ) {
      hooks.warn?.(note);
    }
  }
  for (const note of prepared.driver.costNotes?.({ agent: prepared.agent, settings }) ?? []) {
    hooks.warn?.(note);
  }
  const lock = request.contextId === null ? null : await ContextLock.acquire(
    store,
    request.contextId,
    { busy: request.contextBusy ?? "wait", signal: signals.stop, onBusy: hooks.onContextBusy },
  );
  let outcome: TurnOutcome;
  let early: OpenConfinement | null = null;
  try {
    // Opened before the run is made, the agent's sandbox started ahead of it: the run's own
    // setup (its files, the snapshot, the gateway) hides bubblewrap's start (lib/confine/warm.ts).
    if (confine !== null) {
      early = await openEarly(store, settings, request, prepared.driver, confine);
    }
    outcome = await recordTurn(store, settings, { ...request, agent: prepared.agent }, {
      driver: prepared.driver,
      lock,
      signals,
      hooks,
      gateway,
      confine,
      confined: early,
    });
  } finally {
    await early?.close();
    lock?.release();
  }
  if (hooks.onSettled) {
    try {
      await hooks.onSettled(outcome.summary);
    } catch (error) {
      hooks.warn?.(
        `after run ${outcome.summary.runId} settled: ${describeError(error)}`,
      );
    }
  }
  if (endpointConfigured(settings.otel)) {
    // Every settled run goes to the OpenTelemetry collector configured (docs/otel.md): within a
    // bounded time, never throwing, what does not go out waiting in the outbox.
    const { exportSettledRun } = await importLazily<typeof import("../otel/export.ts")>(
      "otel/export.ts",
    );
    await exportSettledRun(store, settings, outcome.summary.runId, (m) => hooks.warn?.(m));
  }
  return outcome;
}

/**
 * The turn's confinement opened before its run exists, with a sandbox started ahead for an agent
 * the driver spawns (not the loop's: it runs in reins); null where it must wait for the run (a
 * harness's state with no context lives in the run's directory) or could not be opened here —
 * then the turn opens it itself, and a failure is the run's.
 */
async function openEarly(
  store: Store,
  settings: Settings,
  request: TurnRequest,
  driver: Driver,
  confine: ConfineRequest,
): Promise<OpenConfinement | null> {
  if (request.contextId === null && keepsHarnessState(driver.name)) return null;
  try {
    return await openConfinement(confine, {
      ...confineSetup(store, settings, driver.name, request.contextId, null),
      ...(driver.name === "loop" ? {} : { agentCwd: request.cwd }),
    });
  } catch {
    return null;
  }
}

function confineSetup(
  store: Store,
  settings: Settings,
  driver: string,
  contextId: string | null,
  runId: string | null,
): ConfinementSetup {
  return {
    dataRoot: store.home,
    userHome: settings.harnessEnv.HOME ?? "/",
    vars: settings.harnessEnv,
    driver,
    stateDir: contextId !== null
      ? store.layout.harnessState(contextId, driver)
      : runId !== null
      ? store.layout.runHarnessState(runId, driver)
      : null,
    socketParent: store.layout.tmp(),
    gatewayPort: null,
  };
}

/** The turn's confinement, from the request and the config; null: it runs unconfined. */
function confineRequestOf(settings: Settings, request: TurnRequest): ConfineRequest | null {
  if (!(request.confine ?? settings.confine.enabled)) return null;
  const allowHosts = allowedHosts(
    { allowHosts: settings.confine.allowHosts, path: settings.configPath },
    request.allowHosts ?? [],
    "--allow-host HOST or HOST:PORT",
  );
  return { allowHosts, hide: settings.confine.hide };
}

function checkRequest(request: TurnRequest): void {
  if (request.contextId !== null) safeName(request.contextId, "context id");
  if (!request.cwd.startsWith("/")) {
    throw new UsageError(`Cannot run a turn in ${JSON.stringify(request.cwd)}: not absolute`, {
      hint: "give the working directory as an absolute path",
    });
  }
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(request.cwd);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`The working directory ${request.cwd} does not exist`, {
        hint: "create it, or give another one",
      });
    }
    throw error;
  }
  if (!info.isDirectory) throw new UsageError(`The working directory ${request.cwd} is not one`);
}

interface TurnParts {
  driver: Driver;
  lock: ContextLock | null;
  signals: TurnSignals;
  hooks: TurnHooks;
  gateway: GatewayDecision;
  confine: ConfineRequest | null;
  /** The confinement opened before the run (openEarly), if it was. */
  confined: OpenConfinement | null;
}

async function recordTurn(
  store: Store,
  settings: Settings,
  request: TurnRequest,
  parts: TurnParts,
): Promise<TurnOutcome> {
  const { driver, hooks } = parts;
  const { contextId } = request;

  // The context's sessions (under its lock): each driver keeps its own, so this driver resumes
  // the one it made there, whichever drivers ran on the context in between.
  // A context whose directory the lock made is new: no session to look up.
  const fresh = parts.lock?.made ?? false;
  const context = contextId === null ? null : store.contexts.get(contextId, { fresh });
  const own = context?.sessions.find((session) => session.driver === driver.name) ?? null;
  let resume: DriverInput["resume"] = null;
  if (own) {
    resume = { sessionId: own.session_id, nativeSessionId: own.native_session_id };
  } else if (context && driver.name !== "loop") {
    hooks.warn?.(
      `context '${contextId}' has no ${driver.name} session yet: starting one (its ${
        context.sessions.map((session) => session.driver).join(", ")
      } session${context.sessions.length === 1 ? " is" : "s are"} kept for their drivers)`,
    );
  }
  // A context used before has runs to look up in the index (the run resumed, the history).
  if (context !== null) await loadSqlite();
  const sessionId = resume?.sessionId ?? newId();
  // The run this turn continues: the last of the session it resumes.
  const resumedFromRunId = request.resumedFromRunId ??
    (resume ? store.listRuns({ sessionId, limit: 1 })[0]?.id ?? null : null);
  // The built-in loop rebuilds its history from the context's recorded turns, whichever driver
  // ran them; codex needs its own session's runs to turn its thread-wide usage totals into this
  // turn's. Other harnesses keep their own history.
  const history = request.history ??
    (driver.name === "loop" && context
      ? store.conversationEvents(context.sessions.map((session) => session.session_id))
      : resume && driver.name === "codex"
      ? store.sessionEvents(sessionId)
      : []);

  const writer = store.createRun({
    sessionId,
    contextId,
    nativeSessionId: resume?.nativeSessionId ?? null,
    parentRunId: request.parentRunId,
    resumedFromRunId,
    relation: request.relation ?? (resume ? "resume" : null),
    harness: driver.harness,
    driver: driver.name,
    trigger: request.trigger,
    cwd: request.cwd,
    goal: request.prompt,
    ...(request.promptMessageId === undefined ? {} : { messageId: request.promptMessageId }),
    resumeOf: resume ? sessionId : resumedFromRunId,
    agent: driver.agentFacts?.({ agent: request.agent, settings }),
    gateway: parts.gateway?.use,
    ...(Object.values(request.budget).some((limit) => limit !== undefined)
      ? {
        budget: Object.fromEntries(
          Object.entries(request.budget).filter(([, limit]) => limit !== undefined),
        ),
      }
      : {}),
  });
  const ledger = turnLedger(
    store,
    request,
    context?.sessions.map((session) => session.session_id) ?? [],
  );
  try {
    return await driveAndSettle(store, settings, request, parts, {
      writer,
      sessionId,
      resume,
      history,
      ledger,
      fresh,
      contextDir: parts.lock?.directory,
    });
  } finally {
    writer.close();
  }
}

interface RunParts {
  writer: RunWriter;
  sessionId: string;
  resume: DriverInput["resume"];
  history: readonly EventInput[];
  ledger: BudgetLedger;
  /** The context's directory was made by this turn's lock: its first session write reads nothing. */
  fresh: boolean;
  /** The context's directory, held open by the turn's lock (its session's writes fsync it). */
  contextDir: Deno.FsFile | undefined;
}

async function driveAndSettle(
  store: Store,
  settings: Settings,
  request: TurnRequest,
  { driver, signals, hooks, gateway, confine, confined: early }: TurnParts,
  { writer, sessionId, resume, history, ledger, fresh, contextDir }: RunParts,
): Promise<TurnOutcome> {
  const { runId } = writer;
  const { contextId } = request;
  let nativeSessionId = resume?.nativeSessionId ?? null;
  // The context's session is written as it changes, one write after another (the context's lock
  // keeps other turns off it), its fsyncs on Deno's blocking pool while the agent starts and
  // runs; the run settles only once the last is durable.
  let remembered: Promise<unknown> = Promise.resolve();
  let first = true;
  const remember = () => {
    if (contextId === null) return;
    const session = { sessionId, nativeSessionId, harness: driver.harness, driver: driver.name };
    // Into a directory the lock made, the first write has nothing there to merge with.
    const options = { fresh: first && fresh, dir: contextDir };
    first = false;
    remembered = remembered.then(() =>
      store.contexts.putAsync(contextId, session, Date.now(), options)
    );
  };
  remember();

  let problems = 0;
  const record = (event: EventInput): RunEvent => {
    const stored = writer.append(event);
    if (stored.type === "problem") problems++;
    hooks.onEvent?.(stored);
    if (stored.type === "session.linked" && stored.payload.nativeSessionId !== nativeSessionId) {
      nativeSessionId = stored.payload.nativeSessionId;
      remember();
    }
    return stored;
  };
  hooks.onEvent?.(writer.started);
  const sink: EventSink = { emit: (event) => void record(event) };

  // The turn's own timeout stops (then kills) the agent like the caller's signals do.
  const timeoutStop = new AbortController();
  const timeoutKill = new AbortController();
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const timer = request.timeoutSeconds === null ? undefined : setTimeout(() => {
    timeoutStop.abort();
    graceTimer = setTimeout(() => timeoutKill.abort(), KILL_GRACE_MS);
  }, request.timeoutSeconds * 1000);
  // A harness whose model call the budget refused is given a while to stop by itself (its CLI
  // reads the refusal as the provider's error), then stopped.
  const budgetStop = new AbortController();
  let budgetTimer: ReturnType<typeof setTimeout> | undefined;
  // Set when reins ended a CLI that kept retrying a failing model server.
  let upstreamGaveUp: string | null = null;
  const stop = AbortSignal.any([signals.stop, timeoutStop.signal, budgetStop.signal]);
  const kill = AbortSignal.any([signals.kill, timeoutKill.signal]);

  let ended: { result: DriverResult } | { error: unknown };
  let turnGateway: TurnGateway | null = null;
  let confined: OpenConfinement | null = null;
  let snapshotWritten: Promise<void> = Promise.resolve();
  try {
    await hooks.onCreated?.(runId);
    for (const file of request.attachments ?? []) {
      record({ type: "attachment.added", payload: await store.attachFile(runId, file) });
    }
    // ── Before the driver starts: work on the run that must precede the agent. The working
    // directory as the agent finds it, for a replay to start from (lib/snapshot/): read before
    // the agent starts, written to disk (fsynced) while it runs, awaited before the run settles.
    const snapshot = await snapshotAtRunStart(
      store,
      runId,
      request.cwd,
      settings,
      (message) => hooks.warn?.(message),
    );
    snapshotWritten = snapshot.written;
    if (gateway?.plan) {
      turnGateway = await bindGateway(store, settings, gateway.plan, {
        runId,
        ledger,
        emit: record,
        onExhausted: () => {
          budgetTimer ??= setTimeout(
            () => budgetStop.abort("budget exhausted"),
            BUDGET_STOP_GRACE_MS,
          );
        },
        onTrouble: (trouble) => {
          const tolerated = driver.upstreamFailuresTolerated;
          if (tolerated === undefined || trouble.inARow < tolerated || upstreamGaveUp !== null) {
            return;
          }
          upstreamGaveUp = `the model server failed ${trouble.inARow} calls in a row (the last: ` +
            `${trouble.status}${trouble.message ? ` ${trouble.message}` : ""}), and ` +
            `${driver.harness} retries without end: reins stopped it`;
          budgetStop.abort(upstreamGaveUp);
        },
        warn: (message) => hooks.warn?.(message),
      });
    }
    if (confine !== null) {
      confined = early ??
        await openConfinement(
          confine,
          confineSetup(store, settings, driver.name, contextId, runId),
        );
      confined.attach({
        gatewayPort: turnGateway === null ? null : Number(new URL(turnGateway.route.baseUrl).port),
        onConnection: (report) =>
          void record({ type: "network.connection", payload: { ...report } }),
      });
    }
    const result = await driver.start(
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
        agent: request.agent,
        env: request.env ?? {},
        settings,
        decisions: logDecisions(store, runId, record),
        kill,
        onProcess: (agent) => keepAgentProcess(writer, agent, hooks),
        gateway: turnGateway?.route ?? null,
        ledger,
        confine: confined?.confinement ?? null,
      },
      sink,
      stop,
    );
    ended = upstreamGaveUp === null
      ? { result }
      : { result: { ...result, status: "failed", reason: upstreamGaveUp } };
  } catch (thrown) {
    ended = { error: thrown };
  } finally {
    // Only for timers there are: clearTimeout(undefined) loads Deno's Node timers (clock.ts).
    if (timer !== undefined) clearTimeout(timer);
    if (graceTimer !== undefined) clearTimeout(graceTimer);
    if (budgetTimer !== undefined) clearTimeout(budgetTimer);
  }
  // The agent has exited: what it still had open through the proxy is reported before it settles.
  if (confined !== null) await confined.close();
  // The harness has exited: its calls are over, their streamed text recorded and their bodies on
  // disk before the run settles.
  if (turnGateway !== null) {
    try {
      await turnGateway.binding.close();
    } catch (error) {
      hooks.warn?.(
        `the bodies of run ${runId}'s model calls were not all kept: ${describeError(error)}`,
      );
    }
  }
  // A settled run has its snapshot on disk, or a warning that says why not (never rejects), and
  // its context's session (never rejects either: a failure is reported).
  await snapshotWritten;
  await remembered;
  const settlement = settle({
    ended,
    timedOutAfterSeconds: timeoutStop.signal.aborted ? request.timeoutSeconds : null,
    stopReason: signals.stop.aborted ? stopReasonOf(signals.stop) : null,
    exhausted: ledger.exhausted,
  });
  await keepDeclaredAttachments(store, runId, driver.name, request.cwd, settlement, record);
  // The record takes the exit code from the terminal event: one write settles the run, once the
  // log (and the run's directory, with its first sync) is on disk — synced without holding the
  // thread, so that other turns of this process go on meanwhile.
  const terminal = await writer.appendDurably(settlement.terminal);
  if (terminal.type === "problem") problems++;
  hooks.onEvent?.(terminal);
  return {
    summary: summarize(settlement, { runId, sessionId, contextId }, writer.lastUsage()),
    problems,
    error: settlement.error,
  };
}

/**
 * Copies in what the agent declared as its products; one it cannot keep is a `problem`, not a
 * failure. Only files inside the working directory (after links are followed) are kept: an agent
 * may not have reins copy, and then upload, a file from elsewhere (`../x`, `~/.ssh/id_rsa`); such
 * a declaration is a `problem` event naming it.
 */
async function keepDeclaredAttachments(
  store: Store,
  runId: string,
  source: string,
  cwd: string,
  settlement: Settlement,
  record: (event: EventInput) => RunEvent,
): Promise<void> {
  let root: string | null = null;
  for (const file of settlement.attachments) {
    try {
      root ??= await Deno.realPath(cwd);
      const outside = await outsideOf(cwd, root, file);
      if (outside !== null) {
        record({
          type: "problem",
          payload: {
            source,
            reason: `a declared attachment was refused: ${JSON.stringify(file)} ${outside} ` +
              `${cwd}; nothing was copied`,
            text: file,
          },
        });
        continue;
      }
      record({ type: "attachment.added", payload: await store.attachFile(runId, file) });
    } catch (thrown) {
      record({
        type: "problem",
        payload: {
          source,
          reason: `a declared attachment was not kept: ${describeError(thrown)}`,
          text: file,
        },
      });
    }
  }
}

/**
 * How `file` lies outside the working directory (`cwd` as given, `root` its real path), in words,
 * or null when it is inside. An existing file is judged by its real path, links followed.
 */
async function outsideOf(cwd: string, root: string, file: string): Promise<string | null> {
  const absolute = resolvePath(file, cwd);
  let real: string;
  try {
    real = await Deno.realPath(absolute);
  } catch {
    // Missing: attachFile says so, unless the path already leads out.
    return isInside(absolute, cwd) ? null : "is outside the working directory";
  }
  if (isInside(real, root)) return null;
  return real === absolute
    ? "is outside the working directory"
    : `leads to ${JSON.stringify(real)}, outside the working directory`;
}

/**
 * Notes an agent process with the run (runs/<id>/agents.jsonl) before it can do much: should
 * reins die, the reconciliation that finds the run's owner gone stops its group.
 */
function keepAgentProcess(writer: RunWriter, agent: AgentProcess, hooks: TurnHooks) {
  try {
    writer.noteAgent(JSON.stringify(agent));
  } catch (error) {
    hooks.warn?.(
      `the agent's process ${agent.pid} could not be noted with run ${writer.runId} (${
        describeError(error)
      }); should reins be killed, stop its group yourself: kill -- -${agent.pgid}`,
    );
  }
}
