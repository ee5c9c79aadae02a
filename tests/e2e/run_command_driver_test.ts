// `reins run --driver command` end to end, under the binary's sandbox flags.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const AGENTS = new URL("../fixtures/agents/", import.meta.url).pathname;

async function showJson(home: string, run: string) {
  const shown = await reins(["show", run, "--json"], { home });
  assert.equal(shown.code, 0, shown.stderr);
  return JSON.parse(shown.stdout);
}

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is as good as gone
  } catch {
    return false;
  }
}

Deno.test("reins run --driver command records protocol lines as events and plain lines as the answer", async () => {
  await using dir = await tempDir();
  const result = await reins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      `sh ${AGENTS}protocol.sh`,
      "--context",
      "t-1",
      "--json",
      "count the TODOs",
    ],
    { home: dir.path, allowRun: ["sh"] },
  );
  assert.equal(result.code, 0, result.stderr);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "completed");
  assert.equal(summary.contextId, "t-1");
  assert.equal(summary.result, `thinking about: count the TODOs\ncontext=t-1 native=none`);
  assert.equal(summary.costUsd, 0.0021);
  assert.match(result.stderr, /1 problem was kept with the run .*: reins show /);

  const shown = await showJson(dir.path, summary.runId);
  const types = shown.events.map((e: { type: string }) => e.type);
  assert.deepEqual(types, [
    "run.started",
    "message.completed",
    "message.delta",
    "session.linked",
    "tool.started",
    "tool.completed",
    "usage.updated",
    "problem",
    "message.delta",
    "message.completed",
    "completed",
  ]);
  assert.deepEqual(
    shown.events.map((e: { sequence: number }) => e.sequence),
    types.map((_: unknown, i: number) => i),
  );
  assert.deepEqual(shown.events[1].payload, { role: "user", text: "count the TODOs" });
  const problem = shown.events[7].payload;
  assert.match(problem.reason, /expected number, received string at payload.iteration/);
  assert.equal(shown.record.nativeSessionId, `native-${summary.sessionId}`);

  // The next turn on the context resumes the session and hands back the native id.
  const second = await reins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      `sh ${AGENTS}protocol.sh`,
      "--context",
      "t-1",
      "--json",
      "again",
    ],
    { home: dir.path, allowRun: ["sh"] },
  );
  const next = JSON.parse(second.stdout);
  assert.equal(next.sessionId, summary.sessionId);
  assert.match(next.result, new RegExp(`native=native-${summary.sessionId}$`));
  const contexts = JSON.parse((await reins(["contexts", "--json"], { home: dir.path })).stdout);
  assert.equal(contexts.length, 1);
  assert.equal(contexts[0].session_id, summary.sessionId);
  assert.equal(contexts[0].native_session_id, `native-${summary.sessionId}`);

  // Forgetting the context starts a fresh session next time.
  const forgot = await reins(["forget", "t-1"], { home: dir.path });
  assert.equal(forgot.code, 0);
  assert.match(
    forgot.stderr,
    new RegExp(`forgot context 't-1' \\(session ${summary.sessionId}\\)`),
  );
  const third = JSON.parse(
    (await reins(
      [
        "run",
        "--driver",
        "command",
        "--exec",
        `sh ${AGENTS}protocol.sh`,
        "--context",
        "t-1",
        "--json",
        "fresh",
      ],
      { home: dir.path, allowRun: ["sh"] },
    )).stdout,
  );
  assert.notEqual(third.sessionId, summary.sessionId);
  assert.match(third.result, /native=none$/);
});

Deno.test("reins run --driver command fails with the exit code and the stderr tail", async () => {
  await using dir = await tempDir();
  const result = await reins(
    ["run", "--driver", "command", "--exec", `sh ${AGENTS}fail.sh`, "--json", "go"],
    { home: dir.path, allowRun: ["sh"] },
  );
  assert.equal(result.code, 1);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "failed");
  assert.equal(
    summary.reason,
    "sh exited with code 3: warming up ⏎ error: the model refused the key",
  );
  const shown = await showJson(dir.path, "last");
  assert.equal(shown.record.status, "failed");
  assert.equal(shown.record.exitCode, 3);
  assert.equal(shown.record.terminalReason, summary.reason);
});

Deno.test("reins run reads the prompt from stdin with -", async () => {
  await using dir = await tempDir();
  const result = await reins(
    ["run", "--driver", "command", "--exec", `sh ${AGENTS}protocol.sh`, "-"],
    { home: dir.path, allowRun: ["sh"], stdin: "from stdin\n" },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^thinking about: from stdin\n/);
});

