// The wire format of OpenAI-compatible Chat Completions: our history as `messages`, our tools as
// `tools`, and a streamed answer (chat.completion.chunk) folded back into a model output. Only
// shapes and mapping live here; HTTP, retries and errors are in openai_model.ts.
import { z } from "zod";
import type { CallUsage, ToolCall } from "../store/mod.ts";
import { defaultStopReason, type Message, type ModelOutput, type ToolSpec } from "./model.ts";

export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | {
    role: "assistant";
    content: string | null;
    tool_calls?: {
      id: string;
      type: "function";
      function: { name: string; arguments: string };
    }[];
  }
  | { role: "tool"; tool_call_id: string; content: string };

export function toChatMessages(history: readonly Message[]): ChatMessage[] {
  return history.map((message): ChatMessage => {
    switch (message.role) {
      case "system":
      case "user":
        return { role: message.role, content: message.text };
      case "assistant":
        if (message.toolCalls.length === 0) return { role: "assistant", content: message.text };
        return {
          role: "assistant",
          content: message.text,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: {
              name: call.name,
              arguments: typeof call.args === "string"
                ? call.args
                : JSON.stringify(call.args ?? {}),
            },
          })),
        };
      case "tool":
        return { role: "tool", tool_call_id: message.callId, content: message.content };
    }
  });
}

export function chatRequestBody(
  model: string,
  history: readonly Message[],
  tools: readonly ToolSpec[],
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model,
    messages: toChatMessages(history),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (tools.length > 0) {
    body.tools = tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  return body;
}

const ChatUsage = z.looseObject({
  prompt_tokens: z.number().int().nonnegative().optional(),
  completion_tokens: z.number().int().nonnegative().optional(),
  prompt_tokens_details: z.looseObject({
    cached_tokens: z.number().int().nonnegative().nullish(),
  }).nullish(),
  completion_tokens_details: z.looseObject({
    reasoning_tokens: z.number().int().nonnegative().nullish(),
  }).nullish(),
});

const ToolCallDelta = z.looseObject({
  index: z.number().int().nonnegative().default(0),
  id: z.string().nullish(),
  function: z.looseObject({
    name: z.string().nullish(),
    arguments: z.string().nullish(),
  }).nullish(),
});

/** One `chat.completion.chunk` (what a `data:` line of the stream holds). */
export const ChatChunk = z.looseObject({
  choices: z.array(z.looseObject({
    delta: z.looseObject({
      content: z.string().nullish(),
      reasoning_content: z.string().nullish(),
      reasoning: z.string().nullish(),
      tool_calls: z.array(ToolCallDelta).nullish(),
    }).nullish(),
    finish_reason: z.string().nullish(),
  })).nullish(),
  usage: ChatUsage.nullish(),
  error: z.looseObject({ message: z.string().optional() }).nullish(),
});
export type ChatChunk = z.infer<typeof ChatChunk>;

/** A non-streamed `chat.completion`, for servers that ignore `stream: true`. */
export const ChatCompletion = z.looseObject({
  choices: z.array(z.looseObject({
    message: z.looseObject({
      content: z.string().nullish(),
      reasoning_content: z.string().nullish(),
      tool_calls: z.array(z.looseObject({
        id: z.string().nullish(),
        function: z.looseObject({ name: z.string(), arguments: z.string().nullish() }),
      })).nullish(),
    }),
    finish_reason: z.string().nullish(),
  })).min(1),
  usage: ChatUsage.nullish(),
});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

/** Folds stream chunks into one model output. */
export class ChatStream {
  #text = "";
  #reasoning = "";
  #calls: { id: string | null; name: string; args: string }[] = [];
  #finishReason: string | null = null;
  #usage: CallUsage | null = null;

  add(chunk: ChatChunk): void {
    if (chunk.usage) this.#usage = mapUsage(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      if (delta?.content) this.#text += delta.content;
      const reasoning = delta?.reasoning_content ?? delta?.reasoning;
      if (reasoning) this.#reasoning += reasoning;
      for (const part of delta?.tool_calls ?? []) {
        const call = this.#calls[part.index] ??= { id: null, name: "", args: "" };
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) call.args += part.function.arguments;
      }
      if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    }
  }

  get finished(): boolean {
    return this.#finishReason !== null;
  }

  output(): ModelOutput {
    const toolCalls = this.#calls.filter(Boolean).map((call, index) =>
      toolCall(call.id, call.name, call.args, index)
    );
    return {
      text: this.#text === "" ? null : this.#text,
      toolCalls,
      stopReason: mapStopReason(this.#finishReason, toolCalls),
      usage: this.#usage,
      reasoning: this.#reasoning === "" ? null : this.#reasoning,
    };
  }
}

export function completionOutput(completion: ChatCompletion): ModelOutput {
  const choice = completion.choices[0];
  const toolCalls = (choice.message.tool_calls ?? []).map((call, index) =>
    toolCall(call.id ?? null, call.function.name, call.function.arguments ?? "", index)
  );
  return {
    text: choice.message.content || null,
    toolCalls,
    stopReason: mapStopReason(choice.finish_reason ?? null, toolCalls),
    usage: completion.usage ? mapUsage(completion.usage) : null,
    reasoning: choice.message.reasoning_content || null,
  };
}

function toolCall(id: string | null, name: string, args: string, index: number): ToolCall {
  // Arguments that are not JSON stay text: the tool then tells the model what was wrong.
  let parsed: unknown = {};
  if (args.trim() !== "") {
    try {
      parsed = JSON.parse(args);
    } catch {
      parsed = args;
    }
  }
  return { id: id || `call_${index + 1}`, name: name || "unnamed", args: parsed };
}

function mapStopReason(reason: string | null, toolCalls: readonly ToolCall[]): string {
  switch (reason) {
    case null:
      return defaultStopReason(toolCalls);
    case "stop":
      return "end_turn";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    default:
      return reason;
  }
}

function mapUsage(usage: z.infer<typeof ChatUsage>): CallUsage {
  const mapped: CallUsage = {};
  if (usage.prompt_tokens !== undefined) mapped.inputTokens = usage.prompt_tokens;
  if (usage.completion_tokens !== undefined) mapped.outputTokens = usage.completion_tokens;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === "number") mapped.cacheReadTokens = cached;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === "number") mapped.reasoningTokens = reasoning;
  return mapped;
}
