// The HTTP+JSON binding (A2A 1.0 §11) through the official client's REST transport (@a2a-js/sdk
// 1.3.0, RestTransportFactory) and raw fetch: the card names it, send, stream, get, list, cancel,
// subscribe, the push configs refused, errors under their HTTP statuses with google.rpc.Status
// bodies, and an error on a streaming route as one SSE event. Real turns: sh agents.
import assert from "node:assert/strict";
import {
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  type Task,
  TaskState,
} from "@a2a-js/sdk";
import { commandAgent, eventually, FIXTURES, startTestServer, TOKEN } from "./_server.ts";

const send = (text: string, message: Record<string, unknown> = {}, configuration = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...message },
    configuration,
  });

const answerOf = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts).map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");

async function collect(
  stream: AsyncGenerator<import("@a2a-js/sdk").StreamResponse>,
): Promise<[string, unknown][]> {
  const items: [string, unknown][] = [];
  for await (const item of stream) items.push([item.payload!.$case, item.payload!.value]);
  return items;
}

/** A REST answer's JSON: an error body, or whatever the call answers. */
type Answer = {
  error: { code: number; status: string; message: string; details: { reason: string }[] };
} & Record<string, unknown>;

const base = (t: { server: { addr: Deno.NetAddr } }) => `http://127.0.0.1:${t.server.addr.port}`;

/**
 * A raw REST request with the token and A2A-Version 1.0 (unless `headers` says otherwise); a
 * `body` that is a string is sent as it is.
 */
async function rest(
  t: { server: { addr: Deno.NetAddr } },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; text: string; json: () => Answer }> {
  const response = await fetch(`${base(t)}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "a2a-version": "1.0",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type") ?? "",
    text,
    json: () => JSON.parse(text),
  };
}

Deno.test("the card offers HTTP+JSON beside JSON-RPC, and the SDK's REST client sends, gets and lists through it", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const card = await (await fetch(`${base(t)}/.well-known/agent-card.json`)).json();
  assert.deepEqual(card.supportedInterfaces, [
    { url: `${base(t)}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: `${base(t)}/`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
  ]);
  const client = await t.client("rest");
  const messageId = "rest-message-1";
  const task = await client.sendMessage(send("count the TODOs", { messageId })) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(answerOf(task), "heard: count the TODOs\nnative: none\ndone\n");
  assert.equal(t.store.loadRun(task.id).trigger, "a2a");
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
  assert.deepEqual(got, task);
  assert.equal(got.history[0].messageId, messageId);
  const short = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }));
  assert.deepEqual(short.history, []);
  const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }));
  assert.deepEqual(listed.tasks.map((x) => x.id), [task.id]);
  // The same task through both bindings is the same JSON.
  const viaRpc = await t.rpc("GetTask", { id: task.id });
  assert.deepEqual((await rest(t, "GET", `/tasks/${task.id}`)).json(), viaRpc.body.result);
});

Deno.test("POST /message:stream streams the task, its chunks and updates to completion through the SDK's REST client", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client("rest");
  const items = await collect(client.sendMessageStream(send("stream it")));
  assert.equal(items[0][0], "task");
  const task = items[0][1] as Task;
  const last = items.at(-1)!;
  assert.equal(last[0], "statusUpdate");
  assert.equal(
    (last[1] as import("@a2a-js/sdk").TaskStatusUpdateEvent).status?.state,
    TaskState.TASK_STATE_COMPLETED,
  );
  const streamed = items.filter(([kind]) => kind === "artifactUpdate").map(([, v]) =>
    (v as import("@a2a-js/sdk").TaskArtifactUpdateEvent).artifact!.parts.map((p) =>
      p.content?.$case === "text" ? p.content.value : ""
    ).join("")
  ).join("");
  assert.equal(streamed, answerOf(await client.getTask(GetTaskRequest.fromJSON({ id: task.id }))));
});

