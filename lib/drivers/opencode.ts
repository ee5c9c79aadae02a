// The opencode driver: `opencode run --format json … -- PROMPT`, resumed with -s and the
// session id of its `step_start` lines. Cost is opencode's own (`step_finish` part.cost, from the
// model prices in its config). It cannot ask us before a tool runs: --approve auto maps to
// --auto; deny (and ask) to an OPENCODE_PERMISSION that denies edits, shell and web fetches.
// Its lines are checked against their wire schemas (opencode_wire.ts) before anything is read.
import type { Driver, DriverInput, DriverResult, EventSink } from "./driver.ts";
import {
  driveHarness,
  driverSettings,
  exitFailure,
  harnessFacts,
  type Line,
  readableLine,
  textOf,
  type TurnMapping,
  UsageTotals,
} from "./harness.ts";
import { budgetNotes, type BudgetSupport } from "./budget_watch.ts";
import type { HarnessExit } from "./process.ts";
import type { AgentFacts } from "../store/mod.ts";
import type {
  OpencodeError,
  OpencodeStepFinish,
  OpencodeText,
  OpencodeToolUse,
} from "./opencode_wire.ts";
import { validateOpencodeLine } from "./wire_checks.gen.ts";
import { opencodeGatewayEnv, opencodeRoutes } from "./opencode_routes.ts";

const CLI = "opencode";

/** What --approve deny (and ask) sets: the permissions opencode would otherwise grant or ask. */
export const OPENCODE_DENY_PERMISSION = { edit: "deny", bash: "deny", webfetch: "deny" };

/** opencode's `-m PROVIDER/MODEL` providers, in the GenAI conventions' names where they have one. */
const OPENCODE_PROVIDERS: Record<string, string> = {
  anthropic: "anthropic",
  openai: "openai",
  google: "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  "amazon-bedrock": "aws.bedrock",
  azure: "azure.ai.openai",
  mistral: "mistral_ai",
  groq: "groq",
  deepseek: "deepseek",
  xai: "x_ai",
  perplexity: "perplexity",
  cohere: "cohere",
};

/**
 * The facts of an opencode agent: the provider and model of its configured `PROVIDER/MODEL`
 * (opencode itself when none is configured), counted as Anthropic counts input (cache left out).
 */
export function opencodeFacts(input: Pick<DriverInput, "settings" | "agent">): AgentFacts {
  const facts = harnessFacts(input, "opencode", { provider: CLI, inputExcludesCache: true });
  const slash = facts.model?.indexOf("/") ?? -1;
  if (facts.model === undefined || slash <= 0) return facts;
  const prefix = facts.model.slice(0, slash);
  const { model: _spec, ...rest } = facts;
  const model = facts.model.slice(slash + 1);
  return { ...rest, provider: OPENCODE_PROVIDERS[prefix] ?? prefix, ...(model ? { model } : {}) };
}

export function opencodeArgs(input: DriverInput): string[] {
  const { extraArgs, model } = driverSettings(input, "opencode");
  const args = ["run", "--format", "json"];
  if (model !== null) args.push("--model", model);
  if (input.resume?.nativeSessionId) args.push("--session", input.resume.nativeSessionId);
  if (input.approval === "auto") args.push("--auto");
  // "--" keeps a prompt that starts with "-" from being read as a flag.
  return [...args, ...extraArgs, "--", input.prompt];
}

export function opencodeEnv(input: DriverInput): Record<string, string> {
  return input.approval === "auto"
    ? {}
    : { OPENCODE_PERMISSION: JSON.stringify(OPENCODE_DENY_PERMISSION) };
}

