// The model interface of the built-in loop: one call takes the conversation and the tool specs
// and returns what `model.completed` records. Models do not emit events or run tools; the loop
// does both, so every model (mock, replay, demo, openai) is recorded the same way.
import { ReinsError, type ReinsErrorOptions } from "../../core/errors.ts";
import type { PayloadOf, ToolCall } from "../../store/contracts.ts";

/** One model call's answer: exactly the `model.completed` payload, which replay re-serves. */
export type ModelOutput = PayloadOf<"model.completed">;

/** The conversation as the loop keeps it; each model maps it to its own wire format. */
export type Message =
  | { role: "system"; text: string }
  | { role: "user"; text: string }
  | { role: "assistant"; text: string | null; toolCalls: ToolCall[] }
  | { role: "tool"; callId: string; name: string; ok: boolean; content: string };

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
