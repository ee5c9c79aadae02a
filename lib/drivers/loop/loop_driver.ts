// The built-in agent loop as a Driver: ask the model, run the tools it calls (after the approval
// policy), feed the results back, until it answers without a tool call, the budget runs out or
// the signal aborts. It emits the turn's events and returns its outcome; it never writes the
// run store itself and never emits the terminal `completed` / `failed`.
import { nowIso } from "../../core/clock.ts";
import { describeError, ReinsError } from "../../core/errors.ts";
import { SandboxRefusal } from "../../core/sandbox.ts";
import type { ToolCall } from "../../store/mod.ts";
import {
  agentOf,
  type Driver,
  type DriverInput,
  type DriverResult,
  type EventSink,
} from "../driver.ts";
import { UsageTotals } from "./budget.ts";
import {
  BUDGET_EXHAUSTED,
  BudgetLedger,
  type BudgetWarning,
  type Exhaustion,
  exhaustionReason,
} from "../../core/budget.ts";
import { compactHistory, type CompactionOptions, DEFAULT_COMPACTION } from "./compaction.ts";
import { historyFromEvents, toolResultText } from "./history.ts";
import { combineHooks, type LoopHooks, type ModelCall, recordingHooks } from "./hooks.ts";
import {
  type Message,
  type Model,
  modelFacts,
  type ModelOutput,
  type ModelPurpose,
  resolveModel,
  type ResolveModelOptions,
} from "../../model/mod.ts";
import { createToolbox, type Toolbox, type ToolboxOptions, type ToolResult } from "./tools.ts";
import { ASK_USER, ASK_USER_SPEC, questionOf } from "./ask_user.ts";
import { TextDeltas } from "./text_deltas.ts";
import { priceOf as tablePrice } from "../prices.ts";

export const LOOP_DRIVER_NAME = "loop";
export const LOOP_HARNESS = "reins";

export interface LoopDriverOptions {
  /** The model to use; without it, the loop agent's `model` is resolved with resolveModel(). */
  model?: Model;
  /** Options for resolving the agent's `model` (settings come from the input). */
  resolve?: Omit<ResolveModelOptions, "settings">;
  /** Observers besides the recorder (a progress line, say). */
  hooks?: readonly LoopHooks[];
  tools?: ToolboxOptions;
  /** Compaction settings, or false to never compact. */
  compaction?: Partial<CompactionOptions> | false;
  /** Replaces the default system prompt. */
  systemPrompt?: string;
}

export function createLoopDriver(options: LoopDriverOptions = {}): Driver {
  return {
    name: LOOP_DRIVER_NAME,
    harness: LOOP_HARNESS,
    budgetNotes: (input) => options.model ? [] : loopBudgetNotes(input),
    // A model handed in is named by its spec too (mock:FILE, replay:RUN, openai:MODEL, demo).
    agentFacts: (input) =>
      modelFacts(options.model?.name ?? (input.agent.kind === "loop" ? input.agent.model : null)),
    start: (input, sink, signal) => runLoop(input, sink, signal, options),
  };
}

/**
 * --max-usd needs a cost: an OpenAI-compatible endpoint reports tokens only, and reins prices
 * them from the config file's `prices` (or its own table). Without a price the cost is unknown.
 */
function loopBudgetNotes(input: Pick<DriverInput, "budget" | "agent" | "settings">): string[] {
  const spec = input.agent.kind === "loop" ? input.agent.model : null;
  if (input.budget.maxUsd === undefined || !spec?.startsWith("openai:")) return [];
  if (priceOf(input.settings.prices, spec) !== undefined) return [];
  const name = spec.slice("openai:".length);
  return [
    `the cost of ${spec} is unknown (no price for ${JSON.stringify(name)} in the config ` +
    `file's prices, nor in reins's table): --max-usd cannot stop it; add ` +
    `"prices": {${JSON.stringify(name)}: {"inputPerMillion": …, "outputPerMillion": …}}, or use ` +
    "--max-tokens",
  ];
}

function defaultSystemPrompt(cwd: string): string {
  return [
    "You are the agent of reins's built-in loop.",
    `You work in the directory ${cwd} through the tools list_files, read_file, write_file and ` +
    "run_command; paths are relative to it and cannot leave it.",
    "When you need something only the user can tell you, ask with ask_user and wait.",
    "A tool may be refused by the user's approval policy: read its error and carry on.",
    "When you are done, answer in plain text without calling a tool.",
  ].join(" ");
}

