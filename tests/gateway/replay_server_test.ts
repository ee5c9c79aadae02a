// The recording served as an upstream (lib/gateway/replay_server.ts), over real HTTP on port 0:
// each request answered with the recorded call it matches (whatever order concurrent calls come
// in), a request that differs served the next recorded call of its path and reported, one the
// recording has no call left for answered 400 in the provider's shape, and the counts.
import assert from "node:assert/strict";
import { DataRoot } from "../../lib/store/data_root.ts";
import { newId } from "../../lib/core/ids.ts";
import { type RecordedCall, recordedCalls, ReplayServer } from "../../lib/gateway/replay_server.ts";
import type { RunEvent } from "../../lib/store/contracts.ts";

const encoder = new TextEncoder();

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const request = (text: string) =>
  JSON.stringify({
    model: "claude-x",
    system: `today is ${new Date().toISOString()}`,
    messages: [{ role: "user", content: text }],
    tools: [{ name: "Bash" }],
  });

async function recording(answers: [string, string, string][]) {
  const dir = await Deno.makeTempDir({ prefix: "reins-replay-server-" });
  const root = new DataRoot(dir);
  const runId = newId();
  const calls: RecordedCall[] = [];
  for (const [index, [body, answer, type]] of answers.entries()) {
    const requestBytes = encoder.encode(body);
    const answerBytes = encoder.encode(answer);
    const requestSha = await sha256(requestBytes);
    const answerSha = await sha256(answerBytes);
    for (const [sha, bytes] of [[requestSha, requestBytes], [answerSha, answerBytes]] as const) {
      const path = root.layout.wireBody(runId, sha);
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeFile(path, bytes);
    }
    calls.push({
      callId: `call-${index + 1}`,
      route: "anthropic",
      method: "POST",
      path: "/v1/messages",
      wire: "anthropic.messages",
      requestSha,
      status: 200,
      headers: { "content-type": type, "content-length": "1" },
      answerSha,
    });
  }
  return {
    root,
    runId,
    calls,
    async [Symbol.asyncDispose]() {
      root.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function post(server: ReplayServer, body: string) {
  const response = await fetch(`${server.upstreamOf("anthropic")}/v1/messages?beta=true`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
  });
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    text: await response.text(),
  };
}

Deno.test("the replay server answers each request with the recorded call it matches, in any order", async () => {
  const stream = "event: message_start\ndata: {}\n\n";
  await using rec = await recording([
    [request("title please"), '{"title":"x"}', "application/json"],
    [request("write the file"), stream, "text/event-stream"],
  ]);
  await using server = new ReplayServer(rec.root, rec.runId, rec.calls, { cwds: [] });
  // The turn's call first, the title's after: each still gets its own answer.
  assert.deepEqual(await post(server, request("write the file")), {
    status: 200,
    type: "text/event-stream",
    text: stream,
  });
  assert.deepEqual(await post(server, request("title please")), {
    status: 200,
    type: "application/json",
    text: '{"title":"x"}',
  });
  assert.deepEqual(server.matcher.divergences, []);
  assert.deepEqual(server.matcher.counts, { recorded: 2, served: 2, matching: 2 });
  assert.deepEqual(server.matcher.unused(), []);
});

Deno.test("a request that differs is served the next recorded call and reported; none left is a 400", async () => {
  await using rec = await recording([[request("write the file"), '{"a":1}', "application/json"]]);
  await using server = new ReplayServer(rec.root, rec.runId, rec.calls, { cwds: [] });
  const first = await post(server, request("write no file"));
  assert.equal(first.text, '{"a":1}');
  const [divergence] = server.matcher.divergences;
  assert.equal(divergence.recordedCallId, "call-1");
  assert.deepEqual(divergence.fields, ["messages"]);
  assert.deepEqual(divergence.difference, {
    at: "messages[0].content",
    recorded: "write the file",
    replayed: "write no file",
  });
  const second = await post(server, request("again"));
  assert.equal(second.status, 400);
  assert.equal(JSON.parse(second.text).error.type, "invalid_request_error");
  assert.deepEqual(server.matcher.divergences[1].fields, ["unrecorded"]);
  assert.deepEqual(server.matcher.counts, { recorded: 1, served: 1, matching: 0 });
});

Deno.test("recorded calls never made are unused; refused calls are not served again", async () => {
  await using rec = await recording([
    [request("one"), "{}", "application/json"],
    [request("two"), "{}", "application/json"],
  ]);
  await using server = new ReplayServer(rec.root, rec.runId, rec.calls, { cwds: [] });
  await post(server, request("one"));
  assert.deepEqual(server.matcher.unused().map((call) => call.callId), ["call-2"]);

  const started = (callId: string) => ({
    type: "model.call.started",
    payload: {
      callId,
      wire: "anthropic.messages",
      generates: true,
      route: "anthropic",
      method: "POST",
      path: "/v1/messages?beta=true",
      model: null,
      stream: true,
      headers: {},
      body: null,
    },
  });
  const completed = (callId: string, outcome: string, status: number | null) => ({
    type: "model.call.completed",
    payload: { callId, outcome, status, headers: {}, body: null, chunks: [] },
  });
  const events = [
    started("call-1"),
    completed("call-1", "ok", 200),
    started("call-2"),
    completed("call-2", "refused", 400),
    started("call-3"),
    completed("call-3", "aborted", null),
  ] as unknown as RunEvent[];
  const calls = recordedCalls(events);
  assert.deepEqual(calls.map((call) => [call.callId, call.path]), [["call-1", "/v1/messages"]]);
});
