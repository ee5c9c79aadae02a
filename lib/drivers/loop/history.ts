// The conversation a later turn continues, rebuilt from the events of the session's earlier runs:
// user and assistant messages, the model's tool calls and the tools' results. It does not replay
// compaction (each run compacts again as needed) and skips the loop's own summary calls.
import type { EventInput, ToolCall } from "../../store/mod.ts";
import type { Message } from "../../model/mod.ts";

/** What the model reads for a tool's outcome: the result as text, or the error. */
export function toolResultText(ok: boolean, result: unknown, error: string | undefined): string {
  const body = result === undefined || result === null
    ? ""
    : typeof result === "string"
    ? result
    : JSON.stringify(result);
  if (ok) return body;
  const message = `Error: ${error ?? "the tool failed"}`;
  return body ? `${message}\n${body}` : message;
}

/** Rebuilds the conversation of earlier runs from their events, oldest first. */
export function historyFromEvents(events: readonly EventInput[]): Message[] {
  const messages: Message[] = [];
  const toolNames = new Map<string, string>();
  let summaryPending = false;
  // Only the conversation matters here, so this picks event types rather than switching over all.
  for (const event of events) {
    if (event.type === "model.requested") {
      summaryPending = (event.payload as { purpose?: unknown }).purpose === "summary";
    } else if (event.type === "model.completed") {
      if (summaryPending) {
        summaryPending = false;
        continue;
      }
      const { text, toolCalls } = event.payload;
      for (const call of toolCalls) toolNames.set(call.id, call.name);
      messages.push({ role: "assistant", text, toolCalls: toolCalls.map(copyCall) });
    } else if (event.type === "tool.completed") {
      const { callId, ok, result, error } = event.payload;
      messages.push({
        role: "tool",
        callId,
        name: toolNames.get(callId) ?? "tool",
        ok,
        content: toolResultText(ok, result, error),
      });
    } else if (event.type === "message.completed") {
      const { role, text } = event.payload;
      if (role !== "assistant") {
        messages.push({ role, text });
        continue;
      }
      // The loop records its final answer twice (model.completed, then message.completed);
      // other drivers only as a message. Keep it once.
      const last = messages[messages.length - 1];
      if (last?.role === "assistant" && last.toolCalls.length === 0 && last.text === text) continue;
      messages.push({ role: "assistant", text, toolCalls: [] });
    }
  }
  return pairToolMessages(messages);
}

function copyCall(call: ToolCall): ToolCall {
  return { id: call.id, name: call.name, args: call.args };
}

/**
 * Makes every assistant tool call answered by exactly one tool message right after it, as
 * Chat Completions requires: a run that ended mid-call (crash, interrupt, budget) left calls
 * without results, and a result without its call cannot be sent at all.
 */
export function pairToolMessages(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === "tool") continue; // placed with its call below, or dropped
    out.push(message);
    if (message.role !== "assistant" || message.toolCalls.length === 0) continue;
    const results = new Map<string, Message>();
    for (let j = i + 1; j < messages.length && messages[j].role === "tool"; j++) {
      const result = messages[j] as Extract<Message, { role: "tool" }>;
      if (!results.has(result.callId)) results.set(result.callId, result);
    }
    for (const call of message.toolCalls) {
      out.push(
        results.get(call.id) ?? {
          role: "tool",
          callId: call.id,
          name: call.name,
          ok: false,
          content: "Error: no result was recorded (the run ended before the tool finished)",
        },
      );
    }
  }
  return out;
}
