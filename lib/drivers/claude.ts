// The claude driver: Claude Code as `claude -p --output-format stream-json --verbose
// --input-format stream-json`, the prompt sent as a user message on stdin. A new conversation
// gets reins's session id with --session-id, a later turn --resume. Claude Code asks us before a
// tool runs (--permission-prompt-tool stdio), and --approve decides (auto: the acceptEdits
// permission mode first); its AskUserQuestion tool reaches reins the same way and becomes
// questions answered with `reins answer`. See docs/harnesses.md for the line mapping.
// This module is what the spawn needs (the arguments); the lines are read by claude_turn.ts, loaded
// once the CLI runs, while it starts up. They are checked against their wire schemas
// (claude_wire.ts) before anything is read from them: a line reins cannot read is kept as a
// `problem`, never half-used.
import { importLazily } from "../core/lazy_import.ts";
import type { Driver, DriverInput, ModelRoutes } from "./driver.ts";
import { driveHarness, driverSettings, harnessFacts } from "./harness.ts";
import { budgetNotes, type BudgetSupport } from "./budget_watch.ts";
import { CLAUDE_AUTO_PERMISSION_MODE, CLI } from "./claude_names.ts";

/** The arguments of one turn (the prompt itself goes on stdin). */
export function claudeArgs(input: DriverInput): string[] {
  const { extraArgs, model } = driverSettings(input, "claude");
  const args = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
  ];
  // A session Claude Code never confirmed (no system/init line was seen) was never written:
  // start it under the same id rather than resume what does not exist.
  if (input.resume?.nativeSessionId) args.push("--resume", input.resume.nativeSessionId);
  else args.push("--session-id", input.resume?.sessionId ?? input.sessionId);
  // Always the stdio prompt tool: through it Claude Code asks reins before a tool runs and asks
  // the user its questions (AskUserQuestion, which it disables without a prompt tool). Under
  // --approve auto the acceptEdits mode decides first, so only what that mode would ask about
  // reaches reins — and is refused, as that mode alone refuses it.
  if (input.approval === "auto") args.push("--permission-mode", CLAUDE_AUTO_PERMISSION_MODE);
  args.push("--permission-prompt-tool", "stdio");
  if (model !== null) args.push("--model", model);
  // Claude Code holds itself to these (its result then says error_max_turns/…_budget_usd), unless
  // the model gateway holds the turn to its whole budget.
  if (!input.gateway && input.budget.maxTurns !== undefined) {
    args.push("--max-turns", String(input.budget.maxTurns));
  }
  if (!input.gateway && input.budget.maxUsd !== undefined) {
    args.push("--max-budget-usd", String(input.budget.maxUsd));
  }
  return [...args, ...extraArgs];
}

/**
 * Claude Code stops itself at --max-turns and --max-budget-usd; reins counts tokens from each API
 * message as it streams (its usage.updated comes only with the result).
 */
const CLAUDE_BUDGET: BudgetSupport = { native: ["turns", "usd"], live: ["tokens"], atEnd: [] };

/** Anthropic's API, where Claude Code calls its model unless ANTHROPIC_BASE_URL says. */
export const ANTHROPIC_API = "https://api.anthropic.com";

/**
 * Where Claude Code sends its model calls: ANTHROPIC_BASE_URL (the turn's variables first, then
 * reins's), else Anthropic's API. On Bedrock or Vertex it calls their SDKs' endpoints instead,
 * which the gateway does not pass.
 */
export function claudeRoutes(input: Pick<DriverInput, "env" | "settings">): ModelRoutes {
  const env = { ...input.settings.harnessEnv, ...input.env };
  for (const name of ["CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"] as const) {
    if (env[name] && !/^(0|false|no|off)?$/i.test(env[name])) {
      return {
        unavailable: `${name} is set: Claude Code calls its model through that cloud's SDK, ` +
          "which reins's gateway does not pass",
      };
    }
  }
  return { routes: { anthropic: { upstream: env.ANTHROPIC_BASE_URL || ANTHROPIC_API } } };
}

export function createClaudeDriver(): Driver {
  return {
    name: "claude",
    harness: "claude-code",
    budgetNotes: (input) => budgetNotes(input.budget, CLAUDE_BUDGET, CLI),
    modelRoutes: claudeRoutes,
    // Anthropic's input_tokens leave cache reads and writes out.
    agentFacts: (input) =>
      harnessFacts(input, "claude", { provider: "anthropic", inputExcludesCache: true }),
    start(input, sink, signal) {
      return driveHarness(
        {
          driver: "claude",
          cli: CLI,
          args: claudeArgs(input),
          stdin: "piped",
          budget: { ...CLAUDE_BUDGET, usageEvents: "final" },
          gatewayEnv: input.gateway
            ? { ANTHROPIC_BASE_URL: `${input.gateway.baseUrl}/anthropic` }
            : undefined,
        },
        // The line mapping (and the wire checks) load while Claude Code starts up.
        async (sink) => {
          const { ClaudeTurn } = await importLazily<typeof import("./claude_turn.ts")>(
            "drivers/claude_turn.ts",
          );
          return new ClaudeTurn(input, sink, signal);
        },
        { input, sink, signal },
      );
    },
  };
}
