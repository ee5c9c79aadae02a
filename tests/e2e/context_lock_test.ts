// One session per context, whatever runs at once: `reins run --context X` processes started
// together take the context's turn lock one after the other (the others say whose run they wait
// for), and `--no-wait` refuses a busy context with exit 7. main.ts under the binary's sandbox.
import assert from "node:assert/strict";
import { openStore } from "../../lib/store/store.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

// regression: six turns started together on a new context ended in six sessions (issue 10 §3).
Deno.test("six reins run --context same started together make one session, one turn at a time", async () => {
  await using dir = await tempDir("reins-e2e-lock-");
  const home = `${dir.path}/home`;
  const log = `${dir.path}/spans.log`;
  const release = `${dir.path}/release`;
  // The first agent holds the context until the five others say they wait for it, however long
  // a busy machine takes to start them; the agents after it pass straight through.
  const exec = `sh -c 'echo start $REINS_RUN_ID >> ${log}; ` +
    `while [ ! -e ${release} ]; do sleep 0.05; done; echo end $REINS_RUN_ID >> ${log}'`;
  const children = Array.from(
    { length: 6 },
    () =>
      spawnReins(
        ["run", "--driver", "command", "--exec", exec, "--context", "same", "--json", "go"],
        { home, cwd: dir.path, allowRun: ["sh"] },
      ),
  );
  const stderrs = children.map(() => "");
  const reading = children.map(async (child, i) => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderrs[i] += chunk;
    }
  });
  const stdouts = children.map((child) => new Response(child.stdout).text());
  const deadline = Date.now() + 60_000;
  while (stderrs.filter((text) => /waiting for run/.test(text)).length < 5) {
    assert.ok(Date.now() < deadline, `five turns never said they wait:\n${stderrs.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  Deno.writeTextFileSync(release, "");
  const codes = await Promise.all(children.map(async (child) => (await child.status).code));
  await Promise.all(reading);
  for (const [i, code] of codes.entries()) assert.equal(code, 0, stderrs[i]);
  const summaries = (await Promise.all(stdouts)).map((text) => JSON.parse(text));
  assert.equal(new Set(summaries.map((s) => s.sessionId)).size, 1, "one session");
  assert.equal(new Set(summaries.map((s) => s.runId)).size, 6);
  using store = openStore(home);
  assert.equal(store.contexts.get("same")?.session_id, summaries[0].sessionId);
  // The agents never overlapped: each start is followed by its own end.
  const lines = Deno.readTextFileSync(log).trim().split("\n").map((line) => line.split(" "));
  assert.equal(lines.length, 12);
  for (let i = 0; i < lines.length; i += 2) {
    assert.deepEqual([lines[i][0], lines[i + 1][0], lines[i][1]], [
      "start",
      "end",
      lines[i + 1][1],
    ]);
  }
  // The five that waited said so, naming a run of this context or one being started.
  const runIds = new Set(summaries.map((s) => s.runId));
  for (const stderr of stderrs.filter((text) => /waiting for run/.test(text))) {
    const [, holder] = stderr.match(/waiting for run (.+?) to finish: it holds context 'same'/)!;
    assert.ok(holder === "(being started)" || runIds.has(holder), stderr);
  }
});

Deno.test("reins run --no-wait on a busy context exits 7 with context busy (run X), recording nothing", async () => {
  await using dir = await tempDir("reins-e2e-lock-");
  const home = `${dir.path}/home`;
  const started = `${dir.path}/started`;
  const release = `${dir.path}/release`;
  const holder = spawnReins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      // Held until the test says so, not for a fixed time: on a busy machine each reins below
      // can take over a second to start, and a timed holder let go before the last one ran.
      `sh -c 'touch ${started}; while [ ! -e ${release} ]; do sleep 0.05; done; echo held'`,
      "--context",
      "ticket-7",
      "--json",
      "hold it",
    ],
    { home, cwd: dir.path, allowRun: ["true", "sh"] },
  );
  try {
    while (true) {
      try {
        Deno.statSync(started);
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    const refused = await reins(
      ["run", "--driver", "command", "--exec", "true", "--context", "ticket-7", "--no-wait", "x"],
      { home, cwd: dir.path, allowRun: ["true"] },
    );
    using store = openStore(home);
    const [running] = store.listRuns({ active: true });
    assert.equal(refused.code, 7, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `^reins: context busy \\(run ${running.id}\\): another turn is running on context 'ticket-7'\\n`,
      ),
    );
    assert.equal(store.listRuns({ limit: 100 }).length, 1, "the refused turn recorded no run");
    const json = await reins(
      [
        "run",
        "--driver",
        "command",
        "--exec",
        "true",
        "--context",
        "ticket-7",
        "--no-wait",
        "--json",
        "x",
      ],
      { home, cwd: dir.path, allowRun: ["true"] },
    );
    assert.equal(json.code, 7);
    assert.equal(JSON.parse(json.stdout).error.code, "context_busy");
  } finally {
    Deno.writeTextFileSync(release, "");
    const output = await holder.output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  }
  const after = await reins(
    ["run", "--driver", "command", "--exec", "true", "--context", "ticket-7", "--no-wait", "x"],
    { home, cwd: dir.path, allowRun: ["true"] },
  );
  assert.equal(after.code, 0, after.stderr);
});

Deno.test("reins run --no-wait without --context is a usage error", async () => {
  await using dir = await tempDir("reins-e2e-lock-");
  const result = await reins(["run", "--driver", "command", "--exec", "true", "--no-wait", "x"], {
    home: `${dir.path}/home`,
    cwd: dir.path,
    allowRun: ["true"],
  });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /--no-wait goes with --context/);
});

// regression: a turn killed with SIGKILL must not leave its context stuck (the lock is flock's).
Deno.test("a context whose turn was SIGKILLed is free at once for the next turn", async () => {
  await using dir = await tempDir("reins-e2e-lock-");
  const home = `${dir.path}/home`;
  const started = `${dir.path}/started`;
  const child = spawnReins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      `sh -c 'touch ${started}; sleep 30'`,
      "--context",
      "k",
      "x",
    ],
    { home, cwd: dir.path, allowRun: ["true", "sh"] },
  );
  while (true) {
    try {
      Deno.statSync(started);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  child.kill("SIGKILL");
  await child.output();
  const next = await reins(
    ["run", "--driver", "command", "--exec", "true", "--context", "k", "--no-wait", "--json", "y"],
    { home, cwd: dir.path, allowRun: ["true"] },
  );
  assert.equal(next.code, 0, next.stderr);
  assert.equal(JSON.parse(next.stdout).status, "completed");
});
