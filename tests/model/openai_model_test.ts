import assert from "node:assert/strict";
import { openaiModel } from "../../lib/model/openai_model.ts";
import { ModelError, type ModelRequest } from "../../lib/model/model.ts";
import { createLoopDriver } from "../../lib/drivers/loop/loop_driver.ts";
import { type ChatReply, startFakeChat } from "../fixtures/fake_chat.ts";
import {
  apiError,
  exactly,
  type FakeServer,
  type RecordedRequest,
} from "../fixtures/fake_model_server.ts";
import { driverInput, MemorySink, withTempDir } from "../drivers/loop/_helpers.ts";

const FAST_RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };

type ChatServer = FakeServer & { baseUrl: string };

/** The JSON body a request carried. */
function bodyOf(request: RecordedRequest): Record<string, unknown> {
  return request.body as Record<string, unknown>;
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    history: [{ role: "system", text: "sys" }, { role: "user", text: "hello" }],
    tools: [],
    purpose: "turn",
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function withServer(
  script: ChatReply[],
  fn: (server: ChatServer) => Promise<void>,
  options: { apiKey?: string } = {},
): Promise<void> {
  const server = startFakeChat(exactly(...script), options);
  try {
    await fn(Object.assign(server, { baseUrl: `${server.url}/v1` }));
  } finally {
    await server.close();
  }
}

async function rejection(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ModelError, `not a ModelError: ${error}`);
    return error;
  }
  throw new Error("expected a rejection");
}

Deno.test("openaiModel() streams an answer with its usage and reasoning", async () => {
  await withServer([{
    kind: "stream",
    text: "Hello there, friend.",
    reasoning: "be nice",
    pieceSize: 3,
    usage: {
      prompt_tokens: 40,
      completion_tokens: 6,
      total_tokens: 46,
      prompt_tokens_details: { cached_tokens: 8 },
      completion_tokens_details: { reasoning_tokens: 2 },
    },
  }], async (server) => {
    const model = openaiModel({ model: "fake-model", baseUrl: server.baseUrl, apiKey: "sk-test" });
    assert.equal(model.name, "openai:fake-model");
    assert.deepEqual(await model.complete(request()), {
      text: "Hello there, friend.",
      toolCalls: [],
      stopReason: "end_turn",
      usage: { inputTokens: 40, outputTokens: 6, cacheReadTokens: 8, reasoningTokens: 2 },
      reasoning: "be nice",
    });
    const [sent] = server.requests;
    assert.equal(sent.path, "/v1/chat/completions");
    assert.equal(sent.headers.authorization, "Bearer sk-test");
    assert.deepEqual(bodyOf(sent), {
      model: "fake-model",
      messages: [{ role: "system", content: "sys" }, { role: "user", content: "hello" }],
      stream: true,
      stream_options: { include_usage: true },
    });
  });
});

Deno.test("openaiModel() reassembles tool calls streamed in pieces", async () => {
  await withServer([{
    kind: "stream",
    toolCalls: [
      { id: "call_a", name: "read_file", arguments: '{"path":"README.md"}' },
      { id: "call_b", name: "list_files", arguments: "" },
      { id: "call_c", name: "write_file", arguments: '{"path": "x", "content": ' },
    ],
    pieceSize: 4,
  }], async (server) => {
    const model = openaiModel({ model: "m", baseUrl: server.baseUrl, apiKey: null });
    const output = await model.complete(request({
      tools: [{ name: "read_file", description: "read", parameters: { type: "object" } }],
    }));
    assert.deepEqual(output.toolCalls, [
      { id: "call_a", name: "read_file", args: { path: "README.md" } },
      { id: "call_b", name: "list_files", args: {} },
      // not JSON: kept as text, for the tool to refuse with a reason the model can read
      { id: "call_c", name: "write_file", args: '{"path": "x", "content": ' },
    ]);
    assert.equal(output.stopReason, "tool_use");
    assert.equal(output.text, null);
    const [sent] = server.requests;
    assert.equal(sent.headers.authorization, undefined);
    assert.deepEqual(bodyOf(sent).tools, [{
      type: "function",
      function: { name: "read_file", description: "read", parameters: { type: "object" } },
    }]);
  });
});

Deno.test("openaiModel() sends tool calls and results back in the Chat Completions shape", async () => {
  await withServer([{ kind: "stream", text: "ok" }], async (server) => {
    const model = openaiModel({ model: "m", baseUrl: server.baseUrl, apiKey: null });
    await model.complete(request({
      history: [
        { role: "user", text: "go" },
        { role: "assistant", text: null, toolCalls: [{ id: "c1", name: "list_files", args: {} }] },
        { role: "tool", callId: "c1", name: "list_files", ok: true, content: "a.txt" },
      ],
    }));
    assert.deepEqual(bodyOf(server.requests[0]).messages, [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "c1",
          type: "function",
          function: { name: "list_files", arguments: "{}" },
        }],
      },
      { role: "tool", tool_call_id: "c1", content: "a.txt" },
    ]);
  });
});

