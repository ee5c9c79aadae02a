// What the A2A server refuses, and with which answer: the bearer token (401, no details), the
// A2A-Version (1.0 only; none means 0.3, answered -32009), methods it does not serve, bad
// params, unknown tasks, more turns than --max-turns. Raw JSON-RPC over fetch, so that requests
// the official client would never send can be sent.
import assert from "node:assert/strict";
import { commandAgent, eventually, FIXTURES, startTestServer, TOKEN } from "./_server.ts";

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra },
});

function errorOf(body: Record<string, unknown>) {
  return body.error as { code: number; message: string; data?: Record<string, unknown>[] };
}

Deno.test("every request but the card needs the bearer token: 401 with no details otherwise", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const base = `http://127.0.0.1:${t.server.addr.port}`;
  const card = await fetch(`${base}/.well-known/agent-card.json`);
  assert.equal(card.status, 200);
  assert.equal((await card.json()).supportedInterfaces[0].protocolVersion, "1.0");
  for (
    const authorization of [undefined, "Bearer wrong-token-0123456789", `Basic ${TOKEN}`, TOKEN]
  ) {
    const response = await fetch(`${base}/`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "a2a-version": "1.0",
        ...(authorization ? { authorization } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    });
    assert.equal(response.status, 401, String(authorization));
    assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="reins"');
    assert.equal(await response.text(), "");
  }
  const ok = await t.rpc("ListTasks", {}, { authorization: `bearer   ${TOKEN}` });
  assert.equal(ok.status, 200, "the scheme is case-insensitive");
  assert.deepEqual(ok.body.result, { tasks: [], nextPageToken: "", pageSize: 50, totalSize: 0 });
});

Deno.test("a request without A2A-Version is A2A 0.3, which is answered VersionNotSupported (-32009)", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const none = await t.rpc("message/send", message("hi"), { "a2a-version": "" });
  assert.equal(errorOf(none.body).code, -32009);
  assert.match(errorOf(none.body).message, /no A2A-Version header, which means A2A 0\.3/);
  const old = await t.rpc("GetTask", { id: "x" }, { "a2a-version": "0.3" });
  assert.equal(errorOf(old.body).code, -32009);
  const future = await t.rpc("GetTask", { id: "x" }, { "a2a-version": "2.0" });
  assert.equal(errorOf(future.body).code, -32009);
  assert.deepEqual(errorOf(future.body).data, [{
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    reason: "VERSION_NOT_SUPPORTED",
    domain: "a2a-protocol.org",
    metadata: { supportedVersions: "1.0" },
  }]);
  const base = `http://127.0.0.1:${t.server.addr.port}`;
  const byQuery = await fetch(`${base}/?A2A-Version=1.0`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
  });
  assert.equal(errorOf(await byQuery.json()).code, -32001, "the version may come as a parameter");
});

Deno.test("methods reins does not serve have their spec codes", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const cases: [string, unknown, number][] = [
    ["tasks/get", { id: "x" }, -32601],
    ["NoSuchMethod", {}, -32601],
    ["CreateTaskPushNotificationConfig", { taskId: "x", url: "https://x" }, -32003],
    ["GetTaskPushNotificationConfig", { taskId: "x", id: "y" }, -32003],
    ["ListTaskPushNotificationConfigs", { taskId: "x" }, -32003],
    ["DeleteTaskPushNotificationConfig", { taskId: "x", id: "y" }, -32003],
    ["GetExtendedAgentCard", {}, -32004],
  ];
  for (const [method, params, code] of cases) {
    const { body } = await t.rpc(method, params);
    assert.equal(errorOf(body).code, code, method);
    assert.equal(body.id, 1);
  }
});