async function runLoop(
  input: DriverInput,
  sink: EventSink,
  signal: AbortSignal,
  options: LoopDriverOptions,
): Promise<DriverResult> {
  const ended = (status: DriverResult["status"], reason: string | null, result: string | null) => ({
    status,
    reason,
    result,
    exitCode: null,
  });
  try {
    // First, so that the conversation keeps the request even when the model cannot be had.
    sink.emit({ type: "message.completed", payload: { role: "user", text: input.prompt } });
    const agent = options.model ? null : agentOf(input, "loop", LOOP_DRIVER_NAME);
    const model = options.model ?? await resolveModel(agent?.model ?? null, {
      ...options.resolve,
      baseUrl: agent?.baseUrl ?? options.resolve?.baseUrl,
      settings: input.settings,
    });
    const toolbox = await createToolbox(input.cwd, {
      env: input.env,
      kill: input.kill,
      onProcess: input.onProcess,
      confine: input.confine,
      ...options.tools,
    });
    const loop = new Loop(input, sink, signal, model, toolbox, options);
    const answer = await loop.run();
    if (answer !== null) {
      sink.emit({ type: "message.completed", payload: { role: "assistant", text: answer } });
    }
    return ended("completed", null, answer);
  } catch (error) {
    // No model call starts once the budget is reached: the turn ends there, as every driver's.
    if (error instanceof BudgetExhausted) {
      return {
        ...ended("failed", exhaustionReason(error.exhaustion), error.lastText),
        code: BUDGET_EXHAUSTED,
      };
    }
    if (signal.aborted) return ended("interrupted", abortReason(signal), null);
    // A refusal by the sandbox ends reins with exit 4, not as a failed turn (the run records it).
    if (error instanceof SandboxRefusal) throw error;
    const reason = error instanceof ReinsError && error.hint
      ? `${describeError(error)} (${error.hint})`
      : describeError(error);
    return ended("failed", reason, null);
  }
}

function abortReason(signal: AbortSignal): string {
  const reason = signal.reason;
  if (typeof reason === "string" && reason) return reason;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message) {
    return reason.message;
  }
  return "interrupted";
}

/** Rejects as soon as `signal` aborts, so a model or a wait that ignores it cannot hold us. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // What it would have said no longer matters, a failure included (never left unhandled).
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** A model call the budget refused: the loop ends, failed, with what the model said last. */
class BudgetExhausted extends Error {
  constructor(readonly exhaustion: Exhaustion, readonly lastText: string | null) {
    super(exhaustionReason(exhaustion));
    this.name = "BudgetExhausted";
  }
}

class Loop {
  readonly #hooks: Required<LoopHooks>;
  readonly #usage = new UsageTotals();
  readonly #compaction: CompactionOptions | null;
  #history: Message[];
  #iteration = 0;
  #approvals = 0;
  readonly #ledger: BudgetLedger;
  #lastText: string | null = null;
  #questions = 0;
  readonly #tools: ModelCall["tools"];