Deno.test("openaiModel() takes a plain JSON completion from a server that does not stream", async () => {
  await withServer([{
    kind: "json",
    text: "not streamed",
    usage: { prompt_tokens: 3, completion_tokens: 2 },
  }], async (server) => {
    const model = openaiModel({ model: "m", baseUrl: server.baseUrl, apiKey: null });
    assert.deepEqual(await model.complete(request()), {
      text: "not streamed",
      toolCalls: [],
      stopReason: "end_turn",
      usage: { inputTokens: 3, outputTokens: 2 },
      reasoning: null,
    });
  });
});

Deno.test("openaiModel() fails at once with a clear error on 401", async () => {
  await withServer([], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: "wrong",
      retry: FAST_RETRY,
    });
    const error = await rejection(model.complete(request()));
    assert.equal(
      error.message,
      `The model endpoint ${server.baseUrl}/chat/completions refused the API key ` +
        "(401 Unauthorized): Incorrect API key provided",
    );
    assert.equal(error.hint, "set OPENAI_API_KEY to a key this endpoint accepts");
    assert.equal(error.status, 401);
    assert.equal(server.requests.length, 1);
  }, { apiKey: "right" });
});

Deno.test("openaiModel() fails at once with a clear error on 404", async () => {
  await withServer(
    [apiError(404, "The model `nope` does not exist")],
    async (server) => {
      const model = openaiModel({
        model: "nope",
        baseUrl: server.baseUrl,
        apiKey: null,
        retry: FAST_RETRY,
      });
      const error = await rejection(model.complete(request()));
      assert.equal(
        error.message,
        `The model endpoint ${server.baseUrl}/chat/completions has no model "nope" or no chat ` +
          "completions route (404 Not Found): The model `nope` does not exist",
      );
      assert.equal(server.requests.length, 1);
    },
  );
});

