// The gemini driver: Gemini CLI as `gemini --prompt=… --output-format stream-json`, resumed with
// --resume and the session id its `init` line reported. Its exit code is not an outcome (the
// HTTP status modulo 256 after an API error, 0 after a signal): the `result` line is. It cannot
// ask us before a tool runs: --approve picks its approval mode (docs/harnesses.md). Its lines
// are checked against their wire schemas (gemini_wire.ts) before anything is read from them.
import { nowIso } from "../core/clock.ts";
import type { Driver, DriverInput, DriverResult, EventSink, ModelRoutes } from "./driver.ts";
import {
  driveHarness,
  driverSettings,
  exitFailure,
  harnessFacts,
  type Line,
  readableLine,
  reportCliError,
  textOf,
  type TurnMapping,
  UsageTotals,
} from "./harness.ts";
import { budgetNotes, type BudgetSupport } from "./budget_watch.ts";
import type { HarnessExit } from "./process.ts";
import { estimateCostUsd, priceOf, unpricedNotes } from "./prices.ts";
import type {
  GeminiError,
  GeminiInit,
  GeminiMessage,
  GeminiResult,
  GeminiToolResult,
  GeminiToolUse,
} from "./gemini_wire.ts";
import { validateGeminiLine } from "./wire_checks.gen.ts";

const CLI = "Gemini CLI";

/** Google AI's Gemini API and Code Assist (a Google sign-in), Gemini CLI's defaults. */
export const GEMINI_API = "https://generativelanguage.googleapis.com";
export const CODE_ASSIST_API = "https://cloudcode-pa.googleapis.com";

/**
 * Where Gemini CLI sends its model calls: GOOGLE_GEMINI_BASE_URL (an API key) or
 * CODE_ASSIST_ENDPOINT (a Google sign-in), else their defaults; both are routed, since which one
 * it uses is its settings' business. On Vertex AI it calls a regional endpoint the gateway does
 * not pass.
 */
export function geminiRoutes(input: Pick<DriverInput, "env" | "settings">): ModelRoutes {
  const env = { ...input.settings.harnessEnv, ...input.env };
  if (/^true$/i.test(env.GOOGLE_GENAI_USE_VERTEXAI ?? "")) {
    return {
      unavailable: "GOOGLE_GENAI_USE_VERTEXAI is set: Gemini CLI calls Vertex AI's regional " +
        "endpoint, which reins's gateway does not pass",
    };
  }
  return {
    routes: {
      gemini: { upstream: env.GOOGLE_GEMINI_BASE_URL || GEMINI_API },
      "code-assist": { upstream: env.CODE_ASSIST_ENDPOINT || CODE_ASSIST_API },
    },
  };
}

/** --approve → Gemini CLI's approval mode. In headless mode "default" leaves out every tool that
 * would need a confirmation, so deny (and ask, which it cannot forward) maps there. */
export function geminiApprovalMode(approval: DriverInput["approval"]): string {
  return approval === "auto" ? "yolo" : "default";
}

/** Exit codes Gemini CLI ends with before any `result` line, and what they mean. */
const EXIT_MEANINGS: Record<number, string> = {
  41: "authentication is not set up (security.auth.selectedType in ~/.gemini/settings.json)",
  42: "it refused the input (a --resume of a session it cannot find in this directory, say)",
  44: "the sandbox could not start",
  52: "its configuration could not be read",
  53: "the turn limit was reached",
  55:
    "the working directory is not a trusted folder (GEMINI_CLI_TRUST_WORKSPACE=true or --skip-trust)",
};

export function geminiArgs(input: DriverInput): string[] {
  const { extraArgs, model } = driverSettings(input, "gemini");
  // --prompt=… keeps a prompt that starts with "-" from being read as a flag.
  const args = [`--prompt=${input.prompt}`, "--output-format", "stream-json"];
  args.push("--approval-mode", geminiApprovalMode(input.approval));
  if (model !== null) args.push("--model", model);
  if (input.resume?.nativeSessionId) args.push("--resume", input.resume.nativeSessionId);
  return [...args, ...extraArgs];
}

class GeminiTurn implements TurnMapping {
  #answer: string | null = null;
  #text = "";
  #textNative: Line | null = null;
  #result: GeminiResult | null = null;
  #model: string | null;
  #linked: string | null = null;
  readonly #started = new Map<string, string>();
  readonly #usage = new UsageTotals();

  constructor(readonly input: DriverInput, readonly sink: EventSink) {
    this.#model = driverSettings(input, "gemini").model;
  }

  answer(): string | null {
    return this.#text !== "" ? this.#text : this.#answer;
  }

