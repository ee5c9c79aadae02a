// The A2A server through the official client (@a2a-js/sdk 1.3.0, ClientFactory/Client) from
// Deno: the card, send, stream, get, list, cancel, subscribe, a two-turn conversation, input
// required, forget. Real turns: the command driver running sh agents, the built-in loop.
import assert from "node:assert/strict";
import {
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  StreamResponse,
  type Task,
  TaskState,
  type TaskStatusUpdateEvent,
} from "@a2a-js/sdk";
import { commandAgent, eventually, FIXTURES, startTestServer, TOKEN } from "./_server.ts";
import { parseResponses, writeAll } from "./_raw.ts";
import { VERSION } from "../../lib/core/version.ts";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A SendMessageRequest from its ProtoJSON form, as a client program would write it. */
const send = (text: string, message: Record<string, unknown> = {}, configuration = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...message },
    configuration,
  });

/** The text of a task's `response` artifact. */
const answerOf = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts).map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");

Deno.test("the official client reads the agent card: JSONRPC 1.0, streaming, bearer, the forget extension", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client();
  const card = await client.getAgentCard();
  assert.equal(card.name, "reins (command)");
  assert.deepEqual(card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion]), [
    ["JSONRPC", "1.0"],
    ["HTTP+JSON", "1.0"],
  ]);
  assert.equal(card.supportedInterfaces[0].url, t.server.url);
  assert.equal(card.capabilities?.streaming, true);
  assert.equal(card.capabilities?.pushNotifications, false);
  assert.deepEqual(card.capabilities?.extensions.map((e) => e.uri), [
    "urn:reins:a2a:context-forget:v1",
  ]);
  const bearer = card.securitySchemes.bearer?.scheme;
  assert.equal(bearer?.$case, "httpAuthSecurityScheme");
  assert.equal(bearer.value.scheme, "Bearer");
  assert.deepEqual(card.securityRequirements.map((r) => Object.keys(r.schemes)), [["bearer"]]);
  assert.deepEqual(card.skills.map((skill) => [skill.id, skill.tags]), [
    ["reins-command", ["agent", "reins", "command"]],
  ], "one skill: the configured driver");
  assert.equal(card.version, VERSION);
  assert.equal(client.protocolVersion, "1.0");
});

Deno.test("SendMessage runs a turn and returns the completed task, which GetTask and ListTasks find", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client();
  const result = await client.sendMessage(send("count the TODOs"));
  assert.ok(!("messageId" in result), "a task, not a message");
  const task = result as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(answerOf(task), "heard: count the TODOs\nnative: none\ndone\n");
  const record = t.store.loadRun(task.id);
  assert.equal(record.trigger, "a2a");
  assert.equal(record.contextId, task.contextId);
  assert.match(task.contextId, UUID_V7, "a message without a contextId gets a new uuid v7");
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
  assert.deepEqual(got.artifacts, task.artifacts);
  const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }));
  assert.deepEqual(listed.tasks.map((x) => x.id), [task.id]);
  assert.equal(listed.nextPageToken, "");
});

/** Collects a stream of the official client as [case, value] pairs. */
async function collect(
  stream: AsyncGenerator<import("@a2a-js/sdk").StreamResponse>,
): Promise<[string, unknown][]> {
  const items: [string, unknown][] = [];
  for await (const item of stream) items.push([item.payload!.$case, item.payload!.value]);
  return items;
}

