// `reins serve` end to end, under the binary's sandbox flags: it prints its card's URL, makes its
// token (0600) in the data root, serves the official client, refuses a public address without a
// token file, survives a restart, and stops gracefully on SIGTERM with every turn recorded.
import assert from "node:assert/strict";
import { GetTaskRequest, SendMessageRequest, type Task, TaskState } from "@a2a-js/sdk";
import { officialClient } from "../serve/_server.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const FIXTURES = new URL("../serve/fixtures/", import.meta.url).pathname;

const send = (text: string, configuration = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] },
    configuration,
  });

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

interface Served {
  child: Deno.ChildProcess;
  cardUrl: string;
  base: string;
  stderr: () => Promise<string>;
}

/** Starts `reins serve ARGS` and waits for the card URL on its first stdout line. */
async function serve(home: string, args: string[]): Promise<Served> {
  const child = spawnReins(["serve", "--port", "0", ...args], {
    home,
    allowPaths: [FIXTURES],
    // The fixture agents are shell scripts.
    allowRun: ["sh"],
  });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  reader.releaseLock();
  const stderr = new Response(child.stderr).text();
  const cardUrl = out.trim();
  assert.match(
    cardUrl,
    /^http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json$/,
    await (
      out === "" ? stderr : Promise.resolve(out)
    ),
  );
  return { child, cardUrl, base: new URL("/", cardUrl).href, stderr: () => stderr };
}

async function stop(served: Served): Promise<{ code: number; stderr: string }> {
  served.child.kill("SIGTERM");
  const [status, stderr] = await Promise.all([served.child.status, served.stderr()]);
  await served.child.stdout.cancel().catch(() => {});
  return { code: status.code, stderr };
}

Deno.test("reins serve prints its card URL, makes its token 0600, serves, and exits 0 on SIGTERM", async () => {
  await using dir = await tempDir();
  const served = await serve(dir.path, [
    "--driver",
    "command",
    "--exec",
    `sh ${FIXTURES}talker.sh`,
  ]);
  const tokenFile = `${dir.path}/serve.token`;
  assert.equal((await Deno.stat(tokenFile)).mode! & 0o777, 0o600);
  const token = (await Deno.readTextFile(tokenFile)).trim();
  assert.ok(token.length >= 32);
  const card = await (await fetch(served.cardUrl)).json();
  assert.equal(card.supportedInterfaces[0].url, served.base);
  const client = await officialClient(served.base, token);
  const task = await client.sendMessage(send("hello")) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const { code, stderr } = await stop(served);
  assert.equal(code, 0, stderr);
  assert.match(stderr, /bearer token in .*serve\.token \(new\)/);
  assert.match(
    stderr,
    new RegExp(`reins serve: \\S+Z task ${task.id} started on context ${task.contextId}\n`),
  );
  assert.match(stderr, new RegExp(`reins serve: \\S+Z task ${task.id} completed\n`));
  assert.doesNotMatch(stderr, new RegExp(token), "the token is never printed");
  const shown = await reins(["show", task.id, "--json"], { home: dir.path });
  assert.equal(JSON.parse(shown.stdout).record.trigger, "a2a");

  // A restart keeps the token and answers for the task it ran before.
  const again = await serve(dir.path, ["--driver", "command", "--exec", `sh ${FIXTURES}talker.sh`]);
  assert.equal((await Deno.readTextFile(tokenFile)).trim(), token);
  const got = await (await officialClient(again.base, token)).getTask(
    GetTaskRequest.fromJSON({ id: task.id }),
  );
  assert.deepEqual(got, task);
  assert.equal((await stop(again)).code, 0);
});

Deno.test("reins serve --host 0.0.0.0 without --token-file refuses to start", async () => {
  await using dir = await tempDir();
  const result = await reins(["serve", "--host", "0.0.0.0"], { home: dir.path });
  assert.equal(result.code, 2);
  assert.match(
    result.stderr,
    /will not listen on 0\.0\.0\.0 with a generated token: give one with --token-file/,
  );
  assert.equal(await Deno.stat(`${dir.path}/serve.token`).catch(() => null), null);
});

Deno.test("reins serve --token-file uses that token, and refuses a short one", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/token`;
  await Deno.writeTextFile(file, "short\n");
  const refused = await reins(["serve", "--token-file", file], { home: dir.path });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /is 5 characters long: at least 16 are needed/);
  await Deno.writeTextFile(file, "a-token-of-my-own-0123456789\n");
  const served = await serve(dir.path, ["--token-file", file]);
  const wrong = await fetch(served.base, { method: "POST", body: "{}" });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  const client = await officialClient(served.base, "a-token-of-my-own-0123456789");
  const task = await client.sendMessage(send("hi")) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal((await stop(served)).code, 0);
});

// regression: a --token-file of mode 0666 or 0644 was used without a word
Deno.test("reins serve --token-file refuses a file others may write and warns of one they may read", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/token`;
  await Deno.writeTextFile(file, "a-token-of-my-own-0123456789\n");
  for (const mode of [0o666, 0o620]) {
    await Deno.chmod(file, mode);
    const refused = await reins(["serve", "--token-file", file], { home: dir.path });
    assert.equal(refused.code, 6, refused.stderr);
    assert.match(
      refused.stderr,
      /Refusing ".*\/token": it is writable by (group and others|its group)/,
    );
  }
  await Deno.chmod(file, 0o644);
  const served = await serve(dir.path, ["--token-file", file]);
  const stopped = await stop(served);
  assert.equal(stopped.code, 0);
  assert.match(
    stopped.stderr,
    /the token file .*\/token may be read by group and others \(mode 0644\)/,
  );
  await Deno.chmod(file, 0o600);
  const quiet = await stop(await serve(dir.path, ["--token-file", file]));
  assert.doesNotMatch(quiet.stderr, /may be read by/);
});

