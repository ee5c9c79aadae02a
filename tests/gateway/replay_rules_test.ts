// The divergence rules of a harness replay (lib/gateway/replay_rules.ts), per wire: what is
// compared (the conversation, the tools offered) and what is ignored (system prompts, ids, cache
// markers, dates, paths, …), and where two requests first differ.
import assert from "node:assert/strict";
import {
  comparable,
  differences,
  firstDifference,
  normalizeText,
  whereDiffering,
} from "../../lib/gateway/replay_rules.ts";
import type { Wire } from "../../lib/gateway/wires.ts";

const paths = {
  cwds: ["/home/ann/proj", "/data/tmp/replay-1/proj"],
  homes: ["/home/ann", "/data/tmp/h"],
};

function diff(wire: Wire, recorded: unknown, replayed: unknown): string[] {
  return differences(comparable(wire, recorded, paths), comparable(wire, replayed, paths));
}

const anthropic = (over: Record<string, unknown> = {}) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 32000,
  system: [{
    type: "text",
    text: "Today is 2026-12-02. cwd /home/ann/proj",
    cache_control: { type: "ephemeral" },
  }],
  metadata: { user_id: "user_abc_session_1234" },
  tools: [{ name: "Bash", input_schema: {} }, { name: "Read", input_schema: {} }],
  messages: [
    {
      role: "user",
      content: [{ type: "text", text: "write the file", cache_control: { type: "ephemeral" } }],
    },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_01", name: "Bash", input: { command: "ls" } }],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "a.txt" }] },
  ],
  ...over,
});

Deno.test("anthropic: the system prompt, metadata, sampling, ids and cache markers are ignored", () => {
  const replayed = anthropic({
    system: "another system prompt entirely",
    metadata: { user_id: "someone else" },
    max_tokens: 1,
    temperature: 0.3,
    messages: [
      { role: "user", content: [{ type: "text", text: "write the file" }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_99", name: "Bash", input: { command: "ls" } }],
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_99",
          content: "a.txt",
          cache_control: { type: "ephemeral" },
        }],
      },
    ],
  });
  assert.deepEqual(diff("anthropic.messages", anthropic(), replayed), []);
});

Deno.test("anthropic: a tool result that differs is a divergence in messages, and says where", () => {
  const replayed = anthropic();
  (replayed.messages as { content: { content?: string }[] }[])[2].content[0].content = "b.txt";
  assert.deepEqual(diff("anthropic.messages", anthropic(), replayed), ["messages"]);
  const where = whereDiffering(
    comparable("anthropic.messages", anthropic(), paths),
    comparable("anthropic.messages", replayed, paths),
  );
  assert.deepEqual(where, {
    at: "messages[2].content[0].content",
    recorded: "a.txt",
    replayed: "b.txt",
  });
});

Deno.test("anthropic: another set of tools offered is a divergence in tools, not their order", () => {
  const reordered = anthropic({ tools: [{ name: "Read" }, { name: "Bash" }] });
  assert.deepEqual(diff("anthropic.messages", anthropic(), reordered), []);
  const fewer = anthropic({ tools: [{ name: "Bash" }] });
  assert.deepEqual(diff("anthropic.messages", anthropic(), fewer), ["tools"]);
  const both = anthropic({ tools: [], messages: [] });
  assert.deepEqual(diff("anthropic.messages", anthropic(), both), ["messages", "tools"]);
});

Deno.test("openai responses: instructions and developer messages are ignored, items' ids too", () => {
  const request = (over: Record<string, unknown>) => ({
    model: "gpt-5.5",
    instructions: "You are Codex. Today is Wednesday, December 2, 2026.",
    prompt_cache_key: "019a-aaaa",
    tools: [{ type: "function", name: "exec_command" }, { type: "web_search" }],
    input: [
      {
        type: "message",
        role: "developer",
        content: [{ type: "input_text", text: "sandbox: on" }],
      },
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "<cwd>/home/ann/proj</cwd> write the file" }],
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "call_1",
        name: "exec_command",
        arguments: "{}",
      },
      {
        type: "function_call_output",
        call_id: "call_1",
        output: "Chunk ID: c9dd82\nWall time: 0.0012 seconds\ndone",
      },
    ],
    ...over,
  });
  const recorded = request({});
  const replayed = request({
    instructions: "other",
    prompt_cache_key: "019b-bbbb",
    input: [
      {
        type: "message",
        role: "developer",
        content: [{ type: "input_text", text: "sandbox: off" }],
      },
      {
        type: "message",
        role: "user",
        content: [{
          type: "input_text",
          text: "<cwd>/data/tmp/replay-1/proj</cwd> write the file",
        }],
      },
      {
        type: "function_call",
        id: "fc_9",
        call_id: "call_9",
        name: "exec_command",
        arguments: "{}",
      },
      {
        type: "function_call_output",
        call_id: "call_9",
        output: "Chunk ID: 78d75d\nWall time: 0.0030 seconds\ndone",
      },
    ],
  });
  assert.deepEqual(diff("openai.responses", recorded, replayed), []);
  const other = request({ input: [{ type: "message", role: "user", content: "write no file" }] });
  assert.deepEqual(diff("openai.responses", recorded, other), ["messages"]);
  assert.deepEqual(diff("openai.responses", recorded, request({ tools: [] })), ["tools"]);
});

