// The model gateway with real HTTP servers on port 0: an upstream that streams slowly (each chunk
// reaches the client before the next is sent), errors and Retry-After passed on unchanged, the
// turn's secret (a wrong one is a 404 and records nothing), credentials passed on but never
// written, opaque paths forwarded and recorded, an unreachable upstream as a 502, the budget's
// refusal in the provider's shape, and a client that goes away mid-stream.
import assert from "node:assert/strict";
import { BudgetLedger } from "../../lib/core/budget.ts";
import { NO_PROXY_SETTINGS } from "../../lib/net/route.ts";
import { bindTurn, type GatewayBinding } from "../../lib/gateway/mod.ts";
import type { EventInput, PayloadOf } from "../../lib/store/contracts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { newId } from "../../lib/core/ids.ts";

interface Upstream extends AsyncDisposable {
  url: string;
  seen: { method: string; path: string; headers: Headers; body: string }[];
}

/** An upstream answering each request with `answer` (given the request). */
function upstream(answer: (request: Request) => Response | Promise<Response>): Upstream {
  const seen: Upstream["seen"] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    seen.push({
      method: req.method,
      path: url.pathname + url.search,
      headers: req.headers,
      body: await req.text(),
    });
    return answer(req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

interface Turn extends AsyncDisposable {
  binding: GatewayBinding;
  events: EventInput[];
  root: DataRoot;
  runId: string;
  exhausted: unknown[];
}

async function turn(
  upstreamUrl: string,
  options: { ledger?: BudgetLedger; price?: boolean } = {},
): Promise<Turn> {
  const dir = await Deno.makeTempDir({ prefix: "reins-gateway-" });
  const root = new DataRoot(dir);
  const runId = newId();
  root.ensureDir(root.layout.run(runId));
  const events: EventInput[] = [];
  const exhausted: unknown[] = [];
  const binding = await bindTurn({
    root,
    runId,
    routes: { up: { upstream: `${upstreamUrl}/v1` } },
    emit: (event) => events.push(event),
    ledger: options.ledger ?? new BudgetLedger([]),
    priceOf: () =>
      options.price
        ? { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 2 }
        : null,
    proxy: NO_PROXY_SETTINGS,
    onExhausted: (e) => exhausted.push(e),
  });
  return {
    binding,
    events,
    root,
    runId,
    exhausted,
    async [Symbol.asyncDispose]() {
      await binding.close();
      root.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function ofType<T extends EventInput["type"]>(events: EventInput[], type: T): PayloadOf<T>[] {
  return events.filter((e) => e.type === type).map((e) => e.payload as PayloadOf<T>);
}

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

Deno.test("gateway streams each chunk to the client as it arrives, and records their timing", async () => {
  const encoder = new TextEncoder();
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => release = resolve);
  await using up = upstream(() =>
    new Response(
      new ReadableStream({
        async start(controller) {
          controller.enqueue(encoder.encode(sse({
            type: "message_start",
            message: { model: "claude-x", usage: { input_tokens: 10, output_tokens: 1 } },
          }, "message_start")));
          controller.enqueue(encoder.encode(sse({
            type: "content_block_delta",
            delta: { type: "text_delta", text: "Hel" },
          }, "content_block_delta")));
          // The rest only once the client has read the first part.
          await gate;
          controller.enqueue(encoder.encode(
            sse({
              type: "content_block_delta",
              delta: { type: "text_delta", text: "lo" },
            }, "content_block_delta") + sse({
              type: "message_delta",
              delta: { stop_reason: "end_turn" },
              usage: { output_tokens: 5 },
            }, "message_delta"),
          ));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream", "request-id": "req_1" } },
    )
  );
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "sk-ant-secret-value-1" },
    body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("request-id"), "req_1");
  const reader = response.body!.getReader();
  let got = "";
  // The first chunk arrives while the upstream still holds back the rest: no buffering.
  while (!got.includes("Hel")) got += new TextDecoder().decode((await reader.read()).value);
  release();
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    got += new TextDecoder().decode(next.value);
  }
  assert.match(got, /"lo"/);
  await t.binding.close();
  // The upstream got the key; nothing recorded has it.
  assert.equal(up.seen[0].headers.get("x-api-key"), "sk-ant-secret-value-1");
  assert.equal(up.seen[0].path, "/v1/messages");
  const [started] = ofType(t.events, "model.call.started");
  assert.equal(started.wire, "anthropic.messages");
  assert.equal(started.model, "claude-x");
  assert.equal(started.headers["x-api-key"], undefined);
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual(
    [completed.outcome, completed.status, completed.stopReason, completed.usage],
    ["ok", 200, "end_turn", { inputTokens: 10, outputTokens: 5 }],
  );
  assert.equal(completed.chunks.length >= 2, true, JSON.stringify(completed.chunks));
  assert.ok(completed.chunks.at(-1)![1] >= completed.chunks[0][1]);
  assert.equal(completed.chunks.reduce((sum, [bytes]) => sum + bytes, 0), completed.body!.bytes);
  assert.deepEqual(ofType(t.events, "message.delta").map((d) => d.text).join(""), "Hello");
  const body = await Deno.readTextFile(t.root.layout.wireBody(t.runId, completed.body!.sha256));
  assert.equal(body, got);
  const request = await Deno.readTextFile(t.root.layout.wireBody(t.runId, started.body!.sha256));
  assert.equal(JSON.parse(request).model, "claude-x");
  const all = JSON.stringify(t.events);
  assert.ok(!all.includes("sk-ant-secret-value-1"));
});

Deno.test("gateway records a call as started, its request on disk, while the upstream has not answered", async () => {
  let answer: () => void = () => {};
  const answered = new Promise<void>((resolve) => answer = resolve);
  await using up = upstream(async () => {
    // Answers only once the test has seen the call recorded (a model server thinking long).
    await answered;
    return Response.json({ content: [{ type: "text", text: "hi" }], stop_reason: "end_turn" });
  });
  await using t = await turn(up.url);
  const call = fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-x", messages: [] }),
  });
  for (let i = 0; i < 1000 && ofType(t.events, "model.call.started").length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const [started] = ofType(t.events, "model.call.started");
  answer();
  assert.equal(started?.model, "claude-x", "recorded before the upstream answers");
  assert.equal(up.seen.length, 1);
  assert.equal((await (await call).json()).content[0].text, "hi");
  await t.binding.close();
  const request = await Deno.readTextFile(t.root.layout.wireBody(t.runId, started.body!.sha256));
  assert.equal(JSON.parse(request).model, "claude-x");
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual([completed.outcome, completed.stopReason], ["ok", "end_turn"]);
  const types = t.events.map((e) => e.type);
  assert.deepEqual([types[0], types.at(-1)], ["model.call.started", "model.call.completed"]);
});

Deno.test("gateway passes an upstream error's status, body and Retry-After on unchanged", async () => {
  const errorBody = JSON.stringify({ error: { message: "slow down", type: "rate_limit_error" } });
  await using up = upstream(() =>
    new Response(errorBody, {
      status: 429,
      headers: { "content-type": "application/json", "retry-after": "7", "x-custom": "kept" },
    })
  );
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ model: "m", stream: true }),
  });
  assert.equal(response.status, 429);
  assert.equal(response.headers.get("retry-after"), "7");
  assert.equal(response.headers.get("x-custom"), "kept");
  assert.equal(await response.text(), errorBody);
  await t.binding.close();
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual([completed.outcome, completed.status, completed.error], [
    "error",
    429,
    "slow down",
  ]);
  assert.equal(completed.headers["retry-after"], "7");
  const [problem] = ofType(t.events, "problem");
  assert.equal(problem.reason, "the model server answered 429: slow down");
});