Deno.test("SendStreamingMessage streams the task, text chunks, tool and usage updates, and closes at completion", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client();
  const items = await collect(client.sendMessageStream(send("stream it")));
  assert.equal(items[0][0], "task");
  const task = items[0][1] as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_WORKING);
  const last = items.at(-1)!;
  assert.equal(last[0], "statusUpdate");
  assert.equal(
    (last[1] as import("@a2a-js/sdk").TaskStatusUpdateEvent).status?.state,
    TaskState.TASK_STATE_COMPLETED,
  );
  const chunks = items.filter(([kind]) => kind === "artifactUpdate").map(([, v]) =>
    v as import("@a2a-js/sdk").TaskArtifactUpdateEvent
  );
  const streamed = chunks.map((c) =>
    c.artifact!.parts.map((p) => p.content?.$case === "text" ? p.content.value : "").join("")
  ).join("");
  assert.deepEqual(chunks.map((c) => c.append), chunks.map((_, i) => i > 0));
  assert.deepEqual(chunks.map((c) => c.lastChunk), chunks.map((_, i) => i === chunks.length - 1));
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
  assert.equal(streamed, answerOf(got), "the stream reassembles to the task's artifact");
  const updates = items.filter(([kind]) => kind === "statusUpdate").map(([, v]) =>
    v as import("@a2a-js/sdk").TaskStatusUpdateEvent
  );
  const data = updates.flatMap((u) => u.status?.message?.parts ?? []).flatMap((p) =>
    p.content?.$case === "data" ? [p.content.value as { event: string }] : []
  );
  assert.deepEqual(data.map((d) => d.event), ["tool.started", "tool.completed", "usage.updated"]);
  assert.deepEqual(data[0], {
    event: "tool.started",
    callId: "c1",
    tool: "grep",
    args: { pattern: "TODO" },
  });
});

// regression: the prompt had the id `<taskId>-prompt` in the first streamed Task and its event's
// id in GetTask, never the messageId the client gave it
Deno.test("the client's messageId is the prompt's id in the streamed Task, GetTask and after a restart", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-serve-" }));
  const messageId = "client-message-7f3a";
  try {
    let task: Task;
    {
      await using t = await startTestServer({
        dir,
        agent: commandAgent(`sh ${FIXTURES}talker.sh`),
      });
      const client = await t.client();
      const items = await collect(client.sendMessageStream(send("keep my id", { messageId })));
      assert.equal(items[0][0], "task");
      const first = items[0][1] as Task;
      assert.deepEqual(first.history.map((m) => [m.messageId, m.role]), [[messageId, 1]]);
      task = await client.getTask(GetTaskRequest.fromJSON({ id: first.id }));
      assert.equal(task.history[0].messageId, messageId);
      assert.deepEqual(
        t.store.readEvents(first.id).events[0].payload.messageId,
        messageId,
        "run.started keeps it",
      );
    }
    await using t = await startTestServer({ dir, agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
    const got = await (await t.client()).getTask(GetTaskRequest.fromJSON({ id: task.id }));
    assert.equal(got.history[0].messageId, messageId);
    assert.deepEqual(got, task);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("two messages on one contextId are two tasks that continue one harness session", async () => {
  await using t = await startTestServer();
  const client = await t.client();
  const first = await client.sendMessage(send("Remember the word heliotrope")) as Task;
  assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED);
  const session = JSON.parse(
    await Deno.readTextFile(`${t.home}/contexts/${first.contextId}/harness-session.json`),
  );
  const second = await client.sendMessage(
    send("What did I ask you first?", { contextId: first.contextId }),
  ) as Task;
  assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.notEqual(second.id, first.id);
  assert.equal(second.contextId, first.contextId);
  assert.match(answerOf(second), /heliotrope/, "the demo model quotes the earlier prompt");
  const [one, two] = [t.store.loadRun(first.id), t.store.loadRun(second.id)];
  assert.equal(two.sessionId, one.sessionId);
  assert.equal(two.relation, "resume");
  const after = JSON.parse(
    await Deno.readTextFile(`${t.home}/contexts/${first.contextId}/harness-session.json`),
  );
  assert.equal(after.session_id, session.session_id);
  const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: first.contextId }));
  assert.deepEqual(listed.tasks.map((x) => x.id), [second.id, first.id], "newest first");
});

const WRITE = { id: "c1", name: "write_file", args: { path: "out.txt", content: "hello" } };

async function askingAgent(dir: string) {
  const script = `${dir}/ask.json`;
  await Deno.writeTextFile(script, JSON.stringify([{ toolCalls: [WRITE] }, { text: "wrote it" }]));
  return { kind: "loop" as const, model: `mock:${script}`, baseUrl: null };
}

