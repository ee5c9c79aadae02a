// runTurn(): the turn engine as a library, in one process — many turns at once, one turn per
// context, the caller's stop and kill signals, the timeout, answers appended in process, and the
// hooks a front end gets. Real command-driver agents (sh scripts), a real store in a temp dir.
import assert from "node:assert/strict";
import { loadSettings, type Settings } from "../../lib/core/config.ts";
import { ContextBusyError } from "../../lib/core/errors.ts";
import type { Driver } from "../../lib/drivers/driver.ts";
import type { RunEvent } from "../../lib/store/contracts.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { runTurn, type TurnRequest, type TurnSignals } from "../../lib/turn/mod.ts";

interface Bench extends AsyncDisposable {
  dir: string;
  store: Store;
  settings: Settings;
}

async function bench(): Promise<Bench> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-turn-" }));
  const home = `${dir}/home`;
  const store = openStore(home);
  const settings = loadSettings({ REINS_HOME: home, HOME: dir, REINS_CONFIG: `${dir}/none.json` });
  return {
    dir,
    store,
    settings,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

function request(b: Bench, exec: string, overrides: Partial<TurnRequest> = {}): TurnRequest {
  return {
    agent: { kind: "command", exec, idleTimeoutSeconds: null },
    prompt: "hello",
    cwd: b.dir,
    contextId: null,
    approval: "auto",
    budget: {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "api",
    ...overrides,
  };
}

/** Signals nobody aborts (the test's turns end by themselves). */
function calm(): TurnSignals {
  return { stop: new AbortController().signal, kill: new AbortController().signal };
}

/** The run as a reader finds it: its record settled as the summary says, its log whole. */
function assertCompleteAndValid(store: Store, runId: string, status = "completed"): RunEvent[] {
  const record = store.loadRun(runId);
  assert.equal(record.status, status, `run ${runId}`);
  const read = store.readEvents(runId);
  assert.deepEqual(read.problems, [], `run ${runId}`);
  assert.equal(read.tornLine, null);
  assert.deepEqual(read.events.map((e) => e.sequence), read.events.map((_, i) => i));
  assert.equal(read.events[0].type, "run.started");
  const outcomes = read.events.filter((e) =>
    e.type === "completed" || e.type === "failed" ||
    (e.type === "status.changed" &&
      ["completed", "failed", "interrupted"].includes(e.payload.status))
  );
  assert.equal(outcomes.length, 1, `one outcome in run ${runId}`);
  assert.equal(store.ownerState(runId), "gone", "the writer let go of the run");
  return read.events;
}

Deno.test("runTurn() runs 20 turns at once in one process, each complete and valid", async () => {
  await using b = await bench();
  const turns = Array.from({ length: 20 }, (_, i) =>
    runTurn(
      b.store,
      b.settings,
      request(b, `sh -c 'sleep 0.05; echo "turn ${i} says: $REINS_PROMPT"'`, {
        contextId: `ctx-${i}`,
        prompt: `prompt ${i}`,
      }),
      calm(),
    ));
  const outcomes = await Promise.all(turns);
  assert.equal(new Set(outcomes.map((o) => o.summary.runId)).size, 20);
  assert.equal(new Set(outcomes.map((o) => o.summary.sessionId)).size, 20);
  for (const [i, { summary, problems, error }] of outcomes.entries()) {
    assert.equal(error, null);
    assert.equal(problems, 0);
    assert.equal(summary.status, "completed");
    assert.equal(summary.contextId, `ctx-${i}`);
    assert.equal(summary.result, `turn ${i} says: prompt ${i}`);
    const events = assertCompleteAndValid(b.store, summary.runId);
    assert.equal(events[0].runId, summary.runId);
    assert.equal(b.store.contexts.get(`ctx-${i}`)?.session_id, summary.sessionId);
  }
  assert.equal(b.store.listRuns({ limit: 100 }).length, 20);
});

Deno.test("runTurn() on one context from six turns at once makes one session, one turn at a time", async () => {
  await using b = await bench();
  const log = `${b.dir}/spans.log`;
  // Each agent notes when it starts and ends: with the lock, no two overlap.
  const exec =
    `sh -c 'echo start $REINS_RUN_ID >> ${log}; sleep 0.1; echo end $REINS_RUN_ID >> ${log}'`;
  const busy: (string | null)[] = [];
  const outcomes = await Promise.all(
    Array.from(
      { length: 6 },
      () =>
        runTurn(b.store, b.settings, request(b, exec, { contextId: "same" }), calm(), {
          onContextBusy: (holder) => busy.push(holder),
        }),
    ),
  );
  const sessions = new Set(outcomes.map((o) => o.summary.sessionId));
  assert.equal(sessions.size, 1, "one session for the context");
  assert.equal(b.store.contexts.get("same")?.session_id, [...sessions][0]);
  const lines = Deno.readTextFileSync(log).trim().split("\n");
  assert.equal(lines.length, 12);
  for (let i = 0; i < lines.length; i += 2) {
    const [start, end] = [lines[i].split(" "), lines[i + 1].split(" ")];
    assert.deepEqual([start[0], end[0], start[1]], ["start", "end", end[1]], lines.join("\n"));
  }
  // Five turns found the context busy; each was told whose run (or that one was starting).
  assert.equal(busy.length, 5);
  const runIds = new Set(outcomes.map((o) => o.summary.runId));
  for (const holder of busy) assert.ok(holder === null || runIds.has(holder), `${holder}`);
  // All but the first resumed the session the first one made.
  const relations = outcomes.map((o) => b.store.loadRun(o.summary.runId).relation).sort();
  assert.deepEqual(relations, ["resume", "resume", "resume", "resume", "resume", null].sort());
});

Deno.test("runTurn() with contextBusy fail throws ContextBusyError naming the holder's run", async () => {
  await using b = await bench();
  let holder = "";
  const first = runTurn(
    b.store,
    b.settings,
    request(b, "sleep 0.5", { contextId: "busy" }),
    calm(),
    {
      onCreated: (runId) => {
        holder = runId;
      },
    },
  );
  while (holder === "") await new Promise((resolve) => setTimeout(resolve, 5));
  await assert.rejects(
    () =>
      runTurn(
        b.store,
        b.settings,
        request(b, "true", { contextId: "busy", contextBusy: "fail" }),
        calm(),
      ),
    (error: unknown) => {
      assert.ok(error instanceof ContextBusyError);
      assert.equal(error.exitCode, 7);
      assert.equal(error.holderRunId, holder);
      assert.match(error.message, new RegExp(`^context busy \\(run ${holder}\\)`));
      return true;
    },
  );
  assert.equal((await first).summary.status, "completed");
  assert.equal(b.store.listRuns().length, 1, "the refused turn recorded nothing");
  // Free again: the same request now runs.
  const again = await runTurn(
    b.store,
    b.settings,
    request(b, "true", { contextId: "busy", contextBusy: "fail" }),
    calm(),
  );
  assert.equal(again.summary.status, "completed");
});

Deno.test("runTurn() stopped while it waits for a busy context gives up and records nothing", async () => {
  await using b = await bench();
  const first = runTurn(b.store, b.settings, request(b, "sleep 0.4", { contextId: "c" }), calm());
  const stop = new AbortController();
  const waiting = runTurn(
    b.store,
    b.settings,
    request(b, "true", { contextId: "c" }),
    { stop: stop.signal, kill: new AbortController().signal },
    { onContextBusy: () => stop.abort("stopped by SIGINT") },
  );
  await assert.rejects(
    () => waiting,
    /^Error: Stopped while waiting for context 'c'|Stopped while waiting for context 'c'/,
  );
  await first;
  assert.equal(b.store.listRuns().length, 1);
});

Deno.test("runTurn() ends a run interrupted when the caller's stop signal aborts", async () => {
  await using b = await bench();
  const stop = new AbortController();
  const outcome = await runTurn(
    b.store,
    b.settings,
    request(b, "sleep 30"),
    { stop: stop.signal, kill: new AbortController().signal },
    { onCreated: () => void setTimeout(() => stop.abort("stopped by SIGTERM"), 100) },
  );
  assert.equal(outcome.summary.status, "interrupted");
  assert.match(outcome.summary.reason ?? "", /stopped by a signal/);
  assertCompleteAndValid(b.store, outcome.summary.runId, "interrupted");
});

Deno.test("runTurn() fails a run that outlives its timeout", async () => {
  await using b = await bench();
  const outcome = await runTurn(
    b.store,
    b.settings,
    request(b, "sleep 30", { timeoutSeconds: 0.2 }),
    calm(),
  );
  assert.equal(outcome.summary.status, "failed");
  assert.match(outcome.summary.reason ?? "", /^timed out after 0.2 s/);
  assertCompleteAndValid(b.store, outcome.summary.runId, "failed");
});

Deno.test("runTurn() waits for an approval answered in process through the store", async () => {
  await using b = await bench();
  // A driver that asks for one approval and reports what it was told.
  const asking: Driver = {
    name: "command",
    harness: "test",
    async start(input, sink, signal) {
      sink.emit({
        type: "approval.requested",
        payload: { approvalId: "a-1", tool: "write_file", args: { path: "x" } },
      });
      const decision = await input.decisions.waitForApproval("a-1", signal);
      return {
        status: "completed",
        reason: null,
        result: `${decision.decision} by ${decision.by}`,
        exitCode: null,
      };
    },
  };
  const seen: string[] = [];
  const outcome = await runTurn(
    b.store,
    b.settings,
    request(b, "unused", { driver: asking, approval: "ask" }),
    calm(),
    {
      onEvent: (event) => {
        seen.push(event.type === "status.changed" ? `status:${event.payload.status}` : event.type);
        if (event.type === "approval.requested") {
          // As a server would: from this process, once the append that reported it returned.
          setTimeout(() =>
            b.store.appendToRun(event.runId, {
              type: "approval.resolved",
              payload: { approvalId: "a-1", decision: "allow", by: "api", reason: null },
            }), 20);
        }
      },
    },
  );
  assert.equal(outcome.summary.result, "allow by api");
  assert.deepEqual(seen, [
    "run.started",
    "approval.requested",
    "status:waiting",
    "status:running",
    "completed",
  ]);
  const events = assertCompleteAndValid(b.store, outcome.summary.runId);
  assert.ok(events.some((e) => e.type === "approval.resolved"));
});

Deno.test("runTurn() calls onSettled once the run is closed and its context free", async () => {
  await using b = await bench();
  const order: string[] = [];
  const warnings: string[] = [];
  const outcome = await runTurn(
    b.store,
    b.settings,
    request(b, "sh -c 'echo done'", { contextId: "after" }),
    calm(),
    {
      warn: (message) => warnings.push(message),
      onCreated: () => void order.push("created"),
      onSettled: async (summary) => {
        order.push(`settled:${summary.status}`);
        assert.equal(b.store.ownerState(summary.runId), "gone");
        // The context is free: a turn that refuses to wait runs at once.
        const next = await runTurn(
          b.store,
          b.settings,
          request(b, "true", { contextId: "after", contextBusy: "fail" }),
          calm(),
        );
        order.push(`next:${next.summary.status}`);
        throw new Error("the exporter is down");
      },
    },
  );
  assert.equal(outcome.summary.status, "completed", "what onSettled throws changes nothing");
  assert.deepEqual(order, ["created", "settled:completed", "next:completed"]);
  assert.deepEqual(warnings, [
    `after run ${outcome.summary.runId} settled: the exporter is down`,
  ]);
});

Deno.test("runTurn() refuses a request that cannot start before recording anything", async () => {
  await using b = await bench();
  await assert.rejects(
    () => runTurn(b.store, b.settings, request(b, "true", { cwd: "relative/dir" }), calm()),
    { name: "UsageError", message: /not absolute/ },
  );
  await assert.rejects(
    () => runTurn(b.store, b.settings, request(b, "true", { cwd: `${b.dir}/missing` }), calm()),
    { name: "NotFoundError" },
  );
  await assert.rejects(
    () => runTurn(b.store, b.settings, request(b, "true", { contextId: "../x" }), calm()),
    { name: "UsageError", message: /context id/ },
  );
  await assert.rejects(
    () =>
      runTurn(b.store, b.settings, {
        ...request(b, "true"),
        agent: { kind: "loop", model: "mock:/no/such/script.json", baseUrl: null },
      }, calm()),
    { name: "UsageError" },
  );
  assert.deepEqual(b.store.listRuns(), []);
});

Deno.test("runTurn() records on run.started what the driver knows of its agent, and nothing for the command driver", async () => {
  await using b = await bench();
  const loop = await runTurn(
    b.store,
    b.settings,
    request(b, "", { agent: { kind: "loop", model: null, baseUrl: null } }),
    calm(),
  );
  const [started] = b.store.readEvents(loop.summary.runId).events;
  assert.equal(started.type, "run.started");
  assert.deepEqual((started.payload as Record<string, unknown>).agent, {
    provider: "reins",
    model: "demo",
    inputExcludesCache: false,
    inProcess: true,
  });
  const command = await runTurn(b.store, b.settings, request(b, "true"), calm());
  const [plain] = b.store.readEvents(command.summary.runId).events;
  assert.equal(Object.hasOwn(plain.payload, "agent"), false);
});

/** Every inode under `dir` (each counted once, however many names it has) with its paths. */
function inodesUnder(dir: string): Map<number, string[]> {
  const found = new Map<number, string[]>();
  const walk = (path: string) => {
    const info = Deno.lstatSync(path);
    found.set(info.ino!, [...found.get(info.ino!) ?? [], path]);
    if (info.isDirectory) {
      for (const entry of Deno.readDirSync(path)) walk(`${path}/${entry.name}`);
    }
  };
  walk(dir);
  return found;
}

Deno.test("runTurn() on a new context makes six files: its context, session, run, log, record, manifest", async () => {
  // regression: a turn made nine: contexts/<id>/turn.lock, runs/<id>/owner.lock and a run.json
  // written at the start and replaced at settle besides (each file ~0.3–0.9 ms of kernel time on
  // ext4 here: docs/engine.md "What a turn writes and syncs")
  await using b = await bench();
  const home = b.store.home;
  // The data root's own directories, and this process's owner file, made by a first turn.
  const first = await runTurn(
    b.store,
    b.settings,
    request(b, "true", { contextId: "c-0" }),
    calm(),
  );
  assert.equal(first.summary.status, "completed");
  for (let i = 1; i <= 3; i++) {
    const before = inodesUnder(home);
    const turn = await runTurn(
      b.store,
      b.settings,
      request(b, "true", { contextId: `c-${i}` }),
      calm(),
    );
    assert.equal(turn.summary.status, "completed");
    const made = [...inodesUnder(home)].filter(([ino]) => !before.has(ino))
      .map(([, paths]) => paths[0].slice(home.length + 1).replace(turn.summary.runId, "RUN"))
      .sort();
    assert.deepEqual(made, [
      `contexts/c-${i}`,
      `contexts/c-${i}/harness-session.json`,
      "runs/RUN",
      "runs/RUN/events.jsonl",
      "runs/RUN/run.json",
      "snapshots/manifests/RUN.json",
    ]);
    // Its owner lock is a name for the process's owner file, not a file of its own.
    const owner = Deno.statSync(b.store.layout.ownerLock(turn.summary.runId)).ino!;
    assert.ok(before.has(owner));
  }
});
