// `reins replay RUN [--cwd DIR]`: re-runs a recorded loop run with the `replay:RUN` model (its
// recorded model outputs, served in order) and real tools, in a fresh copy of the run's working
// directory, answering its approvals and questions as the recording did; then says whether the replay diverged
// (a tool result that differs, the script running out) and where. The replay is a run of its
// own: trigger `replay`, relation `replay`, resumedFromRunId RUN.
import { importLazily } from "../core/lazy_import.ts";
import { assertNever } from "../core/assert_never.ts";
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { ExitCode, NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { resolvePath } from "../core/paths.ts";
import type { RunEvent, RunRecord } from "../store/mod.ts";
import { openStore, type Store } from "../store/store.ts";
import { describeProblems } from "../store/event_log.ts";
import {
  compareReplay,
  type Divergence,
  recordingLoader,
  replayDirectory,
  replayPlan,
  type ReplayVerdict,
} from "../session/replay.ts";
import { previewValue } from "../session/text.ts";
import { runTurn } from "../turn/run_turn.ts";
import { type Progress, startProgress } from "./progress.ts";
import { turnSignals } from "./signals.ts";
import type { Settings } from "../core/mod.ts";
import {
  type HarnessDivergence,
  type HarnessVerdict,
  isHarnessRun,
  replayChain,
} from "../turn/harness_replay.ts";

export const usage = "reins replay RUN [--cwd DIR] [--timeout SECONDS] [--upstream]";
export const description =
  "Re-runs a recorded run. A Claude Code, Codex, Gemini CLI or opencode run: the same harness " +
  "with the same prompt, its model calls answered by the model gateway from the recording " +
  "(no network, no key; --upstream sends them to the real model instead), a turn of a " +
  "context replayed with the context's turns before it in a scratch harness home; a model call " +
  "whose request differs from the recording's in its messages or tools offered is a " +
  "divergence (docs/gateway.md says what is compared and ignored). A loop run: " +
  "its recorded model outputs are served in order as the model " +
  "(replay:RUN) and the tools really run, in a fresh directory under the data root (tmp/, kept " +
  "afterwards to look at) that holds the run's working directory as the run found it (its " +
  "snapshot; without one, a copy of the directory as it is now, and a line that says so), " +
  "unless --cwd is given. Approvals and questions are answered as the recording " +
  "answered them. Prints whether the replay reproduced the recording or diverged — a tool " +
  "result that differs, or the script running out — and where. Exit 0 when it reproduced, 1 " +
  "when it diverged. A recording interrupted during a model call is replayed up to that call and " +
  "stopped there, as it was. --json prints {runId, replayOf, cwd, status, reason, diverged, " +
  "divergences, modelOutputs, toolResults, interruptedCall}.";
export const flags = defineFlags({
  cwd: {
    type: "string",
    value: "DIR",
    description: "replay in DIR instead of the run's starting directory, restored",
  },
  timeout: {
    type: "number",
    positive: true,
    value: "SECONDS",
    description: "fail the replay after this long",
  },
  upstream: {
    type: "boolean",
    description: "a harness run: send its model calls to the real model instead of the recording",
  },
});
type Flags = typeof flags;

const SHOWN_VALUE = 160;

/** Why a replay stops where its recording was interrupted mid-call (its recorded reason). */
export const CUT_REASON = "the recording was interrupted during this model call";

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const { io } = ctx;
  const [ref, ...extra] = ctx.positionals;
  if (ref === undefined || extra.length > 0) {
    throw new UsageError("reins replay takes one run: an id, a unique prefix of one, or last", {
      hint: usage,
    });
  }
  const timeoutSeconds = ctx.flags.timeout;
  const settings = await ctx.settings();
  using store = openStore(ctx.home, { warn: (message) => io.warn(message) });
  await store.reconcileCheaply();
  const original = store.resolveRun(ref);
  const recorded = store.readEvents(original.id);
  for (const problem of describeProblems(original.id, recorded)) io.warn(problem);
  const plan = replayPlan(original, recorded.events);
  if (isHarnessRun(original)) {
    return await replayHarness(ctx, store, settings, original, timeoutSeconds ?? null);
  }
  if (ctx.flags.upstream) {
    throw new UsageError("--upstream replays a harness run; a loop run replays its own outputs", {
      hint: usage,
    });
  }
  const given = ctx.flags.cwd;
  const where = given === undefined
    ? await replayDirectory(store, original)
    : { cwd: checkCwd(given), note: `in ${checkCwd(given)}` };
  const cwd = where.cwd;
  io.note(
    `reins: replaying run ${original.id} (${plan.outputs.length} model outputs) ${where.note}`,
  );

  const { createLoopDriver } = await importLazily<typeof import("../drivers/loop/mod.ts")>(
    "drivers/loop/mod.ts",
  );
  const driver = createLoopDriver({ resolve: { loadRecording: recordingLoader(store) } });
  let progress: Progress | null = null;
  using signals = turnSignals((message) => io.warn(message));
  // A recording interrupted during a model call is replayed up to that call, and stopped there.
  const cut = new AbortController();
  const cutAt = plan.cutMidCall;
  let asked = 0;
  const { summary, error } = await runTurn(
    store,
    settings,
    {
      agent: { kind: "loop", model: `replay:${original.id}`, baseUrl: null },
      driver,
      prompt: plan.prompt,
      cwd,
      contextId: null,
      approval: plan.approval,
      // The recording's own budget: a run that ended for it ends there again.
      budget: plan.budget,
      timeoutSeconds: timeoutSeconds ?? null,
      parentRunId: null,
      trigger: "replay",
      relation: "replay",
      resumedFromRunId: original.id,
      history: earlierTurns(store, original),
    },
    { stop: AbortSignal.any([signals.stop, cut.signal]), kill: signals.kill },
    {
      warn: (message) => io.warn(message),
      onEvent: (event) => {
        progress?.update(event);
        if (event.type === "model.requested" && ++asked === cutAt?.modelCall) {
          cut.abort(CUT_REASON);
        }
        if (event.type === "approval.requested") {
          answerAsRecorded(store, event, plan.decisions, (message) => io.warn(message));
        } else if (event.type === "question.requested") {
          replyAsRecorded(store, event, plan.answers, (message) => io.warn(message));
        }
      },
      onCreated: async (runId) => {
        signals.runStarted(runId);
        if (io.stderrIsTerminal && !io.quiet && !io.jsonMode) {
          progress = await startProgress(() => store.uniqueRunPrefix(runId));
        }
      },
    },
  );
  (progress as Progress | null)?.stop();
  if (error instanceof ReinsError && error.exitCode !== ExitCode.runFailed) throw error;

  const verdict = compareReplay(recorded.events, store.readEvents(summary.runId).events);
  if (io.jsonMode) {
    io.json({
      runId: summary.runId,
      replayOf: original.id,
      cwd,
      status: summary.status,
      reason: summary.reason,
      ...verdict,
      interruptedCall: cutAt,
    });
  } else {
    io.print(formatVerdict(summary.runId, original.id, summary.status, verdict));
    if (cutAt !== null && asked >= cutAt.modelCall) {
      io.print(
        `stopped at model call ${cutAt.modelCall}, where the recording was interrupted${
          cutAt.text === "" ? "" : ` after streaming ${previewValue(cutAt.text, SHOWN_VALUE)}`
        }`,
      );
    }
  }
  return verdict.diverged ? ExitCode.runFailed : ExitCode.ok;
}