Deno.test("openai chat: system messages are ignored, the rest compared", () => {
  const request = (system: string, user: string) => ({
    model: "fake-model",
    messages: [{ role: "system", content: system }, { role: "user", content: user }],
    tools: [{ type: "function", function: { name: "bash" } }],
  });
  assert.deepEqual(diff("openai.chat", request("a", "hi"), request("b", "hi")), []);
  assert.deepEqual(diff("openai.chat", request("a", "hi"), request("a", "ho")), ["messages"]);
  assert.deepEqual(
    diff("openai.chat", request("a", "hi"), {
      ...request("a", "hi"),
      tools: [{ type: "function", function: { name: "edit" } }],
    }),
    ["tools"],
  );
});

Deno.test("gemini: systemInstruction and generationConfig ignored; contents and functionDeclarations compared", () => {
  const request = (text: string, tools: string[], system = "s") => ({
    systemInstruction: { parts: [{ text: system }] },
    generationConfig: { temperature: 0 },
    contents: [{ role: "user", parts: [{ text }] }],
    tools: [{ functionDeclarations: tools.map((name) => ({ name, parameters: {} })) }],
  });
  const date = "Today's date is Wednesday, December 2, 2026. I'm in /home/ann/proj, pid group PGID";
  const later =
    "Today's date is Thursday, December 3, 2026. I'm in /data/tmp/replay-1/proj, pid group PGID";
  assert.deepEqual(
    diff(
      "gemini.stream",
      request(date, ["run_shell_command"]),
      request(later, ["run_shell_command"], "t"),
    ),
    [],
  );
  assert.deepEqual(diff("gemini.generate", request("a", ["x"]), request("b", ["x"])), ["messages"]);
  assert.deepEqual(diff("gemini.generate", request("a", ["x"]), request("a", ["y"])), ["tools"]);
});

Deno.test("opaque and unparsable requests are not compared", () => {
  assert.equal(comparable("opaque", { anything: 1 }, paths), null);
  assert.deepEqual(differences(null, comparable("anthropic.messages", anthropic(), paths)), []);
});

Deno.test("normalizeText: the longer path first, dates, times, UUIDs, hex, harness lines", () => {
  assert.equal(
    normalizeText("/home/ann/proj/a and /home/ann/.claude", paths),
    "<cwd>/a and <home>/.claude",
  );
  assert.equal(normalizeText("at 2026-12-02T14:07:25.123Z, 09:30", paths), "at <date>, <time>");
  assert.equal(normalizeText("Wednesday, December 2, 2026", paths), "<date>");
  assert.equal(normalizeText("s 0f9e8d7c-6b5a-4f3e-2d1c-0b9a8f7e6d5c", paths), "s <uuid>");
  assert.equal(normalizeText(`tmp/${"ab".repeat(32)}/x`, paths), "tmp/<hex>/x");
  assert.equal(normalizeText("Process Group PGID: 9195", paths), "Process Group PGID: <pid>");
  // What is not volatile is left as it is.
  assert.equal(
    normalizeText("echo tool-ran > out.txt; exit 3", paths),
    "echo tool-ran > out.txt; exit 3",
  );
});

Deno.test("firstDifference shows each side from a little before where they part", () => {
  const long = "x".repeat(500);
  const found = firstDifference({ a: [`${long}A`] }, { a: [`${long}B`] });
  assert.equal(found?.at, "a[0]");
  assert.ok(found?.recorded.startsWith("…") && found.recorded.endsWith("A"), found?.recorded);
  assert.ok(found?.replayed.endsWith("B"));
  assert.equal(firstDifference({ a: 1 }, { a: 1 }), null);
  assert.deepEqual(firstDifference([1], [1, 2]), {
    at: "[1]",
    recorded: "(nothing)",
    replayed: "2",
  });
});
