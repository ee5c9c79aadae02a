// `reins suite run FILE` and `reins suite validate FILE`. run: picks the suite run (fresh, resumed,
// a rerun, a shard), plays it with live progress on stderr, prints the table (or JSON), writes
// JUnit, and reports to the platform when it is configured. SIGINT/SIGTERM stop it: the scenarios
// in flight are cut short and stay unfinished for --resume; a second signal kills their agents.
import { settingsWithConfine } from "./confine_flags.ts";
import { requireConfinement } from "../confine/probe.ts";
import { allowedHosts } from "../confine/allow_host.ts";
import { openShellConfinement } from "../suite/shell.ts";
import { importLazily } from "../core/lazy_import.ts";
import { epochsOf, type SuiteContext } from "./suite_flags.ts";
import { nowIso } from "../core/clock.ts";
import { ExitCode, UsageError } from "../core/errors.ts";
import { resolvePath } from "../core/paths.ts";
import { refusedNeed } from "../core/sandbox.ts";
import { openStore, type Store } from "../store/store.ts";
import type {
  MatrixReporter,
  MatrixReportSummary,
  ReportSummary,
  ScenarioState,
  Suite,
  SuiteReporter,
  SuiteRunHandle,
} from "../suite/mod.ts";
import { requireSameSuite, type StartMode, startSuiteRun } from "../suite/start.ts";
import { runSuite } from "../suite/runner.ts";
import { suiteNeeds } from "../suite/needs.ts";
import { elapsedOf, readScenarioStates } from "../suite/state.ts";
import { exitCodeOf, totalsOf } from "../suite/table.ts";
import { engineTurns, recordedScenario } from "../suite/turns.ts";
import {
  parseShard,
  type PlanFile,
  type PlanPlatform,
  readPlan,
  shardFromEnv,
} from "../suite/plan.ts";
import type { Settings } from "../core/mod.ts";
import { startSuiteProgress } from "./suite_progress.ts";
import { checkJunitTarget, writeJunitFile } from "../suite/junit.ts";
import { suiteRunJson } from "../suite/json.ts";
import { loadOrExplain, printResults } from "./suite_output.ts";
import { againToKill } from "./signals.ts";
import { snapshotAtRunStart } from "../snapshot/run_start.ts";
import { endStateId } from "../suite/end_state.ts";

const KILL_GRACE_MS = 5_000;

export async function suiteValidate(ctx: SuiteContext): Promise<number> {
  const [path, ...extra] = ctx.positionals;
  if (path === undefined || extra.length > 0) {
    throw new UsageError("reins suite validate takes one suite file", {
      hint: "reins suite validate FILE",
    });
  }
  const loaded = await loadOrExplain(ctx.io, path);
  if ("exit" in loaded) return loaded.exit;
  const simulated = loaded.scenarios.filter((s) => s.conversation.kind === "simulated").length;
  const checks = loaded.scenarios.reduce((sum, s) => sum + s.checks.length, 0);
  if (ctx.io.jsonMode) {
    ctx.io.json({
      valid: true,
      file: loaded.file,
      suite: loaded.name,
      digest: loaded.digest,
      agents: loaded.agents,
      epochs: loaded.epochs,
      scenarios: loaded.scenarios.map((s) => ({
        key: s.key,
        name: s.name,
        driver: s.driver,
        conversation: s.conversation.kind,
        checks: s.checks.map((c) => ({ name: c.name, kind: c.kind })),
        skip: s.skip,
      })),
    });
  } else {
    ctx.io.print(
      `${path}: suite ${JSON.stringify(loaded.name)} is valid: ${loaded.scenarios.length} scenario${
        loaded.scenarios.length === 1 ? "" : "s"
      } (${
        loaded.scenarios.length - simulated
      } scripted, ${simulated} with a simulated user), ${checks} check${checks === 1 ? "" : "s"}${
        loaded.agents === null
          ? ""
          : `, against ${loaded.agents.length} agent${loaded.agents.length === 1 ? "" : "s"} (${
            loaded.agents.join(", ")
          })`
      }`,
    );
  }
  return ExitCode.ok;
}

function rerunWhich(value: string): ("failed" | "error")[] {
  const which = new Set<"failed" | "error">();
  for (const part of value.split(",").map((p) => p.trim())) {
    if (part === "failed") which.add("failed");
    else if (part === "errors" || part === "error") which.add("error");
    else {
      throw new UsageError(
        `--rerun takes failed, errors or failed,errors: got ${JSON.stringify(value)}`,
      );
    }
  }
  return [...which];
}