// regression: serve printed its card URL before it handled signals, so a SIGTERM sent as soon as
// the URL was read ended it with 143 and no graceful stop
Deno.test("reins serve stopped the moment its card URL is read exits 0 after its graceful stop", async () => {
  await using dir = await tempDir();
  for (let i = 0; i < 8; i++) {
    const { code, stderr } = await stop(await serve(dir.path, []));
    assert.equal(code, 0, `start ${i + 1}: ${stderr}`);
    assert.match(stderr, /reins serve: stopped; every turn is recorded/);
  }
});

Deno.test("SIGTERM lets a running turn finish within --grace; past it the turn is stopped and recorded", async () => {
  await using dir = await tempDir();
  const served = await serve(dir.path, [
    "--driver",
    "command",
    "--exec",
    `sh ${FIXTURES}sleeper.sh`,
    "--grace",
    "1",
    "--cwd",
    dir.path,
  ]);
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  const client = await officialClient(served.base, token);
  const task = await client.sendMessage(send("work", { returnImmediately: true })) as Task;
  let child = 0;
  for (let i = 0; i < 200 && !child; i++) {
    child = Number(await Deno.readTextFile(`${dir.path}/child.pid`).catch(() => "0"));
    await new Promise((r) => setTimeout(r, 25));
  }
  try {
    const started = Date.now();
    const { code, stderr } = await stop(served);
    assert.equal(code, 0, stderr);
    assert.ok(Date.now() - started >= 1000, "the turn had its grace");
    assert.match(stderr, /no new tasks; running turns get 1 s to finish/);
    const shown = JSON.parse((await reins(["show", task.id, "--json"], { home: dir.path })).stdout);
    assert.equal(shown.record.status, "interrupted");
    assert.match(shown.record.terminalReason, /stopped/);
    assert.equal(alive(child), false, "the agent's process group went with it");
  } finally {
    try {
      Deno.kill(child, "SIGKILL");
    } catch { /* gone with its process group */ }
  }
});