  constructor(
    readonly input: DriverInput,
    readonly sink: EventSink,
    readonly signal: AbortSignal,
    readonly model: Model,
    readonly toolbox: Toolbox,
    options: LoopDriverOptions,
  ) {
    this.#hooks = combineHooks([
      recordingHooks(sink, { model: model.name }),
      ...(options.hooks ?? []),
    ]);
    this.#tools = [...toolbox.specs, ASK_USER_SPEC];
    this.#ledger = input.ledger ?? BudgetLedger.of(input.budget);
    this.#compaction = options.compaction === false
      ? null
      : { ...DEFAULT_COMPACTION, ...options.compaction };
    this.#history = [
      { role: "system", text: options.systemPrompt ?? defaultSystemPrompt(input.cwd) },
      ...historyFromEvents(input.history),
      { role: "user", text: input.prompt },
    ];
  }

  async run(): Promise<string | null> {
    for (;;) {
      this.signal.throwIfAborted();
      this.sink.emit({ type: "heartbeat", payload: { iteration: this.#iteration } });
      await this.#compact();
      const output = await this.#callModel("turn", this.#history, this.#tools);
      this.#history.push({ role: "assistant", text: output.text, toolCalls: output.toolCalls });
      if (output.toolCalls.length === 0) return output.text;
      for (const call of output.toolCalls) {
        const outcome = await this.#runTool(call);
        this.#history.push({
          role: "tool",
          callId: call.id,
          name: call.name,
          ok: outcome.ok,
          content: toolResultText(
            outcome.ok,
            outcome.result,
            outcome.ok ? undefined : outcome.error,
          ),
        });
        this.signal.throwIfAborted();
      }
      this.#iteration += 1;
    }
  }

  #warn(warnings: readonly BudgetWarning[]): void {
    for (const { ratio, limit, scope } of warnings) {
      this.sink.emit({
        type: "budget.warning",
        payload: { ratio, limit, ...(scope === "turn" ? {} : { scope }) },
      });
    }
  }

  async #compact(): Promise<void> {
    if (this.#compaction === null) return;
    this.#history = await compactHistory(this.#history, this.#compaction, {
      sink: this.sink,
      summarize: async (request) => (await this.#callModel("summary", request, [])).text,
    });
  }

  async #callModel(
    purpose: ModelPurpose,
    history: readonly Message[],
    tools: ModelCall["tools"],
  ): Promise<ModelOutput> {
    // A ceiling: once a limit is reached, no call starts (a summary's neither).
    const refusal = this.#ledger.refusal();
    if (refusal !== null) throw new BudgetExhausted(refusal, this.#lastText);
    this.#warn(this.#ledger.startCall());
    const call: ModelCall = { iteration: this.#iteration, purpose, history: [...history], tools };
    await this.#hooks.beforeModel(call);
    // The answer's text as it streams, so that a follower sees it and an interrupted call keeps
    // what it said; a summary is the loop's own business, not something the agent says.
    const deltas = purpose === "summary"
      ? null
      : new TextDeltas((text) =>
        this.sink.emit({ type: "message.delta", payload: { role: "assistant", text } })
      );
    let output: ModelOutput;
    try {
      output = await untilAborted(
        this.model.complete({
          history: call.history,
          tools,
          purpose,
          signal: this.signal,
          ...(deltas === null ? {} : { onText: (text: string) => deltas.add(text) }),
        }),
        this.signal,
      );
    } finally {
      deltas?.finish();
    }
    await this.#hooks.afterModel(call, output);
    const costBefore = this.#usage.costUsd;
    this.#usage.add(output.usage, priceOf(this.input.settings.prices, this.model.name));
    this.sink.emit({ type: "usage.updated", payload: this.#usage.toPayload() });
    const tokens = (output.usage?.inputTokens ?? 0) + (output.usage?.outputTokens ?? 0);
    const cost = this.#usage.costUsd === null ? null : this.#usage.costUsd - (costBefore ?? 0);
    this.#warn(this.#ledger.endCall(tokens, output.usage === null ? 0 : cost));
    if (output.text !== null && output.text !== "") this.#lastText = output.text;
    return output;
  }

  async #runTool(call: ToolCall): Promise<ToolResult & { startedAt: string; finishedAt: string }> {
    const asking = call.name === ASK_USER;
    const refusal = asking ? null : await this.#approve(call);
    await this.#hooks.beforeTool(call);
    const startedAt = nowIso();
    const result: ToolResult = refusal !== null
      ? { ok: false, error: refusal }
      : asking
      ? await this.#ask(call)
      : await this.toolbox.run(call, this.signal);
    const outcome = { ...result, startedAt, finishedAt: nowIso() };
    await this.#hooks.afterTool(call, outcome);
    return outcome;
  }

  /** ask_user: records the question, waits for its answer, which is the tool's result. */
  async #ask(call: ToolCall): Promise<ToolResult> {
    const asked = questionOf(call.args);
    if (!asked.ok) return { ok: false, error: asked.error };
    this.#questions += 1;
    const questionId = `question-${this.#questions}`;
    this.sink.emit({
      type: "question.requested",
      payload: { questionId, text: asked.question, callId: call.id },
    });
    const answer = await untilAborted(
      this.input.decisions.waitForAnswer(questionId, this.signal),
      this.signal,
    );
    return { ok: true, result: answer };
  }

  /** null when the tool may run, else the error the model will read. */
  async #approve(call: ToolCall): Promise<string | null> {
    switch (this.input.approval) {
      case "auto":
        return null;
      case "deny":
        return "denied by policy";
      case "ask": {
        this.#approvals += 1;
        const approvalId = `approval-${this.#approvals}`;
        this.sink.emit({
          type: "approval.requested",
          payload: { approvalId, tool: call.name, args: call.args },
        });
        const decision = await untilAborted(
          this.input.decisions.waitForApproval(approvalId, this.signal),
          this.signal,
        );
        if (decision.decision === "allow") return null;
        return `denied by ${decision.by}${decision.reason ? `: ${decision.reason}` : ""}`;
      }
    }
  }
}

/**
 * The price of a model: the config file's, by its spec (`openai:gpt-4o`) or its bare name
 * (`gpt-4o`), else reins's table of list prices (lib/drivers/prices.ts).
 */
function priceOf(prices: DriverInput["settings"]["prices"], modelName: string) {
  const bare = modelName.slice(modelName.indexOf(":") + 1);
  return prices[modelName] ?? tablePrice(bare, prices) ?? undefined;
}
