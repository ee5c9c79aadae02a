// Each wire's reading of what passes: which paths are which wire, what a request asks for, and the
// usage, model, stop reason and text of an answer, streamed (SSE split anywhere) or whole.
import assert from "node:assert/strict";
import fc from "fast-check";
import { SseReader } from "../../lib/gateway/sse.ts";
import {
  anthropicUsage,
  chatUsage,
  geminiUsage,
  requestFacts,
  ResponseReader,
  responsesUsage,
  type Wire,
  wireOf,
} from "../../lib/gateway/wires.ts";

Deno.test("wireOf() names each model API by its path, and anything else opaque", () => {
  const cases: [string, string, Wire][] = [
    ["POST", "/v1/messages", "anthropic.messages"],
    ["POST", "/v1/messages/count_tokens", "anthropic.count_tokens"],
    ["POST", "/responses", "openai.responses"],
    ["POST", "/v1/chat/completions", "openai.chat"],
    ["POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini.stream"],
    ["POST", "/v1internal:streamGenerateContent", "gemini.stream"],
    ["POST", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini.generate"],
    ["POST", "/v1beta/models/gemini-2.5-flash:countTokens", "opaque"],
    ["GET", "/v1/models", "opaque"],
    ["GET", "/v1/responses", "opaque"],
  ];
  for (const [method, path, wire] of cases) assert.equal(wireOf(method, path), wire, path);
});

Deno.test("requestFacts() reads the model from the body, or from Gemini's path", () => {
  assert.deepEqual(
    requestFacts("anthropic.messages", "/v1/messages", { model: "claude-x", stream: true }),
    { model: "claude-x", stream: true },
  );
  assert.deepEqual(requestFacts("openai.chat", "/chat/completions", { model: "m" }), {
    model: "m",
    stream: false,
  });
  assert.deepEqual(
    requestFacts("gemini.stream", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", {}),
    { model: "gemini-2.5-pro", stream: true },
  );
  assert.deepEqual(
    requestFacts("gemini.generate", "/v1internal:generateContent", { model: "gemini-x" }),
    { model: "gemini-x", stream: false },
  );
});

Deno.test("usage parsers put each provider's counters in reins's names", () => {
  assert.deepEqual(
    anthropicUsage({
      input_tokens: 4,
      output_tokens: 12,
      cache_read_input_tokens: 3100,
      cache_creation_input_tokens: 20,
    }),
    { inputTokens: 4, outputTokens: 12, cacheReadTokens: 3100, cacheWriteTokens: 20 },
  );
  assert.deepEqual(
    responsesUsage({
      input_tokens: 1000,
      input_tokens_details: { cached_tokens: 200 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 8 },
    }),
    { inputTokens: 1000, outputTokens: 50, cacheReadTokens: 200, reasoningTokens: 8 },
  );
  assert.deepEqual(
    chatUsage({
      prompt_tokens: 40,
      completion_tokens: 6,
      prompt_tokens_details: { cached_tokens: 10 },
    }),
    { inputTokens: 40, outputTokens: 6, cacheReadTokens: 10 },
  );
  assert.deepEqual(
    geminiUsage({
      promptTokenCount: 30,
      candidatesTokenCount: 5,
      thoughtsTokenCount: 7,
      cachedContentTokenCount: 2,
    }),
    { inputTokens: 30, outputTokens: 12, cacheReadTokens: 2, reasoningTokens: 7 },
  );
  assert.equal(anthropicUsage(null), null);
  assert.equal(chatUsage({}), null);
  assert.deepEqual(chatUsage({ prompt_tokens: -3, completion_tokens: "x" }), null);
});

function sse(events: [string | null, unknown][]): string {
  return events.map(([name, data]) =>
    `${name ? `event: ${name}\n` : ""}data: ${
      typeof data === "string" ? data : JSON.stringify(data)
    }\n\n`
  ).join("");
}

/** Reads `text` as a stream of `wire`, cut into pieces at `cuts`. */
function read(wire: Wire, text: string, cuts: number[] = []) {
  const pieces: string[] = [];
  const reader = new ResponseReader(wire, (piece) => pieces.push(piece));
  const sseReader = new SseReader((name, data) => reader.eventText(name, data));
  const bytes = new TextEncoder().encode(text);
  let from = 0;
  for (const at of [...cuts.filter((cut) => cut > 0 && cut < bytes.length)].sort((a, b) => a - b)) {
    sseReader.push(bytes.subarray(from, at));
    from = at;
  }
  sseReader.push(bytes.subarray(from));
  sseReader.end();
  return { facts: reader.facts, text: pieces.join("") };
}

const ANTHROPIC_STREAM = sse([
  ["message_start", {
    type: "message_start",
    message: { id: "msg_1", model: "claude-x", usage: { input_tokens: 12, output_tokens: 1 } },
  }],
  ["content_block_delta", {
    type: "content_block_delta",
    delta: { type: "text_delta", text: "Hé" },
  }],
  ["content_block_delta", {
    type: "content_block_delta",
    delta: { type: "input_json_delta", partial_json: "{}" },
  }],
  ["content_block_delta", {
    type: "content_block_delta",
    delta: { type: "text_delta", text: "llo ✓" },
  }],
  ["message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn" },
    usage: { output_tokens: 7 },
  }],
  ["message_stop", { type: "message_stop" }],
]);