Deno.test("openaiModel() retries a 429, waiting as long as retry-after-ms says", async () => {
  await withServer([
    apiError(429, "slow down", { "retry-after-ms": "300" }),
    { kind: "stream", text: "finally" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    assert.equal((await model.complete(request())).text, "finally");
    assert.equal(server.requests.length, 2);
    const waited = server.requests[1].receivedMs - server.requests[0].receivedMs;
    assert.ok(waited >= 300, `retried after ${waited} ms`);
  });
});

Deno.test("openaiModel() honours Retry-After in seconds", async () => {
  await withServer([
    apiError(429, "fake 429", { "retry-after": "1" }),
    { kind: "stream", text: "ok" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    assert.equal((await model.complete(request())).text, "ok");
    const waited = server.requests[1].receivedMs - server.requests[0].receivedMs;
    assert.ok(waited >= 1_000, `retried after ${waited} ms`);
  });
});

Deno.test("openaiModel() gives up on a 429 that asks for a longer wait than it allows", async () => {
  await withServer([
    apiError(429, "quota", { "retry-after": "120" }),
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    const error = await rejection(model.complete(request()));
    assert.equal(
      error.message,
      `The model endpoint ${server.baseUrl}/chat/completions is rate-limiting requests ` +
        "(429 Too Many Requests): quota; it asked to retry after 120 s",
    );
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("openaiModel() retries 5xx a bounded number of times, then says how often it tried", async () => {
  await withServer([
    apiError(502, "bad gateway"),
    apiError(500, "oops"),
    apiError(503, "overloaded"),
    { kind: "stream", text: "too late" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    const error = await rejection(model.complete(request()));
    assert.equal(
      error.message,
      `The model endpoint ${server.baseUrl}/chat/completions failed with 503 Service ` +
        "Unavailable (after 3 attempts): overloaded",
    );
    assert.equal(server.requests.length, 3);
  });
});

Deno.test("openaiModel() recovers when a retried 5xx is followed by an answer", async () => {
  await withServer([
    apiError(500, "fake 500"),
    { kind: "stream", text: "recovered" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    assert.equal((await model.complete(request())).text, "recovered");
  });
});

// regression: a 408 failed the model call at once, while the platform client retried it
Deno.test("openaiModel() retries a 408 as the platform client does", async () => {
  await withServer([
    apiError(408, "request timeout"),
    { kind: "stream", text: "second time lucky" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    assert.equal((await model.complete(request())).text, "second time lucky");
    assert.equal(server.requests.length, 2);
  });
});

Deno.test("openaiModel() stops waiting to retry as soon as the run is stopped", async () => {
  await withServer([
    apiError(503, "busy", { "retry-after": "30" }),
    { kind: "stream", text: "never asked" },
  ], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: { ...FAST_RETRY, maxRetryAfterMs: 60_000 },
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stopped by SIGINT")), 100);
    const started = Date.now();
    await assert.rejects(
      () => model.complete(request({ signal: controller.signal })),
      /stopped by SIGINT/,
    );
    assert.ok(Date.now() - started < 5_000, "the 30 s wait was cut short");
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("openaiModel() does not retry other 4xx", async () => {
  await withServer([apiError(400, "bad messages")], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    const error = await rejection(model.complete(request()));
    assert.match(error.message, /rejected the request \(400 Bad Request\): bad messages$/);
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("openaiModel() retries and then reports an endpoint it cannot reach", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const model = openaiModel({ model: "m", baseUrl, apiKey: null, retry: FAST_RETRY });
  const error = await rejection(model.complete(request()));
  assert.match(
    error.message,
    new RegExp(
      `^Cannot reach the model endpoint ${baseUrl}/chat/completions: .*\\(after 3 attempts\\)$`,
    ),
  );
});

Deno.test("openaiModel() fails when the stream ends before the answer is complete", async () => {
  await withServer([{ kind: "stream", text: "half an ans", cut: true }], async (server) => {
    const model = openaiModel({
      model: "m",
      baseUrl: server.baseUrl,
      apiKey: null,
      retry: FAST_RETRY,
    });
    const error = await rejection(model.complete(request()));
    assert.equal(
      error.message,
      `The model endpoint ${server.baseUrl}/chat/completions ended the stream before the ` +
        "answer was complete",
    );
    assert.equal(server.requests.length, 1, "a cut stream is not retried");
  });
});

Deno.test("createLoopDriver() runs openai:MODEL against the endpoint given as --base-url", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/hello.txt`, "hi there");
    await withServer([
      {
        kind: "stream",
        toolCalls: [{ id: "call_1", name: "read_file", arguments: '{"path":"hello.txt"}' }],
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      },
      {
        kind: "stream",
        text: "It says hi there.",
        usage: { prompt_tokens: 120, completion_tokens: 5 },
      },
    ], async (server) => {
      const sink = new MemorySink();
      const input = driverInput(dir, { model: "openai:fake-model", baseUrl: server.baseUrl });
      input.settings.prices["fake-model"] = { inputPerMillion: 1_000, outputPerMillion: 2_000 };
      const result = await createLoopDriver().start(input, sink, new AbortController().signal);
      assert.deepEqual(result, {
        status: "completed",
        reason: null,
        result: "It says hi there.",
        exitCode: null,
      });
      const messages = bodyOf(server.requests[1]).messages as { role: string }[];
      assert.deepEqual(messages.slice(-2), [
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"hello.txt"}' },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: "hi there" },
      ]);
      // no cost from the endpoint: estimated from the price table, and marked so
      const usage = sink.ofType("usage.updated").at(-1)!.payload;
      assert.equal(usage.inputTokens, 220);
      assert.equal(usage.outputTokens, 15);
      assert.ok(Math.abs(usage.costUsd! - (220 * 1_000 + 15 * 2_000) / 1e6) < 1e-9);
      assert.equal(usage.costEstimated, true);
    });
  });
});

Deno.test("createLoopDriver() interrupts a stalled openai stream when the signal aborts", async () => {
  await withTempDir(async (dir) => {
    await withServer([{ kind: "stall" }], async (server) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort("stopped by SIGINT"), 100);
      const started = Date.now();
      const result = await createLoopDriver().start(
        driverInput(dir, { model: "openai:m", baseUrl: server.baseUrl }),
        new MemorySink(),
        controller.signal,
      );
      assert.ok(Date.now() - started < 2_000);
      assert.equal(result.status, "interrupted");
      assert.equal(result.reason, "stopped by SIGINT");
    });
  });
});

Deno.test("createLoopDriver() fails the run with the endpoint's error and its hint", async () => {
  await withTempDir(async (dir) => {
    await withServer([], async (server) => {
      const input = driverInput(dir, { model: "openai:m", baseUrl: server.baseUrl });
      const result = await createLoopDriver().start(
        input,
        new MemorySink(),
        new AbortController().signal,
      );
      assert.equal(result.status, "failed");
      assert.equal(
        result.reason,
        `The model endpoint ${server.baseUrl}/chat/completions refused the API key ` +
          "(401 Unauthorized): Incorrect API key provided " +
          "(set OPENAI_API_KEY to a key this endpoint accepts)",
      );
    }, { apiKey: "needed" });
  });
});