Deno.test("an approval the agent asks for is TASK_STATE_INPUT_REQUIRED; the next message on the task answers it", async () => {
  await using t = await startTestServer({ agent: askingAgent, approval: "ask" });
  const client = await t.client();
  const asked = await client.sendMessage(send("write the file")) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const question = asked.status!.message!;
  assert.match(
    question.parts.map((p) => p.content?.$case === "text" ? p.content.value : "").join(""),
    /write_file .*"out\.txt".* Reply "allow" or "deny"/,
  );
  assert.equal(await Deno.stat(`${t.work}/out.txt`).catch(() => null), null, "not before approval");

  // A mismatched context is refused, and a working task takes no message.
  await assert.rejects(
    client.sendMessage(send("allow", { taskId: asked.id, contextId: "another" })),
    (error: Error & { envelopeCode?: number }) => error.envelopeCode === -32602,
  );
  const answer = send("allow, go ahead", { taskId: asked.id, contextId: asked.contextId });
  const done = await client.sendMessage(answer) as Task;
  assert.equal(done.id, asked.id);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(answerOf(done), "wrote it");
  assert.equal(await Deno.readTextFile(`${t.work}/out.txt`), "hello");
  const events = t.store.readEvents(asked.id).events;
  const resolved = events.find((e) => e.type === "approval.resolved")!;
  assert.deepEqual(resolved.payload, {
    approvalId: "approval-1",
    decision: "allow",
    by: "a2a",
    reason: "go ahead",
    messageId: answer.message!.messageId,
  });
  const roles = done.history.map((m) => m.role);
  assert.deepEqual(roles, [1, 2, 1], "prompt, the agent's question, the answer");
  assert.equal(done.history[2].messageId, answer.message!.messageId, "the answer keeps its id");
  // A message to a finished task is refused.
  await assert.rejects(
    client.sendMessage(send("again", { taskId: asked.id })),
    (error: Error & { envelopeCode?: number }) => error.envelopeCode === -32004,
  );
});

Deno.test("SubscribeToTask gives every subscriber the current task, then the same events in the same order", async () => {
  await using t = await startTestServer({ agent: askingAgent, approval: "ask" });
  const client = await t.client();
  const asked = await client.sendMessage(send("write the file")) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const [a, b] = [
    client.resubscribeTask({ id: asked.id, tenant: "" }),
    (await t.client()).resubscribeTask({ id: asked.id, tenant: "" }),
  ];
  const firstA = await a.next();
  const firstB = await b.next();
  assert.equal(firstA.value?.payload?.$case, "task");
  assert.equal(
    (firstA.value!.payload!.value as Task).status?.state,
    TaskState.TASK_STATE_INPUT_REQUIRED,
  );
  assert.deepEqual(firstB.value, firstA.value);
  const rest = Promise.all([collect(a), collect(b)]);
  await client.sendMessage(send("deny: not that file", { taskId: asked.id }));
  const [itemsA, itemsB] = await rest;
  assert.deepEqual(itemsB, itemsA);
  const states = itemsA.filter(([k]) => k === "statusUpdate").map(([, v]) =>
    (v as import("@a2a-js/sdk").TaskStatusUpdateEvent).status?.state
  );
  assert.equal(states.at(-1), TaskState.TASK_STATE_COMPLETED);
  assert.ok(states.includes(TaskState.TASK_STATE_WORKING));
  assert.equal(await Deno.stat(`${t.work}/out.txt`).catch(() => null), null, "denied: not written");
  // A finished task has nothing to stream: said as the stream's one event, which the client
  // raises with the JSON-RPC error as its cause.
  await assert.rejects(
    collect(client.resubscribeTask({ id: asked.id, tenant: "" })),
    (error: Error & { cause?: { envelopeCode?: number } }) => error.cause?.envelopeCode === -32004,
  );
});