async function modeOf(ctx: SuiteContext, suite: Suite, extra: string[]): Promise<StartMode> {
  const f = ctx.flags;
  const filter = f.filter ?? null;
  const rerun = f.rerun;
  const from = f.from;
  const planPath = f.plan;
  const resume = f.resume;
  const chosen = [
    resume && "--resume",
    rerun !== undefined && "--rerun",
    planPath !== undefined && "--plan",
  ]
    .filter(Boolean);
  if (chosen.length > 1) throw new UsageError(`${chosen.join(" and ")} do not go together`);
  if (extra.length > (resume ? 1 : 0)) {
    throw new UsageError(
      `reins suite run takes one suite file${resume ? " and a suite run id" : ""}: got ${
        extra.join(" ")
      } too`,
    );
  }
  if (from !== undefined && rerun === undefined) {
    throw new UsageError("--from goes with --rerun failed|errors");
  }
  if (f.shard !== undefined && planPath === undefined) {
    throw new UsageError("--shard goes with --plan FILE");
  }
  if (
    (resume || rerun !== undefined || planPath !== undefined) &&
    (f.filter !== undefined || f.repeat !== undefined || f.epochs !== undefined ||
      f.agent.length > 0)
  ) {
    throw new UsageError("--filter, --agent and --epochs (--repeat) go with a fresh suite run", {
      hint: "a resume, a rerun and a shard keep the scenarios they were given",
    });
  }
  if (resume) return { kind: "resume", ref: extra[0] ?? null };
  if (rerun !== undefined) {
    if (from === undefined) {
      throw new UsageError("--rerun needs --from ID (the suite run to take them from)");
    }
    return { kind: "rerun", from, which: rerunWhich(rerun) };
  }
  if (planPath !== undefined) {
    const plan = await readPlan(resolvePath(planPath));
    const given = f.shard;
    const shard = given !== undefined ? parseShard(given) : shardFromEnv(ctx.env, plan.shards);
    if (shard === null) {
      throw new UsageError(
        "--plan needs the shard to run: --shard I/N, REINS_SHARD or JOB_COMPLETION_INDEX",
      );
    }
    if (shard.count !== plan.shards) {
      throw new UsageError(`The plan has ${plan.shards} shards, not ${shard.count}`, {
        hint: `run --shard I/${plan.shards}`,
      });
    }
    return { kind: "shard", plan, planFile: planPath, index: shard.index };
  }
  return {
    kind: "fresh",
    filter,
    repeat: epochsOf(f, suite.epochs),
    agents: f.agent.length > 0 ? f.agent : null,
  };
}

type LiveReport = SuiteReporter | MatrixReporter;

function reportJson(reporter: LiveReport | null, reported: ReportSummary | undefined) {
  if (!reporter || !reported) return null;
  const outcome = reported.outcome;
  const matrix = "reports" in reported
    ? {
      // A matrix: one report per agent and epoch (each agent a test, each epoch an execution).
      reports: (reported as MatrixReportSummary).reports.map((one) => ({
        agent: one.agent,
        epoch: one.epoch,
        outboxId: one.outboxId,
        state: one.outcome?.state ?? null,
        url: one.outcome?.url ?? null,
        runTestId: one.outcome?.runTestId ?? null,
        testExecutionId: one.outcome?.testExecutionId ?? null,
      })),
    }
    : {};
  return {
    ...matrix,
    outboxId: reporter.outboxId,
    state: outcome?.state ?? null,
    url: outcome?.url ?? null,
    runTestId: outcome?.runTestId ?? null,
    testExecutionId: outcome?.testExecutionId ?? null,
    reason: outcome?.reason ?? null,
    problems: outcome?.problems ?? [],
  };
}

/**
 * The suite run's live report, when the platform is configured: a shard reports into the calls
 * its plan allocated. A line says why there is none, except when --no-report asked.
 */
