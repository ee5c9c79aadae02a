// Compaction: when the conversation's estimated size passes a threshold, shrink it in stages,
// stopping as soon as it fits — first cut old tool results down to a stub, then have the model
// summarise the oldest turns into one message. Each stage is recorded as compaction.started /
// compaction.completed {stage, before, after} (token estimates). Nothing is ever dropped from the
// recording: this only changes what the model is sent.
import type { EventSink } from "../driver.ts";
import { estimateTokens, type Message, messageChars, SUMMARY_PREFIX } from "../../model/mod.ts";

export const COMPACTION_STAGES = ["trim_tool_results", "summarize"] as const;
export type CompactionStage = typeof COMPACTION_STAGES[number];

export interface CompactionOptions {
  /** Compact when the history's token estimate passes this. */
  thresholdTokens: number;
  /** Characters of an old tool result kept in front of the stub. */
  keptResultChars: number;
  /** Characters of a tool result shown to the summariser. */
  summaryResultChars: number;
}

export const DEFAULT_COMPACTION: CompactionOptions = {
  thresholdTokens: 100_000,
  keptResultChars: 200,
  summaryResultChars: 2_000,
};

export interface CompactionDeps {
  sink: EventSink;
  /** Asks the model for a summary of `transcript` (a tool-less call the loop records). */
  summarize(request: Message[]): Promise<string | null>;
}

/**
 * Compacts `history` if it is over the threshold; returns it unchanged otherwise. A stage that
 * has nothing to work on (no old tool result, too few old turns) is skipped without events.
 */
export async function compactHistory(
  history: readonly Message[],
  options: CompactionOptions,
  deps: CompactionDeps,
): Promise<Message[]> {
  let current = [...history];
  for (const stage of COMPACTION_STAGES) {
    const before = estimateTokens(current);
    if (before <= options.thresholdTokens) break;
    switch (stage) {
      case "trim_tool_results": {
        const trimmed = trimToolResults(current, options);
        if (trimmed === null) continue;
        deps.sink.emit({ type: "compaction.started", payload: { stage } });
        current = trimmed;
        break;
      }
      case "summarize": {
        const span = oldestTurns(current, options);
        if (span === null) continue;
        deps.sink.emit({ type: "compaction.started", payload: { stage } });
        current = await summarize(current, span, options, deps);
        break;
      }
    }
    deps.sink.emit({
      type: "compaction.completed",
      payload: { stage, before, after: estimateTokens(current) },
    });
  }
  return current;
}

/**
 * Cuts the results of tool calls before the latest one to their first few characters; null
 * when there is none to cut.
 */
export function trimToolResults(
  history: readonly Message[],
  options: CompactionOptions,
): Message[] | null {
  const latestCall = history.findLastIndex((message) =>
    message.role === "assistant" && message.toolCalls.length > 0
  );
  let trimmed = 0;
  const out = history.map((message, index) => {
    if (message.role !== "tool" || index > latestCall) return message;
    const length = message.content.length;
    // a stub is only worth it when it saves more than it adds
    if (length <= options.keptResultChars + 100) return message;
    trimmed += 1;
    return {
      ...message,
      content: `${message.content.slice(0, options.keptResultChars)}\n[… earlier result trimmed: ${
        length - options.keptResultChars
      } of ${length} characters removed]`,
    };
  });
  return trimmed > 0 ? out : null;
}

/**
 * The oldest turns to summarise, [start, cut): everything after the system prompt except the
 * newest messages (up to half the threshold), never splitting a tool call from its result.
 * Null when fewer than two messages would be summarised.
 */
function oldestTurns(
  history: readonly Message[],
  options: CompactionOptions,
): { start: number; cut: number } | null {
  const start = history[0]?.role === "system" ? 1 : 0;
  let cut = history.length - 1;
  let kept = messageTokens(history[cut]);
  while (cut - 1 > start && kept + messageTokens(history[cut - 1]) <= options.thresholdTokens / 2) {
    cut -= 1;
    kept += messageTokens(history[cut]);
  }
  while (cut > start && history[cut].role === "tool") cut -= 1;
  return cut - start < 2 ? null : { start, cut };
}

/** Replaces history[start, cut) with the model's summary of it. */
async function summarize(
  history: readonly Message[],
  { start, cut }: { start: number; cut: number },
  options: CompactionOptions,
  deps: CompactionDeps,
): Promise<Message[]> {
  const summary = await deps.summarize([
    {
      role: "system",
      text: "You summarise the earlier part of a conversation between a user and a coding agent " +
        "so the agent can continue without it. Keep the user's requests, decisions, file names, " +
        "facts learned and work still open. Answer with the summary only.",
    },
    { role: "user", text: transcript(history.slice(start, cut), options.summaryResultChars) },
  ]);
  return [
    ...history.slice(0, start),
    { role: "user", text: `${SUMMARY_PREFIX}\n${summary || "(the model gave no summary)"}` },
    ...history.slice(cut),
  ];
}

function messageTokens(message: Message): number {
  return Math.ceil((messageChars(message) + 16) / 4);
}

/** The turns to summarise, as plain text. */
function transcript(messages: readonly Message[], resultChars: number): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        lines.push(`System: ${message.text}`);
        break;
      case "user":
        lines.push(`User: ${message.text}`);
        break;
      case "assistant":
        if (message.text) lines.push(`Assistant: ${message.text}`);
        for (const call of message.toolCalls) {
          lines.push(`Assistant called ${call.name} ${JSON.stringify(call.args)}`);
        }
        break;
      case "tool": {
        const content = message.content.length > resultChars
          ? `${message.content.slice(0, resultChars)} […]`
          : message.content;
        lines.push(`Result of ${message.name}${message.ok ? "" : " (failed)"}: ${content}`);
        break;
      }
    }
  }
  return lines.join("\n");
}