// regression: a subscriber that read more slowly than the others was sent the text that waited
// for it joined into fewer, longer chunks, so concurrent streams of one task differed (A2A 1.0
// §3.5.2: each stream receives the same events in the same order).
Deno.test("SubscribeToTask: subscribers reading at different speeds get the very same items, and the fast one never waits", async () => {
  // 300 lines of 48 KiB (14 MB) at a steady pace: more than the sockets between the server and a
  // reader that reads nothing hold, so lines wait for it at the server. (The official client
  // buffers without bound, a raw socket does not.)
  const lines = 300;
  const size = 48 * 1024;
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}drip_on_go.sh ${lines} ${size}`),
  });
  const client = await t.client();
  const task = await client.sendMessage(send("drip", {}, { returnImmediately: true })) as Task;
  await eventually(() => Deno.stat(`${t.work}/ready`).catch(() => null), "the agent");
  const official = await Promise.all([0, 1].map(async () => {
    const stream = (await t.client()).resubscribeTask({ id: task.id, tenant: "" });
    // Subscribed once the first item (the task as it stands) has come.
    const first = await stream.next();
    return { stream, first: first.value! };
  }));
  const raw = await rawSubscriber(t.server.addr.port, task.id);
  await Deno.writeTextFile(`${t.work}/go`, "");
  const read = async (stream: AsyncGenerator<StreamResponse>, pauseMs: number) => {
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    const items: StreamResponse[] = [];
    for await (const item of stream) items.push(item);
    return items;
  };
  const fastDone = read(official[0].stream, 0);
  // The raw one reads nothing more until the fast one has had the whole task.
  const [fast, paused, stalled] = await Promise.all([
    fastDone,
    read(official[1].stream, 1_000),
    raw.readAllAfter(fastDone),
  ]);
  assert.deepEqual(official[1].first, official[0].first);
  assert.deepEqual(stalled[0], official[0].first);
  const last = fast.at(-1)!;
  assert.equal(last.payload?.$case, "statusUpdate");
  assert.equal(
    (last.payload!.value as TaskStatusUpdateEvent).status?.state,
    TaskState.TASK_STATE_COMPLETED,
  );
  const text = fast.flatMap((item) =>
    item.payload?.$case === "artifactUpdate" ? item.payload.value.artifact!.parts : []
  ).map((p) => p.content?.$case === "text" ? p.content.value : "").join("");
  const pad = "x".repeat(size);
  assert.equal(text, Array.from({ length: lines }, (_, i) => `${i} ${pad}\n`).join(""));
  const kinds = (items: StreamResponse[]) => items.map((item) => item.payload?.$case);
  assert.ok(
    kinds(fast).filter((k) => k === "artifactUpdate").length >= lines,
    "the fast reader was sent the lines as they came",
  );
  assert.deepEqual(kinds(paused), kinds(fast), "the same items for the one that paused");
  assert.deepEqual(kinds(stalled.slice(1)), kinds(fast), "and for the one that stopped reading");
  assert.deepEqual(paused, fast);
  assert.deepEqual(stalled.slice(1), fast);
});

/**
 * A SubscribeToTask over a bare socket: resolves once the stream's first item has come; then
 * reads nothing until readAllAfter()'s promise settles, so that the server's writes to it back up.
 */
async function rawSubscriber(port: number, taskId: string) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "SubscribeToTask",
    params: { id: taskId },
  });
  await writeAll(
    conn,
    new TextEncoder().encode(
      `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\n` +
        `content-type: application/json\r\na2a-version: 1.0\r\nconnection: close\r\n` +
        `content-length: ${body.length}\r\n\r\n${body}`,
    ),
  );
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(64 * 1024);
  const readSome = async () => {
    const n = await conn.read(buffer);
    if (n === null) return false;
    chunks.push(buffer.slice(0, n));
    return true;
  };
  const text = () => new TextDecoder().decode(concat(chunks));
  while (
    !/\r\n\r\n[\s\S]*data: /.test(text()) || !text().includes("\n\n", text().indexOf("data: "))
  ) {
    if (!(await readSome())) throw new Error(`the stream ended early: ${text()}`);
  }
  return {
    async readAllAfter(start: Promise<unknown>) {
      await start;
      while (await readSome());
      conn.close();
      const [response] = parseResponses(text());
      assert.equal(response.status, 200);
      return response.body.split("\n\n").filter((event) => event.startsWith("data: ")).map(
        (event) => StreamResponse.fromJSON(JSON.parse(event.slice(6)).result),
      );
    },
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

Deno.test("ForgetContext (the card's extension) drops the context's session: the next message starts afresh", async () => {
  await using t = await startTestServer();
  const client = await t.client();
  const first = await client.sendMessage(send("Remember the word heliotrope")) as Task;
  const sessionFile = `${t.home}/contexts/${first.contextId}/harness-session.json`;
  const session = JSON.parse(await Deno.readTextFile(sessionFile)).session_id;
  const transport = client.transport as unknown as {
    callExtensionMethod(
      method: string,
      params: unknown,
      options: unknown,
    ): Promise<{ result: unknown }>;
  };
  const answer = await transport.callExtensionMethod(
    "ForgetContext",
    { contextId: first.contextId },
    {
      serviceParameters: {
        "A2A-Version": "1.0",
        "A2A-Extensions": "urn:reins:a2a:context-forget:v1",
      },
    },
  );
  assert.deepEqual(answer.result, {
    contextId: first.contextId,
    forgotten: true,
    sessionId: session,
  });
  assert.equal(await Deno.stat(sessionFile).catch(() => null), null);
  const second = await client.sendMessage(
    send("What did I ask you first?", { contextId: first.contextId }),
  ) as Task;
  assert.doesNotMatch(answerOf(second), /heliotrope/);
  assert.notEqual(t.store.loadRun(second.id).sessionId, t.store.loadRun(first.id).sessionId);
  const again = await transport.callExtensionMethod("ForgetContext", { contextId: "never-seen" }, {
    serviceParameters: { "A2A-Version": "1.0" },
  });
  assert.deepEqual(again.result, { contextId: "never-seen", forgotten: false, sessionId: null });
});

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

Deno.test("CancelTask stops the agent and its process group and records the run interrupted; the task is CANCELED", async () => {
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}sleeper.sh`),
    server: { cancelGraceMs: 2_000 },
  });
  const client = await t.client();
  const task = await client.sendMessage(send("work", {}, { returnImmediately: true })) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_WORKING);
  const pidOf = (name: string) =>
    eventually(() => Deno.readTextFile(`${t.work}/${name}`).catch(() => ""), name).then(Number);
  const agent = await pidOf("agent.pid");
  const child = await pidOf("child.pid");
  t.defer(() => {
    // Should the test fail before the group is stopped, it does not leave the child behind.
    if (alive(child)) Deno.kill(child, "SIGKILL");
  });
  assert.ok(alive(agent) && alive(child));
  const canceled = await client.cancelTask({ id: task.id, tenant: "", metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  assert.equal(alive(agent), false, "the agent was stopped before CancelTask answered");
  assert.equal(alive(child), false, "and what it started, its process group");
  const record = t.store.loadRun(task.id);
  assert.equal(record.status, "interrupted");
  assert.equal(record.terminalReason, "canceled by an A2A client (CancelTask)");
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
  assert.equal(got.status?.state, TaskState.TASK_STATE_CANCELED);
  await assert.rejects(
    client.cancelTask({ id: task.id, tenant: "", metadata: undefined }),
    (error: Error & { envelopeCode?: number }) => error.envelopeCode === -32002,
  );
});

