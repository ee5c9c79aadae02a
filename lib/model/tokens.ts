// How big a conversation is, roughly: about four characters a token, enough for the loop to
// decide when to compact and for the models that answer inside reins to report a usage. Not a
// tokenizer: no model's real count is attempted.
import type { Message } from "./model.ts";

/** A rough token count (about four characters a token), enough to decide when to compact. */
export function estimateTokens(messages: readonly Message[]): number {
  let chars = 0;
  for (const message of messages) chars += messageChars(message) + 16;
  return Math.ceil(chars / 4);
}

export function messageChars(message: Message): number {
  switch (message.role) {
    case "system":
    case "user":
      return message.text.length;
    case "assistant":
      return (message.text?.length ?? 0) +
        message.toolCalls.reduce(
          (sum, call) => sum + call.name.length + (JSON.stringify(call.args) ?? "").length,
          0,
        );
    case "tool":
      return message.content.length;
  }
}