Deno.test("gateway answers an unknown secret or route with 404 and records nothing", async () => {
  await using up = upstream(() => new Response("{}"));
  await using t = await turn(up.url);
  const origin = new URL(t.binding.baseUrl).origin;
  for (
    const path of [
      "/nope/up/messages",
      `/${t.binding.secret.slice(1)}x/up/messages`,
      `/${t.binding.secret}/other/x`,
      "/",
    ]
  ) {
    const response = await fetch(`${origin}${path}`, { method: "POST", body: "{}" });
    assert.equal(response.status, 404, path);
    await response.body?.cancel();
  }
  assert.deepEqual(up.seen, []);
  assert.deepEqual(t.events, []);
});

Deno.test("gateway forwards an opaque path as it is and records it, a query's key left out", async () => {
  await using up = upstream(() => Response.json({ data: [] }));
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/models?key=AIzaSecretKey123&page=2`);
  assert.deepEqual(await response.json(), { data: [] });
  await t.binding.close();
  assert.equal(up.seen[0].path, "/v1/models?key=AIzaSecretKey123&page=2");
  const [started] = ofType(t.events, "model.call.started");
  assert.deepEqual([started.wire, started.generates, started.method, started.path], [
    "opaque",
    false,
    "GET",
    "/models?page=2",
  ]);
  assert.ok(!JSON.stringify(t.events).includes("AIzaSecretKey123"));
});

Deno.test("gateway answers with 502 in the provider's shape when the upstream cannot be reached", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await using t = await turn(`http://127.0.0.1:${port}`);
  const response = await fetch(`${t.binding.routeUrl("up")}/responses`, {
    method: "POST",
    body: JSON.stringify({ model: "gpt-x", stream: true }),
  });
  assert.equal(response.status, 502);
  const body = await response.json();
  assert.match(body.error.message, /^reins's model gateway cannot reach 127\.0\.0\.1:\d+/);
  await t.binding.close();
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual([completed.outcome, completed.status], ["failed", 502]);
});

Deno.test("gateway refuses a call past the budget in the provider's error shape, counting only generations", async () => {
  await using up = upstream(() =>
    Response.json({
      candidates: [{ content: { parts: [{ text: "hi" }] }, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 },
      modelVersion: "gemini-x",
    })
  );
  const ledger = BudgetLedger.of({ maxTurns: 1 });
  await using t = await turn(up.url, { ledger });
  const call = () =>
    fetch(`${t.binding.routeUrl("up")}/models/gemini-x:generateContent`, {
      method: "POST",
      body: JSON.stringify({ contents: [] }),
    });
  assert.equal((await (await call()).json()).usageMetadata.promptTokenCount, 3);
  // count_tokens-like side calls are not model calls: an opaque one still passes.
  const side = await fetch(`${t.binding.routeUrl("up")}/models/gemini-x:countTokens`, {
    method: "POST",
    body: "{}",
  });
  await side.body?.cancel();
  const refused = await call();
  assert.equal(refused.status, 400);
  assert.deepEqual((await refused.json()).error.status, "INVALID_ARGUMENT");
  await t.binding.close();
  assert.equal(up.seen.length, 2);
  assert.deepEqual(t.exhausted, [{ scope: "turn", limit: "turns", used: 1, max: 1 }]);
  const outcomes = Object.fromEntries(
    ofType(t.events, "model.call.completed").map((c) => [c.callId, c.outcome]),
  );
  assert.deepEqual(outcomes, { "call-1": "ok", "call-2": "ok", "call-3": "refused" });
});

Deno.test("gateway records a call the client abandons mid-stream as aborted", async () => {
  const encoder = new TextEncoder();
  let cancelled = false;
  await using up = upstream(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(encoder.encode(sse({ type: "response.created", response: {} })));
        },
        cancel() {
          cancelled = true;
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    )
  );
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/responses`, {
    method: "POST",
    body: JSON.stringify({ model: "gpt-x", stream: true }),
  });
  const reader = response.body!.getReader();
  await reader.read();
  await reader.cancel();
  for (let i = 0; i < 100 && ofType(t.events, "model.call.completed").length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await t.binding.close();
  const [completed] = ofType(t.events, "model.call.completed");
  assert.equal(completed.outcome, "aborted");
  assert.ok(cancelled, "the upstream stream was cancelled too");
});

Deno.test("gateway prices a call from its usage when the model has a price", async () => {
  await using up = upstream(() =>
    new Response(
      sse({
        type: "response.completed",
        response: {
          model: "gpt-x",
          status: "completed",
          output: [],
          usage: {
            input_tokens: 1000,
            input_tokens_details: { cached_tokens: 400 },
            output_tokens: 100,
          },
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    )
  );
  const ledger = BudgetLedger.of({ maxUsd: 1 });
  await using t = await turn(up.url, { ledger, price: true });
  const response = await fetch(`${t.binding.routeUrl("up")}/responses`, {
    method: "POST",
    body: JSON.stringify({ model: "gpt-x", stream: true }),
  });
  await response.text();
  await t.binding.close();
  const [completed] = ofType(t.events, "model.call.completed");
  // 600 uncached × $1 + 400 cached × $0.1 + 100 out × $2, per million
  assert.deepEqual(completed.usage, {
    inputTokens: 1000,
    outputTokens: 100,
    cacheReadTokens: 400,
    costUsd: 0.00084,
    costEstimated: true,
  });
  assert.equal(ledger.spent.usd, 0.00084);
  assert.equal(ledger.spent.tokens, 1100);
});

/** SHA-256 of `bytes`, hex. */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  return [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

Deno.test("gateway records a long answer on its own thread, hashed piece by piece past 256 KiB: every byte kept once, its text told once, its secrets replaced in the body", async () => {
  const encoder = new TextEncoder();
  const secret = "sk-ant-secret-value-long-1";
  // ~1.5 MiB of text deltas in pieces of ~48 KiB: well past the 256 KiB hashed whole at the end
  // (the secret comes after them, in a piece hashed by node:crypto as it passes).
  const pieces: string[] = [];
  const texts: string[] = [];
  for (let i = 0; i < 32; i++) {
    let piece = "";
    for (let j = 0; j < 300; j++) {
      const text = `w${i}.${j} "quoted" \\ ✓ line\n`;
      texts.push(text);
      piece += sse(
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
        "content_block_delta",
      );
    }
    if (i === 20) {
      piece += sse({
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: `key ${secret}` },
      }, "content_block_delta");
    }
    pieces.push(piece);
  }
  texts.splice(texts.length - 11 * 300, 0, `key ${secret}`);
  await using up = upstream(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(encoder.encode(sse({
            type: "message_start",
            message: {
              id: "msg_9",
              model: "claude-x",
              usage: { input_tokens: 4, output_tokens: 1 },
            },
          }, "message_start")));
          for (const piece of pieces) controller.enqueue(encoder.encode(piece));
          controller.enqueue(encoder.encode(sse({
            type: "message_delta",
            delta: { stop_reason: "end_turn" },
            usage: { output_tokens: 9000 },
          }, "message_delta")));
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    )
  );
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    headers: { "x-api-key": secret },
    body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
  });
  const got = new Uint8Array(await response.arrayBuffer());
  await t.binding.close();
  // The harness got the bytes as they were sent, the secret in them too.
  assert.ok(new TextDecoder().decode(got).includes(secret));
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual(
    [completed.outcome, completed.model, completed.stopReason, completed.usage],
    ["ok", "claude-x", "end_turn", { inputTokens: 4, outputTokens: 9000 }],
  );
  assert.equal(completed.chunks.reduce((sum, [bytes]) => sum + bytes, 0), got.length);
  // Kept: the same bytes but for the secret, named by their SHA-256; no partial file left.
  const kept = await Deno.readFile(t.root.layout.wireBody(t.runId, completed.body!.sha256));
  const expected = new TextDecoder().decode(got).replaceAll(secret, "[redacted]");
  assert.equal(new TextDecoder().decode(kept), expected);
  assert.equal(completed.body!.bytes, kept.length);
  assert.equal(await sha256Hex(kept), completed.body!.sha256);
  const names = [...Deno.readDirSync(t.root.layout.wire(t.runId))].map((entry) => entry.name);
  assert.ok(!names.some((name) => name.endsWith(".partial")), names.join(" "));
  // The text, told once (text runs read many events at once); the run's sinks
  // redact the secret in events, as for any call.
  const told = ofType(t.events, "message.delta").map((d) => d.text).join("");
  assert.equal(told, texts.join(""));
  // Each event of bounded size, however much text a run of events told at once.
  const sizes = ofType(t.events, "message.delta").map((d) => d.text.length);
  assert.ok(Math.max(...sizes) <= 16 * 1024, String(Math.max(...sizes)));
});

Deno.test("gateway reads a long JSON answer's usage and hashes it piece by piece past 256 KiB", async () => {
  const content = [{ type: "text", text: "x".repeat(600 * 1024) }];
  await using up = upstream(() =>
    Response.json({
      type: "message",
      id: "msg_2",
      model: "claude-y",
      stop_reason: "max_tokens",
      content,
      usage: { input_tokens: 7, output_tokens: 8 },
    })
  );
  await using t = await turn(up.url);
  const response = await fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    body: JSON.stringify({ model: "claude-y", messages: [] }),
  });
  const got = new Uint8Array(await response.arrayBuffer());
  await t.binding.close();
  const [completed] = ofType(t.events, "model.call.completed");
  assert.deepEqual(
    [completed.responseId, completed.model, completed.stopReason, completed.usage],
    ["msg_2", "claude-y", "max_tokens", { inputTokens: 7, outputTokens: 8 }],
  );
  assert.equal(completed.body!.sha256, await sha256Hex(got));
  assert.equal(ofType(t.events, "message.delta").map((d) => d.text).join(""), content[0].text);
});

Deno.test("gateway passes a streamed answer on and closes its turn without setTimeout, whose first use loads Deno's Node timers", async () => {
  await using up = upstream(() =>
    new Response(
      sse({ type: "message_start", message: { model: "claude-x" } }, "message_start") +
        sse({
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta", text: "Hello" },
        }, "content_block_delta") +
        sse({ type: "message_stop" }, "message_stop"),
      { headers: { "content-type": "text/event-stream" } },
    )
  );
  const calls: string[] = [];
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    calls.push(new Error().stack ?? "");
    return realSetTimeout(...args);
  }) as typeof setTimeout;
  let events: EventInput[];
  try {
    await using t = await turn(up.url);
    events = t.events;
    const answer = await fetch(`${t.binding.routeUrl("up")}/messages`, {
      method: "POST",
      body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
    });
    assert.match(await answer.text(), /Hello/);
    // The text is recorded by its 100 ms timer, before the turn closes.
    await new Promise<void>((resolve) => AbortSignal.timeout(150).onabort = () => resolve());
    assert.deepEqual(ofType(t.events, "message.delta").map((d) => d.text), ["Hello"]);
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
  assert.equal(ofType(events, "model.call.completed").length, 1);
  assert.deepEqual(calls, []);
});

Deno.test("gateway makes fetch ready while the harness starts (a data: URL, nothing sent), not at the first call", async () => {
  await using up = upstream(() => new Response("{}"));
  const fetched: string[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    fetched.push(input instanceof Request ? input.url : String(input));
    return realFetch(input, init);
  }) as typeof fetch;
  try {
    await using _t = await turn(up.url);
    await new Promise<void>((resolve) => AbortSignal.timeout(150).onabort = () => resolve());
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.deepEqual(fetched, ["data:,"]);
  assert.equal(up.seen.length, 0);
});

// regression: a call whose harness gave up before its model server answered was left waiting on
// the server after the turn closed (answered, and billed, later), its end never recorded but
// into the closed turn when it came: model.call.completed after the run had settled
Deno.test("gateway gives up a call still waiting for its model server when the turn closes, and records it aborted before the close ends", async () => {
  // An upstream that takes the request and never answers; it sees when the gateway lets go.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let asked!: () => void;
  const wasAsked = new Promise<void>((resolve) => asked = resolve);
  const letGo = (async () => {
    const conn = await listener.accept();
    const buffer = new Uint8Array(65536);
    if (await conn.read(buffer) !== null) asked();
    while (await conn.read(buffer).catch(() => null) !== null) { /* until the gateway closes */ }
    conn.close();
  })();
  const upstreamUrl = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  // Another turn bound keeps the gateway up, as in reins serve.
  await using other = await turn(upstreamUrl);
  await using t = await turn(upstreamUrl);
  const harness = new AbortController();
  const call = fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
    signal: harness.signal,
  }).catch((error) => error);
  await wasAsked;
  harness.abort();
  await call;
  await t.binding.close();
  const completed = ofType(t.events, "model.call.completed");
  assert.equal(completed.length, 1, "the call's end is recorded by the close");
  assert.equal(completed[0].outcome, "aborted");
  assert.match(completed[0].error ?? "", /the turn ended before the model server answered/);
  await letGo;
  listener.close();
  assert.ok(other.binding.calls === 0);
});

// regression: a harness that went away while sending its request's body made the gateway's
// handler throw, and an upstream breaking off mid-answer errored the answer's stream, each of
// which Deno.serve printed on reins's stderr as an error with its stack
Deno.test("gateway takes a harness gone mid-body and an upstream broken off mid-answer quietly: recorded, nothing printed", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--no-prompt",
      new URL("./_mid_body_probe.ts", import.meta.url).pathname,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.ok(output.success, `the probe failed: ${stderr}`);
  assert.equal(stderr, "");
  // Only the whole request went upstream, and was recorded.
  assert.deepEqual(JSON.parse(new TextDecoder().decode(output.stdout)), {
    upstreamSaw: 1,
    completed: ["ok", "failed"],
  });
});

// regression: only a credential header's whole value, and a bearer at its start, became secrets:
// a cookie `theme=dark; auth=Bearer T; session=S` left T and S alone, and a body or answer that
// held either was written under the data root as it was
Deno.test("gateway keeps a cookie's bearer and its long values out of what it writes, its short ones kept", async () => {
  const bearer = `cookie-bearer-${crypto.randomUUID()}`;
  const session = `cookie-session-${crypto.randomUUID()}`;
  // An upstream that answers with what it was sent.
  await using up = upstream(() =>
    new Response(`{"echo":${up.seen.at(-1)!.body}}`, {
      headers: { "content-type": "application/json" },
    })
  );
  await using t = await turn(up.url);
  const text = `theme dark; the tokens ${bearer} and ${session}`;
  const response = await fetch(`${t.binding.routeUrl("up")}/messages`, {
    method: "POST",
    headers: { cookie: `theme=dark; auth=Bearer ${bearer}; session="${session}"` },
    body: JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: text }] }),
  });
  assert.ok((await response.text()).includes(bearer), "the harness gets its answer unchanged");
  await t.binding.close();
  const wire = `${t.root.layout.run(t.runId)}/wire`;
  const written = [...Deno.readDirSync(wire)].map((entry) =>
    Deno.readTextFileSync(`${wire}/${entry.name}`)
  );
  assert.equal(written.length, 2, "the request and the answer");
  for (const body of written) {
    assert.ok(!body.includes(bearer) && !body.includes(session), body);
    assert.ok(body.includes("theme dark"), "a short cookie value is not taken for a secret");
  }
});
