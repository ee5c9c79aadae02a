// The model interface: one call takes the conversation and the tool specs and returns what
// `model.completed` records. Models do not emit events or run tools; whoever calls them does —
// the built-in loop, a suite's judge and simulated user — so every model (mock, replay, demo,
// openai) is recorded the same way. Nothing in lib/model/ knows the loop or the suites.
import { ReinsError, type ReinsErrorOptions } from "../core/errors.ts";
import type { PayloadOf, ToolCall } from "../store/mod.ts";

/** One model call's answer: exactly the `model.completed` payload, which replay re-serves. */
export type ModelOutput = PayloadOf<"model.completed">;

/** The conversation as the loop keeps it; each model maps it to its own wire format. */
export type Message =
  | { role: "system"; text: string }
  | { role: "user"; text: string }
  | { role: "assistant"; text: string | null; toolCalls: ToolCall[] }
  | { role: "tool"; callId: string; name: string; ok: boolean; content: string };

/**
 * Marks the user message that stands for earlier turns the loop summarised (compacted), so that a
 * model may tell it from what a person wrote.
 */
export const SUMMARY_PREFIX = "[Summary of the earlier conversation, compacted by reins]";

/** A tool as the model sees it: `parameters` is a JSON Schema of the arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Why the loop calls the model: a normal turn, the tool-less final answer, or a summary. */
export type ModelPurpose = "turn" | "final" | "summary";

export interface ModelRequest {
  history: readonly Message[];
  /** Empty when the model must answer without tools (budget exhausted, summaries). */
  tools: readonly ToolSpec[];
  purpose: ModelPurpose;
  signal: AbortSignal;
  /**
   * Told each piece of the answer's text as it arrives, for a model that streams (openai:);
   * models that answer at once never call it. The whole text is still in the output.
   */
  onText?: (text: string) => void;
}

export interface Model {
  /** The model spec it was made from (`mock:script.json`, `openai:gpt-4o-mini`, `demo`). */
  readonly name: string;
  complete(request: ModelRequest): Promise<ModelOutput>;
}

/** A model could not answer: a bad script, an endpoint that refused, a script run dry. */
export class ModelError extends ReinsError {
  readonly status: number | undefined;
  constructor(
    message: string,
    options: Omit<ReinsErrorOptions, "exitCode"> & { status?: number } = {},
  ) {
    super("run_failed", message, options);
    this.name = "ModelError";
    this.status = options.status;
  }
}

/** The stop reason a model without its own vocabulary reports. */
export function defaultStopReason(toolCalls: readonly unknown[]): string {
  return toolCalls.length > 0 ? "tool_use" : "end_turn";
}