async function startReport(given: {
  ctx: SuiteContext;
  store: Store;
  settings: Settings;
  suite: Suite;
  handle: SuiteRunHandle;
  mode: StartMode;
  quiet: boolean;
}): Promise<LiveReport | null> {
  const { ctx, store, settings, suite, handle, mode, quiet } = given;
  const note = (line: string) => {
    if (!quiet) ctx.io.note(line);
  };
  const { notConfiguredReason, platformTarget } = await importLazily<
    typeof import("../platform/client.ts")
  >("platform/client.ts");
  const missing = notConfiguredReason(settings.platform);
  if (missing) {
    note(`not reported to the platform: ${missing} (--no-report leaves this line out)`);
    return null;
  }
  const target = platformTarget(settings.platform);
  let plan: { file: PlanFile; platform: PlanPlatform } | undefined;
  if (mode.kind === "shard") {
    // A matrix's plan holds an execution per agent and epoch, all on one platform.
    const platform = mode.plan.platform ?? mode.plan.executions?.[0] ?? null;
    if (platform === null) {
      note(
        "not reported to the platform: the plan was made without it (reins suite plan allocates the calls when the platform is configured)",
      );
      return null;
    }
    if (platform.baseUrl !== target.url || platform.workspaceId !== target.workspaceId) {
      note(
        `not reported to the platform: the plan's calls are on ${platform.baseUrl}, and the settings point at ${target.url}`,
      );
      return null;
    }
    plan = { file: mode.plan, platform };
  }
  const { SuiteReporter } = await importLazily<typeof import("../suite/report.ts")>(
    "suite/report.ts",
  );
  const options = {
    root: handle.root,
    settings,
    target,
    suite,
    handle,
    instances: handle.header.instances,
    plan,
    note,
    recorded: (state: ScenarioState) => recordedScenario(store, state),
  };
  if (handle.header.options.agents !== null) {
    const { MatrixReporter } = await importLazily<typeof import("../suite/matrix_report.ts")>(
      "suite/matrix_report.ts",
    );
    // A shard reports into the executions its plan allocated, one per agent and epoch.
    const matrix = MatrixReporter.begin({ ...options, plan: undefined }, plan?.file ?? null);
    handle.header.options.report = true;
    handle.saveHeader();
    return matrix;
  }
  const reporter = SuiteReporter.begin(options);
  if (reporter) {
    handle.header.options.report = true;
    handle.saveHeader();
  }
  return reporter;
}