function isoOf(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

class OpencodeTurn implements TurnMapping {
  #answer: string | null = null;
  #error: string | null = null;
  #linked: string | null = null;
  readonly #usage = new UsageTotals();

  constructor(readonly sink: EventSink) {}

  answer(): string | null {
    return this.#answer;
  }

  line(native: Line): void {
    if (!readableLine(this.sink, "opencode", CLI, validateOpencodeLine, native)) return;
    const session = (native as { sessionID?: string }).sessionID;
    if (session && session !== this.#linked) {
      this.#linked = session;
      this.sink.emit({ type: "session.linked", payload: { nativeSessionId: session }, native });
    }
    switch (native.type) {
      case "text": {
        const text = (native as OpencodeText).part?.text ?? "";
        if (text === "") return;
        this.#answer = text;
        this.sink.emit({ type: "message.completed", payload: { role: "assistant", text }, native });
        return;
      }
      case "tool_use":
        return this.#tool((native as OpencodeToolUse).part ?? {}, native);
      case "step_finish": {
        const part = (native as OpencodeStepFinish).part;
        const tokens = part?.tokens;
        this.#usage.add({
          inputTokens: tokens?.input,
          outputTokens: tokens?.output,
          reasoningTokens: tokens?.reasoning,
          cacheReadTokens: tokens?.cache?.read,
          cacheWriteTokens: tokens?.cache?.write,
          costUsd: part?.cost,
          requests: 1,
        });
        this.#usage.emit(this.sink, native);
        return;
      }
      case "error": {
        const error = (native as OpencodeError).error;
        this.#error = error?.data?.message ?? error?.message ?? error?.name ?? "an error";
        const status = error?.data?.statusCode;
        if (status !== undefined) this.#error = `${this.#error} (HTTP ${status})`;
        return;
      }
      default:
        // step_start (its session id is taken above), reasoning: nothing else to record.
        return;
    }
  }

  /** opencode writes a tool call once, when it has finished: both events come from that line. */
  #tool(part: NonNullable<OpencodeToolUse["part"]>, native: Line): void {
    const state = part.state ?? {};
    const callId = part.callID ?? part.id ?? "unknown";
    const time = state.time;
    this.sink.emit({
      type: "tool.started",
      payload: { callId, tool: part.tool ?? "unknown", args: state.input ?? null },
      native,
    });
    if (state.status !== "completed" && state.status !== "error") return;
    const ok = state.status === "completed";
    this.sink.emit({
      type: "tool.completed",
      payload: {
        callId,
        ok,
        ...(ok
          ? { result: textOf(state.output) }
          : { error: typeof state.error === "string" ? state.error : "the tool failed" }),
        startedAt: isoOf(time?.start),
        finishedAt: isoOf(time?.end),
      },
    });
  }

  settle(exit: HarnessExit): DriverResult {
    if (this.#error !== null) {
      return {
        status: "failed",
        reason: `${CLI} failed: ${this.#error}`,
        result: this.#answer,
        exitCode: exit.code,
      };
    }
    if (exit.code === 0) {
      return { status: "completed", reason: null, result: this.#answer, exitCode: 0 };
    }
    return exitFailure(CLI, exit, { what: null, answer: this.#answer });
  }
}

/** Every step_finish carries its tokens and cost: reins holds opencode to all three limits. */
const OPENCODE_BUDGET: BudgetSupport = { native: [], live: ["turns", "tokens", "usd"], atEnd: [] };

export function createOpencodeDriver(): Driver {
  return {
    name: "opencode",
    harness: "opencode",
    budgetNotes: (input) => budgetNotes(input.budget, OPENCODE_BUDGET, CLI),
    agentFacts: opencodeFacts,
    modelRoutes: opencodeRoutes,
    // opencode retries a 5xx forever, saying nothing: the fourth failure in a row ends the turn.
    upstreamFailuresTolerated: 4,
    start(input, sink, signal) {
      return driveHarness(
        {
          driver: "opencode",
          cli: CLI,
          args: opencodeArgs(input),
          stdin: "null",
          env: opencodeEnv(input),
          askFallback: "denies edits, shell commands and web fetches, as --approve deny does",
          budget: { ...OPENCODE_BUDGET, usageEvents: "live" },
          gatewayEnv: opencodeGatewayEnv(input),
        },
        (sink) => new OpencodeTurn(sink),
        { input, sink, signal },
      );
    },
  };
}
