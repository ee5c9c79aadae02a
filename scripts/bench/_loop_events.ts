// One built-in loop iteration's events (6): a model call asking for a tool, the totals, the tool. The
// views and OTLP benchmarks cycle it to make long runs.
import type { EventInput } from "../../lib/store/contracts.ts";

export interface IterationShape {
  /** When the tool ran (an ISO timestamp). */
  at: string;
  /** What the model said before it asked for the tool. */
  text: string;
  /** What the tool answered. */
  result: string;
  /** Whether tool.completed names its tool too. */
  namesTool: boolean;
}

export function loopIteration(i: number, shape: IterationShape): EventInput[] {
  const callId = `call_${i}`;
  const { at, text, result } = shape;
  return [
    { type: "heartbeat", payload: { iteration: i } },
    { type: "model.requested", payload: { historyLength: 2 + 2 * i, toolCount: 4 } },
    {
      type: "model.completed",
      payload: {
        text,
        toolCalls: [{ id: callId, name: "read_file", args: { path: "src/main.ts" } }],
        stopReason: "tool_use",
        usage: { inputTokens: 1000 + i, outputTokens: 50 },
        reasoning: null,
      },
    },
    {
      type: "usage.updated",
      payload: {
        inputTokens: (i + 1) * 1000,
        outputTokens: (i + 1) * 50,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        costUsd: (i + 1) * 0.0012,
        requests: i + 1,
      },
    },
    { type: "tool.started", payload: { callId, tool: "read_file", args: { path: "src/main.ts" } } },
    {
      type: "tool.completed",
      payload: {
        callId,
        ...(shape.namesTool ? { tool: "read_file" } : {}),
        ok: true,
        result,
        startedAt: at,
        finishedAt: at,
      },
    },
  ];
}