Deno.test("reins run: SIGINT mid-run forwards to the child, ends the run interrupted, and the child is gone", async () => {
  await using dir = await tempDir();
  const pidFile = `${dir.path}/agent.pid`;
  const child = spawnReins(
    ["run", "--driver", "command", "--exec", `sh ${AGENTS}slow.sh`, "--json", "work"],
    { home: dir.path, allowRun: ["sh"], env: { PID_FILE: pidFile } },
  );
  while (!(await Deno.stat(pidFile).catch(() => null))) await new Promise((r) => setTimeout(r, 50));
  const agentPid = Number((await Deno.readTextFile(pidFile)).trim());
  child.kill("SIGINT");
  const out = await child.output();
  assert.equal(out.code, 1);
  const summary = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal(summary.status, "interrupted");
  assert.match(summary.reason, /stopped by SIGINT|SIGINT/);
  assert.equal(alive(agentPid), false);
  const shown = await showJson(dir.path, summary.runId);
  assert.equal(shown.record.status, "interrupted");
  assert.equal(shown.events.at(-1).type, "status.changed");
});

Deno.test("reins run: a second SIGINT kills a child that ignores the first at once", async () => {
  await using dir = await tempDir();
  const pidFile = `${dir.path}/agent.pid`;
  const child = spawnReins(
    ["run", "--driver", "command", "--exec", `sh ${AGENTS}stubborn.sh`, "--json", "work"],
    { home: dir.path, allowRun: ["sh"], env: { PID_FILE: pidFile } },
  );
  while (!(await Deno.stat(pidFile).catch(() => null))) await new Promise((r) => setTimeout(r, 50));
  const agentPid = Number((await Deno.readTextFile(pidFile)).trim());
  const started = Date.now();
  child.kill("SIGINT");
  await new Promise((r) => setTimeout(r, 300));
  child.kill("SIGINT");
  const out = await child.output();
  assert.ok(Date.now() - started < 4_000, "did not wait for the 5 s grace period");
  assert.equal(JSON.parse(new TextDecoder().decode(out.stdout)).status, "interrupted");
  assert.equal(alive(agentPid), false);
});

Deno.test("reins run --timeout fails the run with 'timed out after N s'", async () => {
  await using dir = await tempDir();
  const result = await reins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      `sh ${AGENTS}slow.sh`,
      "--timeout",
      "1",
      "--json",
      "work",
    ],
    { home: dir.path, allowRun: ["sh"], env: { PID_FILE: `${dir.path}/agent.pid` } },
  );
  assert.equal(result.code, 1);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "failed");
  assert.match(summary.reason, /^timed out after 1 s: stopped by a signal; sh /);
});

Deno.test("reins run --context NUL.txt exits 2 with one line naming the id, and records nothing", async () => {
  // regression: a Windows device name was a valid context id
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const result = await reins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      `sh ${AGENTS}protocol.sh`,
      "--context",
      "NUL.txt",
      "hi",
    ],
    { home, cwd: dir.path, allowRun: ["sh"] },
  );
  assert.equal(result.code, 2, result.stderr);
  assert.equal(
    result.stderr.split("\n")[0],
    'reins: Cannot use "NUL.txt" as a context id: "NUL" is a device name on Windows',
  );
  assert.deepEqual([...Deno.readDirSync(dir.path)], [], "nothing was created");
});

for (const bad of ["../x", ".hidden", "a/b", "", "x".repeat(200)]) {
  Deno.test(`reins run --context ${JSON.stringify(bad.slice(0, 12))} exits 2 and writes no file anywhere`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const result = await reins(
      ["run", "--driver", "command", "--exec", `sh ${AGENTS}protocol.sh`, "--context", bad, "hi"],
      { home, cwd: dir.path, allowRun: ["sh"] },
    );
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^reins: Cannot use ".*" as a context id: /);
    assert.deepEqual(
      [...Deno.readDirSync(dir.path)],
      [],
      "nothing was created, not even the data root",
    );
  });
}

Deno.test("reins run with an unknown driver or a missing prompt is a usage error", async () => {
  await using dir = await tempDir();
  const a = await reins(["run", "--driver", "claud", "hi"], { home: dir.path });
  assert.equal(a.code, 2);
  assert.equal(
    a.stderr,
    'reins: --driver takes loop, claude, codex, gemini, opencode or command: got "claud"\n' +
      "hint: did you mean --driver claude?\n",
  );
  const b = await reins(["run"], { home: dir.path });
  assert.equal(b.code, 2);
  assert.match(b.stderr, /reins run needs a prompt/);
});