Deno.test("POST /tasks/{id}:cancel cancels through the SDK's REST client; a second cancel is 409 TaskNotCancelable", async () => {
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}sleeper.sh`),
    server: { cancelGraceMs: 2_000 },
  });
  const client = await t.client("rest");
  const task = await client.sendMessage(send("work", {}, { returnImmediately: true })) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_WORKING);
  await eventually(() => Deno.readTextFile(`${t.work}/child.pid`).catch(() => ""), "the child");
  // A subscriber over REST sees the task as it is, then the cancel.
  const watching = collect(client.resubscribeTask({ id: task.id, tenant: "" }));
  const canceled = await client.cancelTask({ id: task.id, tenant: "", metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  const watched = await watching;
  assert.equal(watched[0][0], "task");
  const end = watched.at(-1)![1] as import("@a2a-js/sdk").TaskStatusUpdateEvent;
  assert.equal(end.status?.state, TaskState.TASK_STATE_CANCELED);
  await assert.rejects(
    client.cancelTask({ id: task.id, tenant: "", metadata: undefined }),
    (error: Error & { name: string; statusCode?: number }) =>
      error.name === "TaskNotCancelableError" && error.statusCode === 409,
  );
  const raw = await rest(t, "POST", `/tasks/${task.id}:cancel`);
  assert.equal(raw.status, 409);
  assert.deepEqual(raw.json().error, {
    code: 409,
    status: "FAILED_PRECONDITION",
    message: `Task ${task.id} is canceled already: there is nothing to cancel`,
    details: [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "TASK_NOT_CANCELABLE",
      domain: "a2a-protocol.org",
      metadata: { taskId: task.id },
    }],
  });
});

Deno.test("REST errors have A2A's HTTP statuses and google.rpc.Status bodies", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client("rest");
  await assert.rejects(
    client.getTask(GetTaskRequest.fromJSON({ id: "0193a5f2-7c1e-7b3a-9d2e-5f8a1c3b4d6e" })),
    (error: Error & { name: string; statusCode?: number }) =>
      error.name === "TaskNotFoundError" && error.statusCode === 404,
  );
  const cases: [string, string, unknown, Record<string, string>, number, string, string][] = [
    ["GET", "/tasks/nope", undefined, {}, 404, "NOT_FOUND", "TASK_NOT_FOUND"],
    ["POST", "/message:send", { message: {} }, {}, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"],
    ["POST", "/message:send", "[", {}, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"],
    ["GET", "/tasks?pageSize=x", undefined, {}, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"],
    [
      "GET",
      "/tasks",
      undefined,
      { "a2a-version": "0.3" },
      400,
      "FAILED_PRECONDITION",
      "VERSION_NOT_SUPPORTED",
    ],
    [
      "POST",
      "/tasks/x/pushNotificationConfigs",
      { url: "https://example.com/hook" },
      {},
      400,
      "FAILED_PRECONDITION",
      "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ],
    [
      "GET",
      "/extendedAgentCard",
      undefined,
      {},
      400,
      "FAILED_PRECONDITION",
      "UNSUPPORTED_OPERATION",
    ],
    ["GET", "/no/such/path", undefined, {}, 404, "NOT_FOUND", "METHOD_NOT_FOUND"],
    ["DELETE", "/tasks", undefined, {}, 405, "UNIMPLEMENTED", "METHOD_NOT_FOUND"],
  ];
  for (const [method, path, body, headers, status, name, reason] of cases) {
    const answer = await rest(t, method, path, body, headers);
    const where = `${method} ${path}: ${answer.text}`;
    assert.equal(answer.status, status, where);
    const { error } = answer.json();
    assert.equal(error.code, status, where);
    assert.equal(error.status, name, where);
    assert.equal(error.details[0].reason, reason, where);
  }
  // A method a path does not serve is 405 with the methods it does.
  const put = await fetch(`${base(t)}/tasks/x:subscribe`, { method: "PUT" });
  await put.body?.cancel();
  assert.deepEqual([put.status, put.headers.get("allow")], [405, "GET, POST"]);
  // Without the token nothing is answered but 401; a body that is not JSON is 415.
  const anonymous = await fetch(`${base(t)}/tasks`);
  assert.equal(anonymous.status, 401);
  await anonymous.body?.cancel();
  const plain = await rest(t, "POST", "/message:send", "hi", { "content-type": "text/plain" });
  assert.equal(plain.status, 415, plain.text);
  assert.equal(plain.json().error.details[0].reason, "CONTENT_TYPE_NOT_SUPPORTED");
  // A POST without a body (CancelTask) needs no Content-Type.
  const bare = await rest(t, "POST", "/tasks/nope:cancel");
  assert.equal(bare.status, 404, bare.text);
});

// An error on a streaming route is one SSE event, whatever the binding, when the client reads SSE
Deno.test("an error on a streaming method is one SSE event on both bindings, and the SDK clients raise it", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const missing = "0193a5f2-7c1e-7b3a-9d2e-5f8a1c3b4d6e";
  const accept = { accept: "text/event-stream" };
  const viaRest = await rest(t, "POST", `/tasks/${missing}:subscribe`, undefined, accept);
  assert.equal(viaRest.status, 200);
  assert.match(viaRest.type, /^text\/event-stream/);
  assert.match(viaRest.text, /^event: error\ndata: \{"error":\{"code":404,"status":"NOT_FOUND"/);
  const viaRpc = await fetch(`${base(t)}/`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "a2a-version": "1.0",
      "content-type": "application/json",
      ...accept,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "SubscribeToTask",
      params: { id: missing },
    }),
  });
  assert.match(viaRpc.headers.get("content-type") ?? "", /^text\/event-stream/);
  const event = await viaRpc.text();
  assert.match(event, /^data: \{"jsonrpc":"2\.0","id":7,"error":\{"code":-32001,/);
  assert.ok(event.endsWith("\n\n"));
  // Asked for JSON, the same error is a JSON answer.
  const json = await rest(t, "POST", `/tasks/${missing}:subscribe`);
  assert.equal(json.status, 404);
  assert.match(json.type, /^application\/json/);
  for (const binding of ["rest", "jsonrpc"] as const) {
    const client = await t.client(binding);
    await assert.rejects(
      collect(client.resubscribeTask({ id: missing, tenant: "" })),
      (error: Error) =>
        error.name === "TaskNotFoundError" || /-32001|not found/i.test(error.message),
      binding,
    );
  }
});
