// The opt-in content of a trace, in the GenAI conventions' message shapes (the input and output
// messages JSON schemas of semantic conventions 1.41): the prompt, the answer, each model call's
// output and a tool's arguments and result. Recorded on spans as JSON strings, as the
// conventions allow where structured attribute values are not yet supported. Only built when the
// export is asked to carry content.
import type { ToolCall } from "../store/mod.ts";

/** The conventions' finish reasons for the stop reasons harnesses and models report. */
export function finishReasonOf(stopReason: string | null): string {
  switch (stopReason) {
    case null:
    case "end_turn":
    case "stop":
    case "stop_sequence":
      return "stop";
    case "tool_use":
    case "tool_calls":
    case "function_call":
      return "tool_call";
    case "max_tokens":
    case "length":
      return "length";
    case "content_filter":
    case "refusal":
      return "content_filter";
    default:
      return stopReason;
  }
}

/** `gen_ai.input.messages` of a turn: the prompt the user gave. */
export function inputMessages(prompt: string): string {
  return JSON.stringify([{ role: "user", parts: [{ type: "text", content: prompt }] }]);
}

/** `gen_ai.output.messages`: one assistant message with its text and the tools it called. */
export function outputMessages(
  text: string | null,
  toolCalls: readonly ToolCall[],
  finishReason: string,
): string {
  const parts: unknown[] = [];
  if (text !== null && text !== "") parts.push({ type: "text", content: text });
  for (const call of toolCalls) {
    parts.push({ type: "tool_call", id: call.id, name: call.name, arguments: call.args ?? null });
  }
  return JSON.stringify([{ role: "assistant", parts, finish_reason: finishReason }]);
}

/**
 * A tool's arguments or result as an attribute value: a string as it is (the conventions ask
 * for the value itself, and most results are text), anything else as JSON.
 */
export function toolValue(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}
