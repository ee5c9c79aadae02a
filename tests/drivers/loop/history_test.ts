import assert from "node:assert/strict";
import { historyFromEvents, toolResultText } from "../../../lib/drivers/loop/history.ts";
import type { EventInput } from "../../../lib/store/contracts.ts";

const time = "2026-01-01T00:00:00.000Z";

function modelCompleted(text: string | null, calls: [string, string][] = []): EventInput {
  return {
    type: "model.completed",
    payload: {
      text,
      toolCalls: calls.map(([id, name]) => ({ id, name, args: {} })),
      stopReason: null,
      usage: null,
      reasoning: null,
    },
  };
}

function toolCompleted(callId: string, ok: boolean, value: string): EventInput {
  return {
    type: "tool.completed",
    payload: ok
      ? { callId, ok, result: value, startedAt: time, finishedAt: time }
      : { callId, ok, error: value, startedAt: time, finishedAt: time },
  };
}

const message = (role: "user" | "assistant", text: string): EventInput => ({
  type: "message.completed",
  payload: { role, text },
});

Deno.test("historyFromEvents() keeps the loop's final answer once, not twice", () => {
  assert.deepEqual(
    historyFromEvents([
      message("user", "hi"),
      { type: "heartbeat", payload: { iteration: 0 } },
      modelCompleted("hello"),
      message("assistant", "hello"),
    ]),
    [{ role: "user", text: "hi" }, { role: "assistant", text: "hello", toolCalls: [] }],
  );
});

Deno.test("historyFromEvents() takes another driver's messages as the conversation", () => {
  assert.deepEqual(
    historyFromEvents([message("user", "hi"), message("assistant", "from a command")]),
    [{ role: "user", text: "hi" }, { role: "assistant", text: "from a command", toolCalls: [] }],
  );
});

Deno.test("historyFromEvents() skips the loop's summary calls", () => {
  assert.deepEqual(
    historyFromEvents([
      message("user", "hi"),
      { type: "model.requested", payload: { historyLength: 2, toolCount: 0, purpose: "summary" } },
      modelCompleted("a summary"),
      { type: "model.requested", payload: { historyLength: 2, toolCount: 4, purpose: "turn" } },
      modelCompleted("the answer"),
    ]),
    [{ role: "user", text: "hi" }, { role: "assistant", text: "the answer", toolCalls: [] }],
  );
});

Deno.test("historyFromEvents() answers tool calls a run left without results", () => {
  // an interrupted run recorded the call but never its result
  assert.deepEqual(
    historyFromEvents([
      message("user", "go"),
      modelCompleted(null, [["c1", "read_file"], ["c2", "run_command"]]),
      toolCompleted("c1", true, "text"),
      message("user", "again"),
    ]),
    [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: null,
        toolCalls: [
          { id: "c1", name: "read_file", args: {} },
          { id: "c2", name: "run_command", args: {} },
        ],
      },
      { role: "tool", callId: "c1", name: "read_file", ok: true, content: "text" },
      {
        role: "tool",
        callId: "c2",
        name: "run_command",
        ok: false,
        content: "Error: no result was recorded (the run ended before the tool finished)",
      },
      { role: "user", text: "again" },
    ],
  );
});

Deno.test("historyFromEvents() drops a tool result whose call is not in the history", () => {
  assert.deepEqual(
    historyFromEvents([message("user", "go"), toolCompleted("zz", false, "boom")]),
    [{ role: "user", text: "go" }],
  );
});

Deno.test("toolResultText() shows errors with the output that came with them", () => {
  assert.equal(toolResultText(true, "plain", undefined), "plain");
  assert.equal(toolResultText(true, { a: 1 }, undefined), '{"a":1}');
  assert.equal(toolResultText(false, undefined, "denied by policy"), "Error: denied by policy");
  assert.equal(
    toolResultText(false, { exitCode: 2 }, "The command exited with code 2"),
    'Error: The command exited with code 2\n{"exitCode":2}',
  );
});