Deno.test("envelopes that are not one JSON-RPC 2.0 request get -32700 or -32600 over HTTP, the id when it can be told", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const post = async (body: BodyInit) => {
    const response = await fetch(`http://127.0.0.1:${t.server.addr.port}/`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${TOKEN}`,
        "a2a-version": "1.0",
      },
      body,
    });
    assert.equal(response.status, 200);
    return await response.json();
  };
  const cases: [BodyInit, number, unknown][] = [
    ['{"jsonrpc":"2.0","id":1,"method":', -32700, null],
    [new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), -32700, null],
    ['[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]', -32600, null],
    ['{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}', -32600, null],
    ['{"jsonrpc":"1.0","id":7,"method":"GetTask","params":{"id":"x"}}', -32600, 7],
    ['{"jsonrpc":"2.0","id":"a","method":42}', -32600, "a"],
  ];
  for (const [body, code, id] of cases) {
    const answer = await post(body);
    assert.equal(answer.jsonrpc, "2.0");
    assert.equal(answer.error?.code, code, `${body}: ${JSON.stringify(answer)}`);
    assert.equal(answer.id, id, String(body));
  }
});

Deno.test("bad params are -32602 naming the field; files are ContentTypeNotSupported (-32005)", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const cases: [string, unknown, number, RegExp][] = [
    ["GetTask", {}, -32602, /^Invalid parameters: id: is required$/],
    ["GetTask", { id: "x", historyLength: -1 }, -32602, /historyLength/],
    [
      "SendMessage",
      { message: { messageId: "m", role: "ROLE_USER", parts: [] } },
      -32602,
      /message\.parts/,
    ],
    [
      "SendMessage",
      { message: { messageId: "m", parts: [{ text: "x" }] } },
      -32602,
      /message\.role/,
    ],
    ["SendMessage", message("x", { role: "ROLE_AGENT" }), -32602, /ROLE_USER/],
    ["SendMessage", message("x", { contextId: "../etc" }), -32602, /message\.contextId/],
    [
      "SendMessage",
      { message: { messageId: "m", role: 1, parts: [{ text: "   " }] } },
      -32602,
      /no text/,
    ],
    [
      "SendMessage",
      { message: { messageId: "m", role: 1, parts: [{ raw: "aGk=", mediaType: "image/png" }] } },
      -32005,
      /file \(image\/png\)/,
    ],
    [
      "SendMessage",
      { ...message("x"), configuration: { acceptedOutputModes: ["image/png"] } },
      -32005,
      /acceptedOutputModes/,
    ],
    ["ListTasks", { pageSize: 0 }, -32602, /pageSize/],
    ["ListTasks", { pageSize: 101 }, -32602, /pageSize/],
    ["ListTasks", { pageToken: "not a token" }, -32602, /pageToken/],
    ["ListTasks", { status: "TASK_STATE_RUNNING" }, -32602, /status/],
  ];
  for (const [method, params, code, pattern] of cases) {
    const { body } = await t.rpc(method, params);
    const error = errorOf(body);
    assert.equal(error.code, code, `${method} ${JSON.stringify(params)}: ${error.message}`);
    assert.match(error.message, pattern);
  }
  const { body } = await t.rpc("GetTask", {});
  assert.deepEqual(errorOf(body).data, [{
    "@type": "type.googleapis.com/google.rpc.BadRequest",
    fieldViolations: [{ field: "id", description: "is required" }],
  }]);
});

Deno.test("an unknown task, or a run that A2A did not start, is TaskNotFound (-32001)", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const writer = t.store.createRun({
    sessionId: "s",
    contextId: null,
    harness: "command",
    driver: "command",
    trigger: "cli",
    cwd: t.work,
    goal: "a run of the command line",
  });
  writer.close();
  for (const id of ["0190ffff-0000-7000-8000-000000000000", writer.runId, "../../etc/passwd"]) {
    for (const method of ["GetTask", "CancelTask", "SubscribeToTask"]) {
      const { body } = await t.rpc(method, { id });
      assert.equal(errorOf(body).code, -32001, `${method} ${id}`);
    }
    const { body } = await t.rpc("SendMessage", message("x", { taskId: id }));
    assert.equal(errorOf(body).code, -32001, `SendMessage to ${id}`);
  }
  const listed = await t.rpc("ListTasks", {});
  assert.deepEqual((listed.body.result as { tasks: unknown[] }).tasks, []);
});

Deno.test("ListTasks pages newest first with a cursor; the last page's nextPageToken is empty", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const ids: string[] = [];
  for (const text of ["one", "two", "three"]) {
    const { body } = await t.rpc("SendMessage", message(text, { contextId: "paged" }));
    ids.push((body.result as { task: { id: string } }).task.id);
  }
  await t.rpc("SendMessage", message("elsewhere"));
  type Page = {
    tasks: { id: string; artifacts?: unknown; history?: unknown }[];
    nextPageToken: string;
    totalSize: number;
  };
  const first = (await t.rpc("ListTasks", { contextId: "paged", pageSize: 2 })).body.result as Page;
  assert.deepEqual(first.tasks.map((x) => x.id), [ids[2], ids[1]]);
  assert.equal(first.totalSize, 3);
  assert.notEqual(first.nextPageToken, "");
  assert.ok(first.tasks.every((x) => !("artifacts" in x) && !("history" in x)));
  const second = (await t.rpc("ListTasks", {
    contextId: "paged",
    pageSize: 2,
    pageToken: first.nextPageToken,
    includeArtifacts: true,
    historyLength: 1,
  })).body.result as Page;
  assert.deepEqual(second.tasks.map((x) => x.id), [ids[0]]);
  assert.equal(second.nextPageToken, "");
  assert.ok(second.tasks[0].artifacts);
  assert.equal((second.tasks[0].history as unknown[]).length, 1);
  const all = (await t.rpc("ListTasks", { status: "TASK_STATE_COMPLETED" })).body.result as Page;
  assert.equal(all.totalSize, 4);
  const none = (await t.rpc("ListTasks", { status: "TASK_STATE_WORKING" })).body.result as Page;
  assert.equal(none.totalSize, 0);
});

Deno.test("beyond --max-turns a new message is refused with a clear error; the running turn goes on", async () => {
  await using t = await startTestServer({
    agent: commandAgent(`sh ${FIXTURES}sleeper.sh`),
    server: { maxTurns: 1, cancelGraceMs: 1_000 },
  });
  // Should the test fail before its turns are stopped, their children do not outlive it.
  const start = async (text: string) => {
    await Deno.remove(`${t.work}/child.pid`).catch(() => {});
    const { body } = await t.rpc("SendMessage", {
      ...message(text),
      configuration: { returnImmediately: true },
    });
    assert.ok(body.result, JSON.stringify(body));
    const pid = Number(
      await eventually(
        () => Deno.readTextFile(`${t.work}/child.pid`).catch(() => ""),
        "the agent's child",
      ),
    );
    t.defer(() => {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone with its group */ }
    });
    return body;
  };
  const first = await start("work");
  const task = (first.result as { task: { id: string; status: { state: string } } }).task;
  assert.equal(task.status.state, "TASK_STATE_WORKING");
  const refused = await t.rpc("SendMessage", message("more work"));
  const error = errorOf(refused.body);
  assert.equal(error.code, -32603);
  assert.match(error.message, /as many turns as it may at once \(1, --max-turns\)/);
  assert.equal(error.data?.[0].reason, "TOO_MANY_TURNS");
  const canceled = await t.rpc("CancelTask", { id: task.id });
  assert.equal(
    (canceled.body.result as { status: { state: string } }).status.state,
    "TASK_STATE_CANCELED",
  );
  const again = await start("now there is room");
  assert.ok(again.result, JSON.stringify(again));
  await t.rpc("CancelTask", { id: (again.result as { task: { id: string } }).task.id });
});

Deno.test("HTTP-level refusals: unknown path 404, wrong method 405, not JSON 415", async () => {
  await using t = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}talker.sh`) });
  const base = `http://127.0.0.1:${t.server.addr.port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  assert.equal(await fetch(`${base}/nowhere`, { headers: auth }).then(drain), 404);
  assert.equal(await fetch(`${base}/`, { headers: auth }).then(drain), 405);
  assert.equal(
    await fetch(`${base}/.well-known/agent-card.json`, { method: "POST" }).then(drain),
    405,
  );
  assert.equal(
    await fetch(`${base}/`, {
      method: "POST",
      headers: { ...auth, "content-type": "text/plain" },
      body: "{}",
    }).then(drain),
    415,
  );
});

async function drain(response: Response): Promise<number> {
  await response.body?.cancel();
  return response.status;
}

Deno.test("a turn that cannot start (a missing mock model) is -32603 saying why, and no task is made", async () => {
  await using t = await startTestServer({
    agent: (dir) => ({ kind: "loop", model: `mock:${dir}/missing.json`, baseUrl: null }),
  });
  const { body } = await t.rpc("SendMessage", message("hi"));
  const error = errorOf(body);
  assert.equal(error.code, -32603);
  assert.match(
    error.message,
    /^The task could not start: Cannot read the mock model file .*missing\.json: no such file$/,
  );
  const listed = await t.rpc("ListTasks", {});
  assert.deepEqual((listed.body.result as { tasks: unknown[] }).tasks, []);
  assert.equal(t.server.service.activeTurns, 0, "its slot is free again");
});

Deno.test("a task another server runs on the same data root is visible, but cannot be streamed or canceled here", async () => {
  await using a = await startTestServer({ agent: commandAgent(`sh ${FIXTURES}sleeper.sh`) });
  await using b = await startTestServer({
    dir: a.dir,
    agent: commandAgent(`sh ${FIXTURES}sleeper.sh`),
    server: { cancelGraceMs: 1_000 },
  });
  const { body } = await a.rpc("SendMessage", {
    ...message("work"),
    configuration: { returnImmediately: true },
  });
  const taskId = (body.result as { task: { id: string } }).task.id;
  const pid = Number(
    await eventually(
      () => Deno.readTextFile(`${a.work}/child.pid`).catch(() => ""),
      "the agent's child",
    ),
  );
  a.defer(() => {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone with its group */ }
  });
  const got = await b.rpc("GetTask", { id: taskId });
  assert.equal(
    (got.body.result as { status: { state: string } }).status.state,
    "TASK_STATE_WORKING",
  );
  const subscribe = await b.rpc("SubscribeToTask", { id: taskId });
  assert.equal(errorOf(subscribe.body).code, -32004);
  assert.match(errorOf(subscribe.body).message, /not run by this server/);
  const cancel = await b.rpc("CancelTask", { id: taskId });
  assert.equal(errorOf(cancel.body).code, -32002);
  const canceled = await a.rpc("CancelTask", { id: taskId });
  assert.equal(
    (canceled.body.result as { status: { state: string } }).status.state,
    "TASK_STATE_CANCELED",
  );
});