/** Appends the recorded decision for an approval the replay asks for (after this append). */
function answerAsRecorded(
  store: Store,
  event: Extract<RunEvent, { type: "approval.requested" }>,
  decisions: ReturnType<typeof replayPlan>["decisions"],
  warn: (message: string) => void,
): void {
  const { approvalId } = event.payload;
  const recorded = decisions.get(approvalId);
  // Outside the append that reported it: the run's log is locked until that returns.
  setTimeout(() => {
    try {
      store.appendToRun(event.runId, {
        type: "approval.resolved",
        payload: recorded === undefined
          ? {
            approvalId,
            decision: "deny",
            by: "replay",
            reason: "the recording has no decision for this approval",
          }
          // Who decided is part of what the tool reports ("denied by cli: …"): kept as recorded.
          : {
            approvalId,
            decision: recorded.decision,
            by: recorded.by,
            reason: recorded.reason,
            replayed: true,
          },
      });
    } catch (error) {
      warn(`Cannot answer ${approvalId} as recorded: ${(error as Error).message}`);
    }
  }, 0);
}

/** Appends the recorded answer to a question the replay asks (after this append). */
function replyAsRecorded(
  store: Store,
  event: Extract<RunEvent, { type: "question.requested" }>,
  answers: ReturnType<typeof replayPlan>["answers"],
  warn: (message: string) => void,
): void {
  const { questionId } = event.payload;
  // A question the recording never had answered is answered so, rather than waited on forever.
  const answer = answers.get(questionId) ??
    "(the recording has no answer to this question: it is a replay)";
  setTimeout(() => {
    try {
      store.appendToRun(event.runId, {
        type: "question.answered",
        payload: { questionId, answer, replayed: true },
      });
    } catch (error) {
      warn(`Cannot answer ${questionId} as recorded: ${(error as Error).message}`);
    }
  }, 0);
}