Deno.test("SIGTERM lets a turn that finishes within --grace complete, and its blocking send is answered", async () => {
  await using dir = await tempDir();
  const served = await serve(dir.path, [
    "--driver",
    "command",
    "--exec",
    `sh ${FIXTURES}brief.sh`,
    "--grace",
    "20",
    "--cwd",
    dir.path,
  ]);
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  const client = await officialClient(served.base, token);
  const sent = client.sendMessage(send("work"));
  for (let i = 0; i < 200; i++) {
    if (await Deno.stat(`${dir.path}/started`).catch(() => null)) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  served.child.kill("SIGTERM");
  const task = await sent as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const { code, stderr } = await stop(served);
  assert.equal(code, 0, stderr);
  const shown = JSON.parse((await reins(["show", task.id, "--json"], { home: dir.path })).stdout);
  assert.equal(shown.record.status, "completed");
});

Deno.test("after a crash of reins serve mid-turn, the restarted server answers GetTask for the interrupted run", async () => {
  await using dir = await tempDir();
  const args = ["--driver", "command", "--exec", `sh ${FIXTURES}sleeper.sh`, "--cwd", dir.path];
  const served = await serve(dir.path, args);
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  const task = await (await officialClient(served.base, token)).sendMessage(
    send("work", { returnImmediately: true }),
  ) as Task;
  let child = 0;
  for (let i = 0; i < 200 && !child; i++) {
    child = Number(await Deno.readTextFile(`${dir.path}/child.pid`).catch(() => "0"));
    await new Promise((r) => setTimeout(r, 25));
  }
  served.child.kill("SIGKILL");
  await served.child.status;
  await served.child.stdout.cancel().catch(() => {});
  await served.stderr();
  try {
    Deno.kill(child, "SIGKILL");
  } catch { /* gone */ }
  const again = await serve(dir.path, args);
  const got = await (await officialClient(again.base, token)).getTask(
    GetTaskRequest.fromJSON({ id: task.id }),
  );
  assert.equal(got.status?.state, TaskState.TASK_STATE_FAILED);
  const said = got.status?.message?.parts.map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");
  assert.match(said ?? "", /^The run was interrupted: /);
  assert.equal((await stop(again)).code, 0);
});

Deno.test("reins serve --driver command --exec-stdin events: the program's question is input-required, the client's answer reaches its stdin", async () => {
  await using dir = await tempDir();
  const served = await serve(dir.path, [
    "--driver",
    "command",
    "--exec",
    `sh ${FIXTURES}asker.sh`,
    "--exec-stdin",
    "events",
  ]);
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  const client = await officialClient(served.base, token);
  const asked = await client.sendMessage(send("pick one")) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const done = await client.sendMessage(
    SendMessageRequest.fromJSON({
      message: {
        messageId: crypto.randomUUID(),
        role: "ROLE_USER",
        taskId: asked.id,
        parts: [{ text: "notes.md" }],
      },
    }),
  ) as Task;
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const text = done.artifacts.flatMap((a) => a.parts).map((p) =>
    p.content?.$case === "text" ? p.content.value : ""
  ).join("");
  assert.equal(
    text,
    'told: {"type":"question.answered","payload":{"questionId":"q1","answer":"notes.md"}}\n',
  );
  assert.equal((await stop(served)).code, 0);
});

Deno.test("reins serve gives every turn reins run's turn flags: --timeout fails a turn that runs too long, --approve deny refuses a tool", async () => {
  await using dir = await tempDir();
  const timed = await serve(dir.path, [
    "--driver",
    "command",
    "--exec",
    `sh ${FIXTURES}sleeper.sh`,
    "--timeout",
    "1",
    "--cwd",
    dir.path,
  ]);
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  try {
    const late = await (await officialClient(timed.base, token)).sendMessage(send("work")) as Task;
    assert.equal(late.status?.state, TaskState.TASK_STATE_FAILED);
    const record = JSON.parse((await reins(["show", late.id, "--json"], { home: dir.path })).stdout)
      .record;
    assert.equal(record.status, "failed");
    assert.match(record.terminalReason, /^timed out after 1 s/);
  } finally {
    assert.equal((await stop(timed)).code, 0);
    const child = Number(await Deno.readTextFile(`${dir.path}/child.pid`).catch(() => "0"));
    if (child) assert.equal(alive(child), false, "the timed-out agent's group is gone");
  }

  const script = `${dir.path}/write.json`;
  await Deno.writeTextFile(
    script,
    JSON.stringify([
      { toolCalls: [{ id: "c1", name: "write_file", args: { path: "out.txt", content: "x" } }] },
      { text: "could not write it" },
    ]),
  );
  const denying = await serve(dir.path, [
    "--model",
    `mock:${script}`,
    "--approve",
    "deny",
    "--cwd",
    dir.path,
  ]);
  const task = await (await officialClient(denying.base, token)).sendMessage(send("write")) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(await Deno.stat(`${dir.path}/out.txt`).catch(() => null), null, "refused");
  const shown = JSON.parse((await reins(["show", task.id, "--json"], { home: dir.path })).stdout);
  const events = shown.events as { type: string; payload: Record<string, unknown> }[];
  const completed = events.find((e) => e.type === "tool.completed");
  assert.match(JSON.stringify(completed?.payload), /denied by policy/);
  assert.equal((await stop(denying)).code, 0);
});

// regression: the launcher's sandbox granted neither --token-file nor --host, so reins serve could
// neither read its token nor listen where it was told.
Deno.test("the reins launcher grants reins serve its --token-file and --host", async () => {
  await using dir = await tempDir();
  const root = await Deno.realPath(dir.path);
  for (const sub of ["home", "work", "tmp", "secrets"]) await Deno.mkdir(`${root}/${sub}`);
  const tokenFile = `${root}/secrets/token`;
  await Deno.writeTextFile(tokenFile, "a-token-outside-the-sandbox-0123\n");
  const repo = new URL("../../", import.meta.url).pathname;
  const child = new Deno.Command("sh", {
    args: [
      `${repo}scripts/reins.sh`,
      Deno.execPath(),
      "serve",
      "--port",
      "0",
      "--host",
      "0.0.0.0",
      "--token-file",
      tokenFile,
    ],
    cwd: `${root}/work`,
    clearEnv: true,
    env: {
      HOME: `${root}/home`,
      TMPDIR: `${root}/tmp`,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: Deno.env.get("DENO_DIR") ||
        `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`,
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  try {
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    reader.releaseLock();
    assert.match(
      out,
      /^http:\/\/0\.0\.0\.0:\d+\/\.well-known\/agent-card\.json\n/,
      await (out === "" ? stderr : Promise.resolve(out)),
    );
    const client = await officialClient(
      `http://127.0.0.1:${new URL(out.trim()).port}/`,
      "a-token-outside-the-sandbox-0123",
    );
    const task = await client.sendMessage(send("hi")) as Task;
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  } finally {
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0, await stderr);
    await child.stdout.cancel().catch(() => {});
  }
  assert.match(await stderr, /listening on every address: the card says http:\/\/0\.0\.0\.0:/);
});