export async function suiteRun(ctx: SuiteContext): Promise<number> {
  const [path, ...extra] = ctx.positionals;
  if (path === undefined) {
    throw new UsageError("reins suite run needs a suite file", { hint: "reins suite run FILE" });
  }
  const loaded = await loadOrExplain(ctx.io, path);
  if ("exit" in loaded) return loaded.exit;
  const suite = loaded;
  const mode = await modeOf(ctx, suite, extra);
  const jobs = ctx.flags.jobs ?? suite.jobs ?? 1;
  const junit = ctx.flags.junit;
  if (junit) checkJunitTarget(junit, ctx.home);
  const settings = settingsWithConfine(await ctx.settings(), ctx.flags);
  // Refused before any scenario starts where agents cannot be confined (exit 4).
  if (settings.confine.enabled || suite.scenarios.some((spec) => spec.confine === true)) {
    // A bad host in the config is the same for every scenario: exit 2 before any is begun.
    allowedHosts({ allowHosts: settings.confine.allowHosts, path: settings.configPath }, [], "");
    await requireConfinement();
  }
  const { io } = ctx;
  // The engine's notes (a budget the command driver holds only through the program's reports, a
  // damaged line) are the same for every scenario: each is said once per suite run.
  const warned = new Set<string>();
  const warnOnce = (message: string) => {
    if (warned.has(message)) return;
    warned.add(message);
    io.warn(message);
  };
  using store = openStore(ctx.home, { warn: warnOnce });
  await store.reconcileCheaply();
  // Before the suite run begins: an unknown --reuse leaves nothing behind.
  const reuseRef = ctx.flags.reuse;
  const reuse = reuseRef === undefined ? null : (await importLazily<
    typeof import("../suite/reuse.ts")
  >("suite/reuse.ts")).SuiteReuse.open(store, settings, reuseRef);
  if (reuse !== null) {
    requireSameSuite(suite, { id: reuse.from, suite: reuse.suite, file: reuse.file }, "reuse");
  }

  const started = startSuiteRun(store, suite, mode, { jobs, report: false });
  using handle = started.handle;
  // What the scenarios to play will run, read and reach, asked of the sandbox before any starts or
  // anything is reported: refused at the first scenario, the suite run was left begun on the
  // platform. Here it is left stopped, for --resume once the sandbox grants it.
  const todo = new Set(started.todo.map((instance) => instance.key));
  const refused = refusedNeed(suiteNeeds(suite, (key) => todo.has(key)));
  if (refused !== null) {
    handle.end("stopped");
    throw refused;
  }
  const quiet = io.quiet || io.jsonMode;
  const reporter = ctx.flags["no-report"]
    ? null
    : await startReport({ ctx, store, settings, suite, handle, mode, quiet });
  if (!quiet) {
    const what = started.resumed
      ? `resuming suite run ${handle.id}: ${started.todo.length} of ${handle.header.instances.length} scenarios left`
      : `suite run ${handle.id}: ${handle.header.instances.length} scenario${
        handle.header.instances.length === 1 ? "" : "s"
      }${
        handle.header.options.agents
          ? ` (× ${handle.header.options.agents.length} agent${
            handle.header.options.agents.length === 1 ? "" : "s"
          }: ${handle.header.options.agents.join(", ")})`
          : ""
      }, ${jobs} at a time`;
    io.note(`${suite.name} · ${what}`);
  }
  const progress = await startSuiteProgress(io, started.todo.length, { label: suite.name, quiet });

  const stop = new AbortController();
  const kill = new AbortController();
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const onSignal = (signal: "SIGINT" | "SIGTERM") => () => {
    if (stop.signal.aborted) {
      kill.abort();
      return;
    }
    io.warn(
      `stopping suite run ${handle.id} (${signal}); the scenarios in flight stay unfinished for --resume; ${
        againToKill(signal)
      } to kill their agents now`,
    );
    stop.abort();
    graceTimer = setTimeout(() => kill.abort(), KILL_GRACE_MS);
  };
  const handlers = (["SIGINT", "SIGTERM"] as const).map((signal) =>
    [signal, onSignal(signal)] as const
  );
  for (const [signal, handler] of handlers) Deno.addSignalListener(signal, handler);

  const { resolveModel } = await importLazily<typeof import("../model/mod.ts")>("model/mod.ts");
  const { recordingLoader } = await importLazily<typeof import("../session/replay.ts")>(
    "session/replay.ts",
  );
  const loadRecording = recordingLoader(store);
  let stopped = false;
  try {
    ({ stopped } = await runSuite({
      suite,
      handle,
      todo: started.todo,
      jobs,
      stop: stop.signal,
      kill: kill.signal,
      runTurn: engineTurns(store, settings, warnOnce, reuse),
      shellConfinement: (spec) => openShellConfinement(store, settings, spec),
      makeModel: (spec, baseUrl) => resolveModel(spec, { settings, baseUrl, loadRecording }),
      // For reins suite regrade: the working directory as the conversation left it.
      keepEndState: (lastRunId, cwd) =>
        snapshotAtRunStart(store, endStateId(lastRunId), cwd, settings, warnOnce),
      hooks: {
        onStart: (state) => progress.started(state),
        onConversation: (state, runId) => reporter?.started(state, runId),
        onEnd: async (end) => {
          progress.ended(end.state);
          await reporter?.finished(end, end.evidence?.recordings ?? []);
        },
        onRetry: (state, reason) => progress.retrying(state, reason),
      },
    }));
  } catch (error) {
    // What stopped every scenario (the sandbox refused the agent): the rest is left for --resume.
    handle.end("stopped");
    await reporter?.close();
    throw error;
  } finally {
    clearTimeout(graceTimer);
    for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
    progress.finish();
  }
  // Saved once the report is closed: a crash while deliveries are behind leaves the suite run
  // resumable, and the resume sends the results the report lacks. Its time ends here.
  const endedAt = nowIso();
  const reported = await reporter?.close();
  handle.end(stopped ? "stopped" : "finished", endedAt);
  const states = readScenarioStates(store, handle.header);
  if (junit) {
    await writeJunitFile(junit, suite.name, states, {
      timestamp: handle.header.createdAt,
      elapsedMs: elapsedOf(handle.header),
    });
  }
  if (io.jsonMode) {
    io.json({
      ...suiteRunJson(handle.header, states),
      report: reportJson(reporter, reported),
      ...(reuse === null ? {} : { reuse: reuse.counts }),
    });
  } else {
    printResults(io, handle.header, states);
  }
  if (reuse !== null) {
    const { matched, passedOn } = reuse.counts;
    io.note(
      `reused ${matched} of ${matched + passedOn} model calls from suite run ${reuse.from}` +
        (passedOn > 0 ? ` (${passedOn} did not match and went to the model)` : ""),
    );
  }
  // The report's fate is told, never counted: the exit code is the suite's.
  for (const line of reported?.lines ?? []) io.note(line);
  const totals = totalsOf(states);
  if (stopped) {
    io.note(
      `stopped: ${totals.unfinished} scenario${
        totals.unfinished === 1 ? "" : "s"
      } not finished; reins suite run ${path} --resume ${handle.id} plays them`,
    );
    return ExitCode.runFailed;
  }
  if (totals.gradingErrors > 0 && !io.jsonMode) {
    io.warn(
      `${totals.gradingErrors} judge${
        totals.gradingErrors === 1 ? "" : "s"
      } could not grade (grading_error): see the table; the scenarios' statuses do not count them`,
    );
  }
  return exitCodeOf(totals);
}
