// The codex driver: Codex CLI as `codex exec --json` (a new thread) or `codex exec resume --json
// THREAD` (a later turn), the prompt on stdin. The thread id of `thread.started` is the context's
// native session. Codex reports tokens but no cost, and its totals cover the whole thread: this
// driver takes the earlier runs' totals off (from the history it is given) and prices the rest
// from prices.ts, marking the cost as estimated. It never asks for approvals: --approve picks
// its sandbox (docs/harnesses.md). Its lines are checked against their wire schemas
// (codex_wire.ts) before anything is read from them.
import { nowIso } from "../core/clock.ts";
import type { Driver, DriverInput, DriverResult, EventSink } from "./driver.ts";
import {
  driveHarness,
  driverSettings,
  exitFailure,
  harnessFacts,
  type Line,
  obj,
  readableLine,
  reportCliError,
  type TurnMapping,
  UsageTotals,
} from "./harness.ts";
import { budgetNotes, type BudgetSupport } from "./budget_watch.ts";
import type { HarnessExit, HarnessProcess } from "./process.ts";
import { estimateCostUsd, priceOf, unpricedNotes } from "./prices.ts";
import type {
  CodexError,
  CodexItem,
  CodexItemLine,
  CodexThreadStarted,
  CodexTurnCompleted,
  CodexTurnFailed,
  CodexUsage,
} from "./codex_wire.ts";
import { validateCodexLine } from "./wire_checks.gen.ts";
import { codexGatewayArgs, codexRoutes } from "./codex_routes.ts";

const CLI = "Codex";

/** --approve → Codex's sandbox: auto may write inside the working directory; else read-only. */
export function codexSandbox(approval: DriverInput["approval"]): string {
  return approval === "auto" ? "workspace-write" : "read-only";
}

/** The arguments of one turn; the prompt is read from stdin (`-`). */
export function codexArgs(input: DriverInput): string[] {
  const { extraArgs, model } = driverSettings(input, "codex");
  const thread = input.resume?.nativeSessionId ?? null;
  const args = thread === null ? ["exec"] : ["exec", "resume"];
  args.push(
    "--json",
    "--skip-git-repo-check",
    // `exec resume` has no --sandbox flag; the config key works for both.
    "-c",
    `sandbox_mode="${codexSandbox(input.approval)}"`,
    "-c",
    `approval_policy="never"`,
  );
  if (model !== null) args.push("-m", model);
  // The gateway's base URL after the configured args, so that it is the one Codex uses.
  args.push(...extraArgs, ...codexGatewayArgs(input));
  if (thread !== null) args.push(thread);
  args.push("-");
  return args;
}