function checkCwd(path: string): string {
  const absolute = resolvePath(path);
  try {
    if (!Deno.statSync(absolute).isDirectory) {
      throw new UsageError(`--cwd ${absolute} is not a directory`);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`The working directory ${absolute} does not exist`, {
        hint: "create it, or leave out --cwd to replay in a copy of the recorded one",
      });
    }
    throw error;
  }
  return absolute;
}

/** The verdict for people: the outcome, then either `reproduced` or where it diverged. */
export function formatVerdict(
  runId: string,
  replayOf: string,
  status: string,
  verdict: ReplayVerdict,
): string {
  const { modelOutputs, toolResults } = verdict;
  const counts = `${modelOutputs.served} of ${modelOutputs.recorded} model outputs served, ` +
    `${toolResults.replayed - toolResults.differing} of ${toolResults.recorded} tool results ` +
    "matching";
  const lines = [`replay ${runId} of ${replayOf}: ${status}`];
  if (!verdict.diverged) {
    lines.push(`reproduced the recording: ${counts}`);
    return lines.join("\n");
  }
  const [first] = verdict.divergences;
  lines.push(`diverged at event ${first.sequence}: ${describeDivergence(first)}`);
  if (first.kind === "tool-result") {
    lines.push(`  recorded: ${describeOutcome(first.recorded)}`);
    lines.push(`  replayed: ${describeOutcome(first.replayed)}`);
  }
  const more = verdict.divergences.length - 1;
  lines.push(`${counts}${more > 0 ? `; ${more} more difference${more === 1 ? "" : "s"}` : ""}`);
  lines.push(`see: reins show ${runId} --verbose`);
  return lines.join("\n");
}

function describeDivergence(divergence: Divergence): string {
  switch (divergence.kind) {
    case "tool-result":
      return `tool call ${divergence.callId} (${divergence.tool}) returned another result than ` +
        `the recording's (event ${divergence.recordedSequence})`;
    case "extra-tool-call":
      return `tool call ${divergence.callId} (${divergence.tool}) is not in the recording`;
    case "script-ran-out":
      return `the script ran out: model call ${divergence.modelCall} has no recorded output ` +
        `(the recording has ${divergence.recordedOutputs})`;
    case "unused-outputs":
      return `the replay ended after ${divergence.served} of ${divergence.recordedOutputs} ` +
        "recorded model outputs";
    case "outcome":
      return `the replay ${divergence.replayed} where the recording ${divergence.recorded}`;
    default:
      return assertNever(divergence, "divergence");
  }
}

function describeOutcome(outcome: { ok: boolean; result?: unknown; error?: string }): string {
  const result = outcome.result === undefined
    ? ""
    : ` ${previewValue(outcome.result, SHOWN_VALUE)}`;
  return outcome.ok
    ? `ok${result}`
    : `failed: ${previewValue(outcome.error ?? "", SHOWN_VALUE)}${result}`;
}

/** The events of the runs of the recorded run's session that came before it, oldest first. */
function earlierTurns(store: Store, original: RunRecord): RunEvent[] {
  const before = new Set(
    store.listRuns({ sessionId: original.sessionId, limit: 10_000 })
      .filter((run) => run.id !== original.id && run.startedAt < original.startedAt)
      .map((run) => run.id),
  );
  if (before.size === 0) return [];
  return store.sessionEvents(original.sessionId).filter((event) => before.has(event.runId));
}