Deno.test("ResponseReader reads an Anthropic stream: model, usage as message_delta leaves it, text", () => {
  assert.deepEqual(read("anthropic.messages", ANTHROPIC_STREAM), {
    facts: {
      id: "msg_1",
      model: "claude-x",
      stopReason: "end_turn",
      usage: { inputTokens: 12, outputTokens: 7 },
      error: null,
    },
    text: "Héllo ✓",
  });
});

Deno.test("SseReader and ResponseReader read a stream the same however it is cut", () => {
  const whole = read("anthropic.messages", ANTHROPIC_STREAM);
  const length = new TextEncoder().encode(ANTHROPIC_STREAM).length;
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: length - 1 }), { maxLength: 12 }), (cuts) => {
      assert.deepEqual(read("anthropic.messages", ANTHROPIC_STREAM, cuts), whole);
    }),
    { numRuns: 300 },
  );
});

Deno.test("ResponseReader reads a Responses API stream and its completed usage", () => {
  const text = sse([
    [null, { type: "response.created", response: { model: "gpt-x", status: "in_progress" } }],
    [null, { type: "response.output_text.delta", delta: "Hi" }],
    [null, {
      type: "response.completed",
      response: {
        model: "gpt-x",
        status: "completed",
        output: [{ type: "function_call" }],
        usage: { input_tokens: 9, output_tokens: 3 },
      },
    }],
  ]);
  assert.deepEqual(read("openai.responses", text), {
    facts: {
      id: null,
      model: "gpt-x",
      stopReason: "tool_calls",
      usage: { inputTokens: 9, outputTokens: 3 },
      error: null,
    },
    text: "Hi",
  });
});

Deno.test("ResponseReader reads a Chat Completions stream to its [DONE]", () => {
  const text = sse([
    [null, { model: "m", choices: [{ delta: { content: "a" } }] }],
    [null, { model: "m", choices: [{ delta: { content: "b" }, finish_reason: "stop" }] }],
    [null, { model: "m", choices: [], usage: { prompt_tokens: 40, completion_tokens: 6 } }],
    [null, "[DONE]"],
  ]);
  assert.deepEqual(read("openai.chat", text), {
    facts: {
      id: null,
      model: "m",
      stopReason: "stop",
      usage: { inputTokens: 40, outputTokens: 6 },
      error: null,
    },
    text: "ab",
  });
});

Deno.test("ResponseReader reads Gemini's stream, and Code Assist's wrapped in response", () => {
  const chunk = {
    candidates: [{
      content: { parts: [{ text: "thinking", thought: true }, { text: "Hi" }] },
      finishReason: "STOP",
    }],
    usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 5 },
    modelVersion: "gemini-x",
  };
  const expected = {
    facts: {
      id: null,
      model: "gemini-x",
      stopReason: "STOP",
      usage: { inputTokens: 30, outputTokens: 5 },
      error: null,
    },
    text: "Hi",
  };
  assert.deepEqual(read("gemini.stream", sse([[null, chunk]])), expected);
  assert.deepEqual(read("gemini.stream", sse([[null, { response: chunk }]])), expected);
});

Deno.test("ResponseReader reads whole JSON answers and error bodies", () => {
  const reader = new ResponseReader("anthropic.messages", () => {});
  reader.json({
    model: "claude-x",
    stop_reason: "tool_use",
    content: [{ type: "text", text: "x" }],
    usage: { input_tokens: 1, output_tokens: 2 },
  });
  assert.deepEqual(reader.facts, {
    id: null,
    model: "claude-x",
    stopReason: "tool_use",
    usage: { inputTokens: 1, outputTokens: 2 },
    error: null,
  });
  const failed = new ResponseReader("openai.chat", () => {});
  failed.json({ error: { message: "Incorrect API key provided" } });
  assert.equal(failed.facts.error, "Incorrect API key provided");
  const counted = new ResponseReader("anthropic.count_tokens", () => {});
  counted.json({ input_tokens: 321 });
  assert.deepEqual(counted.facts.usage, { inputTokens: 321 });
});

Deno.test("ResponseReader reads streamed text with escapes, quotes and newlines whole", () => {
  const piece = 'say "hi"\n\tthen \\ go ✓';
  const text = sse([
    ["content_block_delta", {
      type: "content_block_delta",
      delta: { type: "text_delta", text: piece },
    }],
    [null, { type: "response.output_text.delta", delta: piece }],
  ]);
  assert.equal(read("anthropic.messages", text).text, piece);
  assert.equal(read("openai.responses", text).text, piece);
  const chat = sse([[null, { choices: [{ delta: { content: piece } }] }]]);
  assert.equal(read("openai.chat", chat).text, piece);
});