/** The model a turn runs: the configured one, else one named in the extra arguments. */
export function codexModel(input: Pick<DriverInput, "settings" | "agent">): string | null {
  const { extraArgs, model } = driverSettings(input, "codex");
  if (model !== null) return model;
  let found: string | null = null;
  for (let i = 0; i < extraArgs.length; i++) {
    const arg = extraArgs[i];
    const next = extraArgs[i + 1];
    if ((arg === "-m" || arg === "--model") && next !== undefined) found = next;
    else if (arg.startsWith("--model=")) found = arg.slice("--model=".length);
    else if ((arg === "-c" || arg === "--config") && next?.startsWith("model=")) {
      found = next.slice("model=".length).replace(/^["']|["']$/g, "");
    }
  }
  return found;
}

/** Codex's thread totals as `turn.completed` reports them. */
interface ThreadTotals {
  input: number;
  cached: number;
  output: number;
  reasoning: number;
}

function threadTotalsOf(usage: CodexUsage | null | undefined): ThreadTotals {
  return {
    input: usage?.input_tokens ?? 0,
    cached: usage?.cached_input_tokens ?? 0,
    output: usage?.output_tokens ?? 0,
    reasoning: usage?.reasoning_output_tokens ?? 0,
  };
}

/**
 * The thread totals the last earlier run of this session ended with: the `turn.completed` line
 * kept as the `native` of its `usage.updated`. Null when no earlier run recorded one.
 */
export function earlierThreadTotals(history: DriverInput["history"]): ThreadTotals | null {
  for (let i = history.length - 1; i >= 0; i--) {
    const event = history[i];
    if (event.type !== "usage.updated") continue;
    // Kept as Codex wrote it, and checked as it was read then: checked again, being read again.
    const native = obj(event.native);
    if (native.type === "turn.completed" && validateCodexLine["turn.completed"](native) === null) {
      return threadTotalsOf((native as CodexTurnCompleted).usage);
    }
  }
  return null;
}

class CodexTurn implements TurnMapping {
  #answer: string | null = null;
  #completed = false;
  #failure: string | null = null;
  #lastError: string | null = null;
  readonly #started = new Map<string, string>();
  readonly #usage = new UsageTotals();

  constructor(
    readonly input: DriverInput,
    readonly sink: EventSink,
    readonly model: string | null,
  ) {}

  async begin(child: HarnessProcess): Promise<void> {
    await child.write(this.input.prompt);
    await child.closeStdin();
  }

  answer(): string | null {
    return this.#answer;
  }

  line(value: Line): void {
    const native = value;
    if (!readableLine(this.sink, "codex", CLI, validateCodexLine, value)) return;
    switch (value.type) {
      case "thread.started": {
        const thread = (value as CodexThreadStarted).thread_id;
        if (thread) {
          this.sink.emit({ type: "session.linked", payload: { nativeSessionId: thread }, native });
        }
        return;
      }
      case "item.started":
        return this.#itemStarted((value as CodexItemLine).item, native);
      case "item.completed":
        return this.#itemCompleted((value as CodexItemLine).item, native);
      case "turn.completed":
        this.#completed = true;
        this.#turnUsage((value as CodexTurnCompleted).usage, native);
        return;
      case "turn.failed":
        this.#failure = (value as CodexTurnFailed).error?.message ?? this.#lastError ??
          "the turn failed";
        return;
      case "error":
        // Also sent for recoverable trouble (a reconnect); the turn's outcome decides.
        this.#lastError = (value as CodexError).message ?? null;
        reportCliError(this.sink, "codex", CLI, this.#lastError ?? undefined, native);
        return;
      default:
        // turn.started, item.updated (todo lists): nothing reins records.
        return;
    }
  }

  #tool(item: CodexItem): { tool: string; args: unknown } | null {
    switch (item.type) {
      case "command_execution":
        return { tool: "command_execution", args: { command: item.command } };
      case "file_change":
        return { tool: "file_change", args: { changes: item.changes ?? [] } };
      case "mcp_tool_call":
        return {
          tool: `${item.server ?? "mcp"}.${item.tool ?? "tool"}`,
          args: item.arguments ?? null,
        };
      case "web_search":
        return { tool: "web_search", args: { query: item.query } };
      default:
        return null;
    }
  }

  #itemStarted(item: CodexItem, native: Line): void {
    const tool = this.#tool(item);
    const callId = item.id;
    if (tool === null || !callId) return;
    this.#started.set(callId, nowIso());
    this.sink.emit({ type: "tool.started", payload: { callId, ...tool }, native });
  }

  #itemCompleted(item: CodexItem, native: Line): void {
    switch (item.type) {
      case "agent_message": {
        const text = item.text ?? "";
        this.#answer = text;
        this.sink.emit({
          type: "message.completed",
          payload: { role: "assistant", text },
          native,
        });
        return;
      }
      case "error":
        reportCliError(this.sink, "codex", CLI, item.message, native);
        return;
      default:
        break;
    }
    const tool = this.#tool(item);
    const callId = item.id;
    if (tool === null || !callId) return; // reasoning, todo_list
    if (!this.#started.has(callId)) this.#itemStarted(item, native);
    const ok = item.status === "completed" &&
      (item.type !== "command_execution" || item.exit_code === 0);
    const output = item.type === "command_execution"
      ? item.aggregated_output ?? ""
      : item.type === "mcp_tool_call"
      ? item.result ?? null
      : null;
    const error = item.error?.message ??
      (item.type === "command_execution"
        ? `exit code ${item.exit_code ?? "none"}: ${output}`
        : `status ${String(item.status)}`);
    this.sink.emit({
      type: "tool.completed",
      payload: {
        callId,
        ok,
        ...(ok ? { result: output } : { error }),
        startedAt: this.#started.get(callId) ?? null,
        finishedAt: nowIso(),
      },
      native,
    });
  }

  #turnUsage(usage: CodexUsage | null | undefined, native: Line): void {
    const totals = threadTotalsOf(usage);
    const earlier = earlierThreadTotals(this.input.history);
    if (this.input.resume?.nativeSessionId && earlier === null) {
      this.sink.emit({
        type: "problem",
        payload: {
          source: "codex",
          reason: `${CLI} reports the whole thread's usage and the earlier runs' usage is not ` +
            "known here: this run's tokens include the earlier turns'",
        },
      });
    }
    const base = earlier ?? { input: 0, cached: 0, output: 0, reasoning: 0 };
    const run = {
      inputTokens: Math.max(0, totals.input - base.input),
      cacheReadTokens: Math.max(0, totals.cached - base.cached),
      outputTokens: Math.max(0, totals.output - base.output),
      reasoningTokens: Math.max(0, totals.reasoning - base.reasoning),
    };
    const price = priceOf(this.model, this.input.settings.prices);
    const cost = price === null ? null : estimateCostUsd(price, {
      inputTokens: run.inputTokens,
      cachedInputTokens: run.cacheReadTokens,
      outputTokens: run.outputTokens,
    });
    this.#usage.set({
      ...run,
      cacheWriteTokens: usage?.cache_write_input_tokens ?? null,
      costUsd: cost,
      ...(cost === null ? {} : { costEstimated: true }),
    });
    // `native` keeps the thread totals: the next run of the thread subtracts them.
    this.#usage.emit(this.sink, native);
  }

  settle(exit: HarnessExit): DriverResult {
    if (this.#failure !== null) {
      return {
        status: "failed",
        reason: `${CLI} failed: ${this.#failure}`,
        result: this.#answer,
        exitCode: exit.code,
      };
    }
    if (this.#completed && exit.code === 0) {
      return { status: "completed", reason: null, result: this.#answer, exitCode: 0 };
    }
    // Codex's stderr is mostly its own chatter ("Reading additional input from stdin..."):
    // the last error line it printed says more.
    return exitFailure(CLI, exit, {
      what: this.#lastError ?? (exit.code === 0 ? "it ended without turn.completed" : null),
      answer: this.#answer,
    });
  }
}

/** Codex reports tokens (and reins prices them) only with turn.completed, and no model calls. */
const CODEX_BUDGET: BudgetSupport = { native: [], live: [], atEnd: ["tokens", "usd"] };

export function createCodexDriver(): Driver {
  return {
    name: "codex",
    harness: "codex",
    budgetNotes: (input) => budgetNotes(input.budget, CODEX_BUDGET, CLI),
    costNotes: (input) => unpricedNotes(codexModel(input), input.settings.prices, CLI),
    modelRoutes: codexRoutes,
    agentFacts: (input) =>
      harnessFacts(input, "codex", { provider: "openai", inputExcludesCache: false }),
    start(input, sink, signal) {
      return driveHarness(
        {
          driver: "codex",
          cli: CLI,
          args: codexArgs(input),
          stdin: "piped",
          askFallback: "runs it in the read-only sandbox, as --approve deny does",
          budget: { ...CODEX_BUDGET, usageEvents: "final" },
        },
        (sink) => new CodexTurn(input, sink, codexModel(input)),
        { input, sink, signal },
      );
    },
  };
}