Deno.test("reins run --attach copies a file into the run and a program can declare one", async () => {
  await using dir = await tempDir();
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  await Deno.writeTextFile(`${work}/call.wav`, "RIFF fake audio");
  await Deno.writeTextFile(
    `${work}/agent.sh`,
    `echo 'answer'\necho 'summary' > summary.json\necho '{"type":"attachment.added","payload":{"path":"summary.json"}}'\n`,
  );
  const result = await reins(
    ["run", "--driver", "command", "--exec", "sh agent.sh", "--attach", "call.wav", "--json", "go"],
    { home: `${dir.path}/home`, cwd: work, allowRun: ["sh"] },
  );
  assert.equal(result.code, 0, result.stderr);
  const { runId } = JSON.parse(result.stdout);
  const shown = await showJson(`${dir.path}/home`, runId);
  const added = shown.events.filter((e: { type: string }) => e.type === "attachment.added")
    .map((e: { payload: { name: string; bytes: number; sha256: string } }) => e.payload);
  assert.deepEqual(added.map((a: { name: string }) => a.name), ["call.wav", "summary.json"]);
  assert.equal(added[0].bytes, 15);
  const copy = `${dir.path}/home/runs/${runId}/${added[0].path}`;
  assert.equal(await Deno.readTextFile(copy), "RIFF fake audio");
  assert.equal((await Deno.stat(copy)).mode! & 0o777, 0o600);

  const missing = await reins([
    "run",
    "--driver",
    "command",
    "--exec",
    "sh agent.sh",
    "--attach",
    "nope.wav",
    "go",
  ], {
    home: `${dir.path}/home`,
    cwd: work,
    allowRun: ["sh"],
  });
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /^reins: Cannot attach "nope.wav": no such file/);
});

// regression: `../x`, absolute paths and links out of --cwd were copied in (and then uploaded).
Deno.test("reins run refuses an agent's attachment outside --cwd with a problem event naming it", async () => {
  await using dir = await tempDir();
  const work = `${dir.path}/work`;
  const home = `${dir.path}/home`;
  await Deno.mkdir(work);
  await Deno.writeTextFile(`${dir.path}/outside.txt`, "not the agent's to hand over");
  await Deno.writeTextFile(`${work}/inside.txt`, "a product of the run");
  await Deno.symlink("../outside.txt", `${work}/link.txt`);
  const declare = (path: string) =>
    `echo '${JSON.stringify({ type: "attachment.added", payload: { path } })}'`;
  await Deno.writeTextFile(
    `${work}/agent.sh`,
    [
      declare("../outside.txt"),
      declare(`${dir.path}/outside.txt`),
      declare("link.txt"),
      declare("inside.txt"),
      "echo done",
    ].join("\n") + "\n",
  );
  const result = await reins(
    ["run", "--driver", "command", "--exec", "sh agent.sh", "--json", "go"],
    // The sandbox could read the outside file: what refuses it is reins's own rule.
    { home, cwd: work, allowRun: ["sh"], allowPaths: [dir.path] },
  );
  assert.equal(result.code, 0, result.stderr);
  const { runId } = JSON.parse(result.stdout);
  const shown = await showJson(home, runId);
  const added = shown.events.filter((e: { type: string }) => e.type === "attachment.added");
  assert.deepEqual(added.map((e: { payload: { name: string } }) => e.payload.name), ["inside.txt"]);
  const problems = shown.events.filter((e: { type: string }) => e.type === "problem")
    .map((e: { payload: { reason: string; text: string } }) => e.payload);
  assert.deepEqual(problems.map((p: { text: string }) => p.text), [
    `${work}/../outside.txt`.replace(/\/work\/\.\.\//, "/"),
    `${dir.path}/outside.txt`,
    `${work}/link.txt`,
  ]);
  for (const problem of problems) {
    assert.match(
      problem.reason,
      /^a declared attachment was refused: ".*" (is outside|leads to ".*outside\.txt", outside) the working directory/,
    );
    assert.match(problem.reason, /nothing was copied$/);
  }
  const copies = [...Deno.readDirSync(`${home}/runs/${runId}/attachments`)].map((e) => e.name);
  assert.deepEqual(copies, ["inside.txt"]);
});