Deno.test("tasks survive a restart: GetTask and ListTasks answer from the recorded runs", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-serve-" }));
  try {
    let task: Task;
    {
      await using t = await startTestServer({
        dir,
        agent: commandAgent(`sh ${FIXTURES}talker.sh`),
      });
      task = await (await t.client()).sendMessage(send("before the restart")) as Task;
    }
    await using t = await startTestServer({ dir, agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
    const client = await t.client();
    const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
    assert.deepEqual(got, task);
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }));
    assert.deepEqual(listed.tasks.map((x) => x.id), [task.id]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a second message on a busy context waits for the first turn, then resumes its session", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}brief.sh`) });
  const client = await t.client();
  const first = client.sendMessage(send("one", { contextId: "shared" }));
  await eventually(() => Deno.stat(`${t.work}/started`).catch(() => null), "the first turn");
  const second = client.sendMessage(send("two", { contextId: "shared" }));
  const [one, two] = await Promise.all([first, second]) as Task[];
  assert.equal(one.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(two.status?.state, TaskState.TASK_STATE_COMPLETED);
  const [a, b] = [t.store.loadRun(one.id), t.store.loadRun(two.id)];
  assert.ok(b.startedAt >= a.endedAt!, "the second turn started after the first ended");
  assert.equal(b.sessionId, a.sessionId);
});

async function questioningAgent(dir: string) {
  const script = `${dir}/question.json`;
  await Deno.writeTextFile(
    script,
    JSON.stringify([
      {
        toolCalls: [{
          id: "c1",
          name: "ask_user",
          args: { question: "Which file should I read?" },
        }],
      },
      { text: "Reading it." },
    ]),
  );
  return { kind: "loop" as const, model: `mock:${script}`, baseUrl: null };
}

Deno.test("a question the agent asks (the loop's ask_user) is TASK_STATE_INPUT_REQUIRED; the next message's text answers it", async () => {
  await using t = await startTestServer({ agent: questioningAgent });
  const client = await t.client();
  const asked = await client.sendMessage(send("read something")) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const parts = asked.status!.message!.parts;
  assert.equal(
    parts[0].content?.$case === "text" && parts[0].content.value,
    "Which file should I read?",
  );
  assert.deepEqual(
    parts[1].content?.$case === "data" && parts[1].content.value,
    { event: "question.requested", questionId: "question-1" },
  );
  const reply = send("notes.md", { taskId: asked.id });
  const items = await collect(client.sendMessageStream(reply));
  assert.equal(items[0][0], "task");
  const last = items.at(-1)![1] as import("@a2a-js/sdk").TaskStatusUpdateEvent;
  assert.equal(last.status?.state, TaskState.TASK_STATE_COMPLETED);
  const done = await client.getTask(GetTaskRequest.fromJSON({ id: asked.id }));
  assert.equal(answerOf(done), "Reading it.");
  const events = t.store.readEvents(asked.id).events;
  const answered = events.find((e) => e.type === "question.answered");
  assert.deepEqual(answered?.payload, {
    questionId: "question-1",
    answer: "notes.md",
    messageId: reply.message!.messageId,
  });
  assert.equal(done.history.at(-1)?.messageId, reply.message!.messageId, "the answer keeps its id");
  const tool = events.find((e) => e.type === "tool.completed");
  assert.equal(tool?.payload.result, "notes.md", "the model was given the answer");
});

// A new task's view starts from the run.started event the turn hands over (not run.json read
// back): the first streamed Task says what the recorded run says, a secret in the prompt redacted
// in both.
Deno.test("the first streamed Task of a new task matches its recorded run: context, session, driver, the prompt redacted", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const client = await t.client();
  const secret = "sk-ant-api03-" + "x".repeat(40);
  const items = await collect(client.sendMessageStream(send(`use the key ${secret} please`)));
  assert.equal(items[0][0], "task");
  const first = items[0][1] as Task;
  const record = t.store.loadRun(first.id);
  assert.equal(first.contextId, record.contextId);
  const reins = (first.metadata as { reins: Record<string, unknown> }).reins;
  assert.equal(reins.sessionId, record.sessionId);
  assert.equal(reins.driver, record.driver);
  const prompt = first.history[0].parts.map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");
  assert.equal(prompt, record.goal);
  assert.ok(!prompt.includes(secret), "the prompt is redacted in the Task as in run.json");
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: first.id }));
  assert.deepEqual(got.history[0], first.history[0]);
});