  /** Ends the assistant message being streamed, if any. */
  #flush(): void {
    if (this.#text === "") return;
    this.#answer = this.#text;
    this.sink.emit({
      type: "message.completed",
      payload: { role: "assistant", text: this.#text },
      native: this.#textNative ?? undefined,
    });
    this.#text = "";
    this.#textNative = null;
  }

  line(native: Line): void {
    if (!readableLine(this.sink, "gemini", CLI, validateGeminiLine, native)) return;
    if (native.type !== "message") this.#flush();
    switch (native.type) {
      case "init": {
        const value = native as GeminiInit;
        this.#model = value.model ?? this.#model;
        const id = value.session_id;
        if (id && id !== this.#linked) {
          this.#linked = id;
          // The model the CLI says it uses, for what reads the run (the trace export).
          const agent = value.model ? { agent: { model: value.model } } : {};
          this.sink.emit({
            type: "session.linked",
            payload: { nativeSessionId: id, ...agent },
            native,
          });
        }
        return;
      }
      case "message": {
        const value = native as GeminiMessage;
        // The user's message is echoed back: reins recorded it already.
        if (value.role !== "assistant") return;
        const text = value.content ?? "";
        if (value.delta === true) {
          this.#text += text;
          this.#textNative = native;
          // Through the gateway the text streams as it comes off the wire: not twice.
          if (!this.input.gateway) {
            this.sink.emit({ type: "message.delta", payload: { role: "assistant", text }, native });
          }
        } else {
          this.#flush();
          this.#text = text;
          this.#textNative = native;
          this.#flush();
        }
        return;
      }
      case "tool_use": {
        const value = native as GeminiToolUse;
        const callId = value.tool_id ?? `tool-${this.#started.size + 1}`;
        this.#started.set(callId, nowIso());
        this.sink.emit({
          type: "tool.started",
          payload: {
            callId,
            tool: value.tool_name ?? "unknown",
            args: value.parameters ?? null,
          },
          native,
        });
        return;
      }
      case "tool_result": {
        const value = native as GeminiToolResult;
        const callId = value.tool_id ?? "unknown";
        const ok = value.status === "success";
        const output = textOf(value.output);
        this.sink.emit({
          type: "tool.completed",
          payload: {
            callId,
            ok,
            ...(ok
              ? { result: output }
              : { error: value.error?.message ?? (output || "the tool failed") }),
            startedAt: this.#started.get(callId) ?? null,
            finishedAt: nowIso(),
          },
          native,
        });
        return;
      }
      case "error":
        reportCliError(this.sink, "gemini", CLI, (native as GeminiError).message, native);
        return;
      case "result":
        this.#result = native as GeminiResult;
        if (this.#result.stats) this.#finalUsage(this.#result.stats, native);
        return;
      default:
        return;
    }
  }

  #finalUsage(stats: NonNullable<GeminiResult["stats"]>, native: Line): void {
    if (Object.keys(stats).length === 0) return;
    const input = stats.input_tokens ?? 0;
    const cached = stats.cached ?? 0;
    const output = stats.output_tokens ?? 0;
    // Priced per model when the stats break it down (a turn may use more than one).
    const perModel = Object.entries(stats.models ?? {});
    let cost: number | null = 0;
    const priced = perModel.length > 0
      ? perModel.map(([model, counts]) => ({ model, counts }))
      : [{ model: this.#model ?? "", counts: stats }];
    for (const { model, counts } of priced) {
      const price = priceOf(model, this.input.settings.prices);
      if (price === null) {
        cost = null;
        break;
      }
      cost += estimateCostUsd(price, {
        inputTokens: counts.input_tokens ?? 0,
        cachedInputTokens: counts.cached ?? 0,
        outputTokens: counts.output_tokens ?? 0,
      });
    }
    this.#usage.set({
      inputTokens: input,
      outputTokens: output,
      cacheReadTokens: cached,
      reasoningTokens: null,
      costUsd: cost === null ? null : Math.round(cost * 1e8) / 1e8,
      ...(cost === null ? {} : { costEstimated: true }),
    });
    this.#usage.emit(this.sink, native);
  }

  settle(exit: HarnessExit): DriverResult {
    const result = this.#result;
    if (result !== null) {
      if (result.status === "success") {
        return { status: "completed", reason: null, result: this.answer(), exitCode: exit.code };
      }
      return {
        status: "failed",
        reason: `${CLI} failed: ${result.error?.message ?? result.status ?? "error"}`,
        result: this.answer(),
        exitCode: exit.code,
      };
    }
    const meaning = exit.code !== null ? EXIT_MEANINGS[exit.code] : undefined;
    return exitFailure(CLI, exit, {
      what: meaning ?? (exit.code === 0 ? "it ended without a result line" : null),
      withStderr: true,
      answer: this.answer(),
    });
  }
}

/** Gemini CLI reports its stats (and reins prices them) only in its result line. */
const GEMINI_BUDGET: BudgetSupport = { native: [], live: [], atEnd: ["tokens", "usd"] };

export function createGeminiDriver(): Driver {
  return {
    name: "gemini",
    harness: "gemini-cli",
    budgetNotes: (input) => budgetNotes(input.budget, GEMINI_BUDGET, CLI),
    costNotes: (input) =>
      unpricedNotes(driverSettings(input, "gemini").model, input.settings.prices, CLI),
    modelRoutes: geminiRoutes,
    agentFacts: (input) =>
      harnessFacts(input, "gemini", { provider: "gcp.gemini", inputExcludesCache: false }),
    start(input, sink, signal) {
      return driveHarness(
        {
          driver: "gemini",
          cli: CLI,
          args: geminiArgs(input),
          stdin: "null",
          askFallback: "leaves out the tools that need a confirmation, as --approve deny does",
          budget: { ...GEMINI_BUDGET, usageEvents: "final" },
          gatewayEnv: input.gateway
            ? {
              GOOGLE_GEMINI_BASE_URL: `${input.gateway.baseUrl}/gemini`,
              CODE_ASSIST_ENDPOINT: `${input.gateway.baseUrl}/code-assist`,
            }
            : undefined,
        },
        (sink) => new GeminiTurn(input, sink),
        { input, sink, signal },
      );
    },
  };
}