/** `reins replay` of a harness run (lib/turn/harness_replay.ts). */
async function replayHarness(
  ctx: CommandContext<Flags>,
  store: Store,
  settings: Settings,
  original: RunRecord,
  timeoutSeconds: number | null,
): Promise<number> {
  const { io } = ctx;
  const chain = replayChain(store, original);
  const { replayableRecordings, replayHarnessRun } = await importLazily<
    typeof import("../turn/harness_replay.ts")
  >("turn/harness_replay.ts");
  // A damaged recording is said before its directory is restored.
  await replayableRecordings(store, chain, ctx.flags.upstream === true);
  const given = ctx.flags.cwd;
  // The chain's first turn's directory, as it found it: the later turns find what it left.
  const where = given === undefined
    ? await replayDirectory(store, chain[0])
    : { cwd: checkCwd(given), note: `in ${checkCwd(given)}` };
  const events = store.readEvents(original.id).events.filter((event) =>
    event.ignored === undefined
  );
  const calls =
    events.filter((event) => event.type === "model.call.started" && event.payload.generates).length;
  io.note(
    `reins: replaying ${original.driver} run ${original.id} (${calls} model call${
      calls === 1 ? "" : "s"
    }${chain.length > 1 ? `, after the ${chain.length - 1} turn(s) of its context before it` : ""}${
      ctx.flags.upstream ? ", sent to the real model" : ", answered from the recording"
    }) ${where.note}`,
  );
  // A call started and never answered (reins stopped during it): the replay cannot serve it, and
  // its "not in the recording" is the recording's end, not the replay's difference.
  const answered = new Set(
    events.flatMap((event) => event.type === "model.call.completed" ? [event.payload.callId] : []),
  );
  const unanswered = events.find((event) =>
    event.type === "model.call.started" && !answered.has(event.payload.callId)
  );
  if (unanswered?.type === "model.call.started") {
    io.warn(
      `the recording of ${original.id} ends during its model call ${unanswered.payload.callId} ` +
        `(started, never answered: the run was stopped during it): the replay serves the calls ` +
        "before it, and that one will not be in the recording",
    );
  }
  let progress: Progress | null = null;
  using signals = turnSignals((message) => io.warn(message));
  const result = await replayHarnessRun(store, settings, original, {
    cwd: where.cwd,
    upstream: ctx.flags.upstream === true,
    timeoutSeconds,
    signals: { stop: signals.stop, kill: signals.kill },
    hooks: {
      warn: (message) => io.warn(message),
      onEvent: (event) => progress?.update(event),
      onCreated: async (runId) => {
        signals.runStarted(runId);
        (progress as Progress | null)?.stop();
        if (io.stderrIsTerminal && !io.quiet && !io.jsonMode) {
          progress = await startProgress(() => store.uniqueRunPrefix(runId));
        }
      },
    },
  });
  (progress as Progress | null)?.stop();
  const { summary, error, verdict } = result;
  if (error instanceof ReinsError && error.exitCode !== ExitCode.runFailed) throw error;
  if (io.jsonMode) {
    io.json({
      runId: summary.runId,
      replayOf: original.id,
      cwd: where.cwd,
      status: summary.status,
      reason: summary.reason,
      chain: result.chain,
      harnessHome: result.harnessHome,
      upstream: ctx.flags.upstream === true,
      ...verdict,
    });
  } else {
    io.print(formatHarnessVerdict(summary.runId, original.id, summary.status, verdict));
  }
  return verdict.diverged ? ExitCode.runFailed : ExitCode.ok;
}

/** A harness replay's verdict for people: the outcome, then `reproduced` or where it diverged. */
export function formatHarnessVerdict(
  runId: string,
  replayOf: string,
  status: string,
  verdict: HarnessVerdict,
): string {
  const { recorded, served, matching } = verdict.modelCalls;
  const counts = `${served} of ${recorded} recorded model calls made again, ${matching} matching`;
  const lines = [`replay ${runId} of ${replayOf}: ${status}`];
  if (!verdict.diverged) {
    lines.push(`reproduced the recording: ${counts}`);
    return lines.join("\n");
  }
  const [first] = verdict.divergences;
  lines.push(`diverged: ${describeHarnessDivergence(first)}`);
  const more = verdict.divergences.length - 1;
  lines.push(`${counts}${more > 0 ? `; ${more} more difference${more === 1 ? "" : "s"}` : ""}`);
  lines.push(`see: reins show ${runId} --verbose`);
  return lines.join("\n");
}

function describeHarnessDivergence(divergence: HarnessDivergence): string {
  switch (divergence.kind) {
    case "request":
      return divergence.recordedCallId === null
        ? `model call ${divergence.call} (${divergence.path}) is not in the recording of ` +
          divergence.replayOf
        : `model call ${divergence.call} (${divergence.path}) differs from ` +
          `${divergence.recordedCallId} of ${divergence.replayOf} in its ${
            divergence.fields.join(" and ")
          }`;
    case "unused-calls":
      return `the replay of ${divergence.replayOf} ended after ${divergence.served} of its ` +
        `${divergence.recorded} recorded model calls`;
    case "outcome":
      return `the replay of ${divergence.replayOf} ${divergence.replayed} where the recording ` +
        divergence.recorded;
    default:
      return assertNever(divergence, "divergence");
  }
}
