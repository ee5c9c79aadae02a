import assert from "node:assert/strict";
import fc from "fast-check";
import type { EventInput, RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { RunRecord as RunRecordSchema } from "../../lib/store/contracts.ts";
import type { RunAppender } from "../../lib/store/run_writer.ts";
import { openStore, Store } from "../../lib/store/store.ts";
import { eventInput, runPatch } from "./_arbitraries.ts";
import { logLines, modeOf, recordOnDisk, runInit, storeHome } from "./_helpers.ts";
import { observeDirectorySyncs } from "../../lib/core/atomic_write.ts";
import { recordedAgents } from "../../lib/store/left_agents.ts";
import { exists } from "../../lib/store/run_files.ts";

Deno.test("createRun() writes a run.started event that gives a running record, no run.json yet, all private", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit({ parentRunId: "p-1", relation: "child" }));
  const dir = `${home.path}/runs/${writer.runId}`;
  assert.match(
    writer.runId,
    /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  // run.json is first written when the record first changes; until then run.started gives it.
  assert.ok(!exists(`${dir}/run.json`), "run.json was written at creation");
  const inspected = home.store.inspectRun(writer.runId);
  assert.deepEqual(inspected.problems, [], "a run not yet written is no damage");
  const record = inspected.record;
  assert.deepEqual(writer.record, record);
  assert.deepEqual(record, {
    id: writer.runId,
    sessionId: "session-1",
    contextId: "ctx-1",
    nativeSessionId: null,
    parentRunId: "p-1",
    resumedFromRunId: null,
    relation: "child",
    harness: "reins",
    driver: "loop",
    trigger: "cli",
    cwd: "/work/project",
    goal: "fix the tests",
    startedAt: writer.record.startedAt,
    endedAt: null,
    status: "running",
    exitCode: null,
    terminalReason: null,
  });
  // The fields are written in the contract's order.
  assert.deepEqual(Object.keys(record), Object.keys(RunRecordSchema.shape));
  const [started] = home.store.readEvents(writer.runId).events;
  assert.equal(started.type, "run.started");
  assert.equal(started.sequence, 0);
  assert.deepEqual(writer.started, started);
  for (const path of [home.path, `${home.path}/runs`, dir]) assert.equal(modeOf(path), 0o700);
  for (const file of ["events.jsonl", "owner.lock"]) {
    assert.equal(modeOf(`${dir}/${file}`), 0o600, file);
  }
  writer.append({ type: "completed", payload: { reason: null, result: null } });
  assert.deepEqual(recordOnDisk(home.path, writer.runId), writer.record);
  assert.equal(modeOf(`${dir}/run.json`), 0o600);
  // Beside the run, only the (empty) directory runs are made in before being renamed into place,
  // and the owner files their owner locks link to.
  assert.deepEqual(
    [...Deno.readDirSync(`${home.path}/runs`)].map((e) => e.name).sort(),
    [".owners", ".staging", writer.runId],
  );
  assert.deepEqual([...Deno.readDirSync(`${home.path}/runs/.staging`)], []);
  assert.equal(modeOf(`${home.path}/runs/.staging`), 0o700);
});

Deno.test("createRun() refuses an invalid init before touching the data root", async () => {
  await using home = await storeHome();
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => home.store.createRun(runInit({ trigger: "cron" as any })),
    { name: "UsageError", message: /^Cannot create a run: .* at trigger$/ },
  );
  assert.throws(() => Deno.statSync(home.path), Deno.errors.NotFound);
});

Deno.test("RunWriter.append() applies status, outcome, goal and native session to run.json", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit({ goal: null }));
  writer.append({ type: "session.linked", payload: { nativeSessionId: "native-7" } });
  writer.append({ type: "message.completed", payload: { role: "assistant", text: "hi" } });
  assert.equal(writer.record.goal, null);
  writer.append({ type: "message.completed", payload: { role: "user", text: "the goal" } });
  writer.append({ type: "message.completed", payload: { role: "user", text: "not the goal" } });
  writer.append({ type: "status.changed", payload: { status: "waiting", reason: "approval" } });
  assert.equal(recordOnDisk(home.path, writer.runId).status, "waiting");
  const done = writer.append({ type: "completed", payload: { reason: "done", result: "ok" } });
  const record = recordOnDisk(home.path, writer.runId);
  assert.equal(record.nativeSessionId, "native-7");
  assert.equal(record.goal, "the goal");
  assert.equal(record.status, "completed");
  assert.equal(record.endedAt, done.timestamp);
  assert.equal(record.terminalReason, "done");
  assert.deepEqual(writer.record, record);
});

Deno.test("RunWriter.append() rewrites run.json only when the event changes it", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const path = `${home.path}/runs/${writer.runId}/run.json`;
  const inode = () => Deno.statSync(path).ino;
  writer.append({ type: "status.changed", payload: { status: "waiting", reason: null } });
  const first = inode();
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  writer.append({ type: "message.delta", payload: { role: "assistant", text: "x" } });
  writer.append({ type: "message.completed", payload: { role: "user", text: "goal is set" } });
  writer.append({ type: "status.changed", payload: { status: "waiting", reason: null } });
  assert.equal(inode(), first, "an atomic replace makes a new inode: none was made");
  writer.append({ type: "status.changed", payload: { status: "running", reason: null } });
  assert.notEqual(inode(), first);
});

Deno.test("RunWriter.append() keeps an event after the outcome as ignored evidence", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "failed", payload: { reason: "boom", result: null } });
  const before = recordOnDisk(home.path, writer.runId);
  const late = [
    writer.append({ type: "completed", payload: { reason: null, result: "late" } }),
    writer.append({ type: "status.changed", payload: { status: "running", reason: null } }),
    writer.append({ type: "session.linked", payload: { nativeSessionId: "late" } }),
  ];
  assert.deepEqual(late.map((e) => e.ignored), Array(3).fill("run already failed"));
  assert.deepEqual(late.map((e) => e.sequence), [2, 3, 4]);
  assert.deepEqual(recordOnDisk(home.path, writer.runId), before);
  assert.deepEqual(home.store.readEvents(writer.runId).events.slice(2), late);
});

Deno.test("RunWriter.update() keeps a settled run's status, endedAt and terminalReason", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "completed", payload: { reason: "all good", result: null } });
  const settled = writer.record;
  const after = writer.update({
    status: "failed",
    endedAt: "2030-01-01T00:00:00.000Z",
    terminalReason: "changed my mind",
    exitCode: 3,
    goal: "a new goal",
  });
  assert.deepEqual(after, { ...settled, exitCode: 3, goal: "a new goal" });
  assert.deepEqual(recordOnDisk(home.path, writer.runId), after);
  // No event was appended for the refused status change.
  assert.equal(logLines(home.path, writer.runId).length, 2);
});

Deno.test("RunWriter.update() records a status change as a status.changed event", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const record = writer.update({ status: "failed", terminalReason: "timed out", exitCode: 124 });
  const last = home.store.readEvents(writer.runId).events.at(-1)!;
  assert.equal(last.type, "status.changed");
  assert.deepEqual(last.payload, { status: "failed", reason: "timed out" });
  assert.equal(record.status, "failed");
  assert.equal(record.endedAt, last.timestamp);
  assert.equal(record.terminalReason, "timed out");
  assert.equal(record.exitCode, 124);
});

Deno.test("RunWriter.update() refuses a field the contract refuses, changing nothing", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const before = writer.record;
  assert.throws(() => writer.update({ exitCode: 1.5, status: "failed" }), {
    name: "UsageError",
    message: /^Cannot update run .*: .* at exitCode$/,
  });
  assert.deepEqual(home.store.inspectRun(writer.runId).record, before);
  assert.ok(!exists(`${home.path}/runs/${writer.runId}/run.json`), "nothing was written");
  assert.equal(logLines(home.path, writer.runId).length, 1);
});

Deno.test("appendToRun() appends from another handle at the next sequence and applies it", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "approval.requested", payload: { approvalId: "a1", tool: "t", args: {} } });
  const stored = home.store.appendToRun(writer.runId, {
    type: "approval.resolved",
    payload: { approvalId: "a1", decision: "allow", by: "cli" },
  });
  assert.equal(stored.sequence, 2);
  home.store.appendToRun(writer.runId, {
    type: "status.changed",
    payload: { status: "waiting", reason: "from elsewhere" },
  });
  // The owner sees the other process's change, and its next append goes after it.
  assert.equal(writer.record.status, "waiting");
  assert.equal(writer.append({ type: "heartbeat", payload: { iteration: 1 } }).sequence, 4);
});

Deno.test("appendToRun() throws NotFoundError for a run that does not exist, creating nothing", async () => {
  await using home = await storeHome();
  assert.throws(
    () =>
      home.store.appendToRun("01900000-0000-7000-8000-00000000abcd", {
        type: "heartbeat",
        payload: { iteration: 1 },
      }),
    { name: "NotFoundError" },
  );
  assert.throws(() => Deno.statSync(`${home.path}/runs`), Deno.errors.NotFound);
  assert.throws(() =>
    home.store.appendToRun("../escape", {
      type: "heartbeat",
      payload: { iteration: 1 },
    }), { name: "UsageError" });
});

Deno.test("updateRun() updates another process's run under the same rules", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  home.store.updateRun(writer.runId, { exitCode: 7 });
  assert.equal(home.store.loadRun(writer.runId).exitCode, 7);
  assert.equal(writer.record.exitCode, 7, "the owner's next look reloads what changed");
});

for (const [name, cut] of [["0 bytes", () => 0], ["half", (n: number) => n >> 1]] as const) {
  Deno.test(`inspectRun() rebuilds a run.json truncated to ${name} from its events, writing nothing`, async () => {
    await using home = await storeHome();
    const writer = home.store.createRun(runInit({ goal: null, parentRunId: "p-9" }));
    writer.append({ type: "session.linked", payload: { nativeSessionId: "n-1" } });
    writer.append({ type: "message.completed", payload: { role: "user", text: "the goal" } });
    writer.append({ type: "completed", payload: { reason: null, result: "ok" } });
    writer.update({ exitCode: 0 });
    writer.close();
    const expected = { ...home.store.loadRun(writer.runId), exitCode: null };
    const path = `${home.path}/runs/${writer.runId}/run.json`;
    const bytes = Deno.readFileSync(path);
    Deno.writeFileSync(path, bytes.subarray(0, cut(bytes.length)));
    const inspection = home.store.inspectRun(writer.runId);
    assert.equal(inspection.rebuilt, true);
    assert.deepEqual(inspection.record, expected);
    assert.equal(inspection.problems.length, 1);
    assert.match(
      inspection.problems[0].reason,
      name === "0 bytes"
        ? /^it is empty \(0 bytes\); rebuilt/
        : /^not JSON: .*; rebuilt from events\.jsonl$/,
    );
    assert.equal(inspection.problems[0].file, `runs/${writer.runId}/run.json`);
    assert.equal(Deno.readFileSync(path).length, cut(bytes.length), "reading does not repair");
  });
}

Deno.test("loadRun() throws NotFoundError for no such run and DataRootError when nothing rebuilds it", async () => {
  await using home = await storeHome();
  assert.throws(() => home.store.loadRun("01900000-0000-7000-8000-000000000000"), {
    name: "NotFoundError",
  });
  using writer = home.store.createRun(runInit());
  Deno.writeTextFileSync(`${home.path}/runs/${writer.runId}/run.json`, "{");
  Deno.writeTextFileSync(`${home.path}/runs/${writer.runId}/events.jsonl`, "");
  assert.throws(() => home.store.loadRun(writer.runId), {
    name: "DataRootError",
    message: new RegExp(
      `^Cannot read runs/${writer.runId}/run\\.json: not JSON: .*, and events\\.jsonl has no run\\.started`,
    ),
  });
});

/** The record the spec says a sequence of appends and updates gives (written independently). */
function expectedRecord(start: RunRecord, steps: Step[], events: RunEvent[]): RunRecord {
  let record = { ...start };
  const settled = () => ["completed", "failed", "interrupted"].includes(record.status);
  let next = 1;
  for (const step of steps) {
    if (step.kind === "update") {
      const { status: _s, endedAt: _e, terminalReason: _t, ...rest } = step.patch;
      if (
        step.patch.status !== undefined && !settled() && (step.patch.status !== record.status ||
          ["completed", "failed", "interrupted"].includes(step.patch.status))
      ) {
        record = apply(record, events[next++]);
      }
      record = { ...record, ...rest };
    } else {
      record = apply(record, events[next++]);
    }
  }
  return record;

  function apply(r: RunRecord, event: RunEvent): RunRecord {
    if (["completed", "failed", "interrupted"].includes(r.status)) return r;
    const p = event.payload as Record<string, unknown>;
    const settle = (status: RunRecord["status"]) => ({
      ...r,
      status,
      endedAt: event.timestamp,
      terminalReason: typeof p.reason === "string" ? p.reason : null,
    });
    if (event.type === "completed" || event.type === "failed") return settle(event.type);
    if (event.type === "status.changed") {
      const status = p.status as RunRecord["status"];
      return ["completed", "failed", "interrupted"].includes(status)
        ? settle(status)
        : { ...r, status };
    }
    if (event.type === "session.linked") {
      return { ...r, nativeSessionId: p.nativeSessionId as string };
    }
    if (
      event.type === "message.completed" && p.role === "user" && r.goal === null &&
      (p.text as string).trim()
    ) {
      return { ...r, goal: p.text as string };
    }
    return r;
  }
}

type Step = { kind: "append"; event: EventInput } | {
  kind: "update";
  patch: Parameters<RunAppender["update"]>[0];
};

Deno.test("RunWriter reads back any sequence of valid appends and updates as written", async () => {
  await using home = await storeHome();
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 4, arbitrary: eventInput.map((event) => ({ kind: "append" as const, event })) },
    { weight: 1, arbitrary: runPatch.map((patch) => ({ kind: "update" as const, patch })) },
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 25 }), fc.boolean(), (steps, viaOther) => {
      const writer = home.store.createRun(runInit({ goal: null }));
      const other = viaOther ? home.store.openRun(writer.runId) : writer;
      try {
        const start = writer.record;
        const returned: RunEvent[] = [writer.started];
        for (const [i, s] of steps.entries()) {
          const handle = i % 2 === 0 ? writer : other;
          if (s.kind === "append") returned.push(handle.append(s.event));
          else handle.update(s.patch);
        }
        const read = home.store.readEvents(writer.runId);
        assert.deepEqual(read.problems, []);
        assert.deepEqual(read.events, JSON.parse(JSON.stringify(read.events)));
        // Updates may append status.changed events too: what was returned is a subsequence.
        for (const event of returned) {
          assert.deepEqual(read.events[event.sequence], JSON.parse(JSON.stringify(event)));
        }
        assert.deepEqual(read.events.map((e) => e.sequence), read.events.map((_, i) => i));
        const expected = expectedRecord(start, steps, read.events);
        assert.deepEqual(home.store.loadRun(writer.runId), expected);
        assert.deepEqual(writer.record, expected);
      } finally {
        if (other !== writer) other.close();
        writer.close();
      }
    }),
    { numRuns: 40 },
  );
});

Deno.test("openStore() gives each store its own state: one closed, the other goes on", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const other = openStore(home.path);
  assert.ok(other instanceof Store);
  assert.equal(other.resolveRun("last").id, writer.runId);
  other.close();
  // The first store's index connection was never the second's: it still answers.
  home.store.appendToRun(writer.runId, { type: "heartbeat", payload: { iteration: 1 } });
  assert.deepEqual(home.store.listRuns().map((r) => r.id), [writer.runId]);
  assert.equal(home.store.readEvents(writer.runId).events.length, 2);
  assert.throws(() => other.listRuns(), { name: "StoreClosedError" });
});

Deno.test("a new store looks at directories again: modes loosened behind one are tightened", async () => {
  await using home = await storeHome();
  const session = { sessionId: "s-1", nativeSessionId: null, harness: "h", driver: "command" };
  home.store.contexts.put("ctx-1", session);
  Deno.chmodSync(`${home.path}/contexts/ctx-1`, 0o755);
  // This store made the directory private already and does not look again...
  home.store.contexts.put("ctx-1", session);
  assert.equal(modeOf(`${home.path}/contexts/ctx-1`), 0o755);
  // ...a store opened afterwards (another process, another front end) does.
  home.reopen().contexts.put("ctx-1", session);
  assert.equal(modeOf(`${home.path}/contexts/ctx-1`), 0o700);
});

Deno.test("createRun() syncs runs/ and the run's directory once, with the log's first sync, not at creation", async () => {
  // regression: the rename of runs/.<id>.creating to runs/<id> was never followed by an fsync of
  // runs/, so a power cut could lose a settled run's whole directory
  await using home = await storeHome();
  const synced: string[] = [];
  using _observed = observeDirectorySyncs((dir) => synced.push(dir));
  using writer = home.store.createRun(runInit());
  const runs = `${home.path}/runs`;
  assert.deepEqual(synced, [], "a run's creation syncs nothing");
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  assert.deepEqual(synced, []);
  writer.append({ type: "completed", payload: { result: "done", reason: null } });
  // runs/ was made by this first run, so its name in the data root is synced too.
  assert.deepEqual(synced, [`${runs}/${writer.runId}`, runs, home.path]);
  writer.append({ type: "heartbeat", payload: { iteration: 2 } });
  writer.close();
  assert.deepEqual(synced, [`${runs}/${writer.runId}`, runs, home.path], "once, not at every sync");
});

Deno.test("createRun() syncs runs/ into the data root with the first run that made it, and only then", async () => {
  // regression: runs/ was made by a data root's first run and never synced into the data root,
  // so a power cut could lose runs/ and every settled run in it
  await using home = await storeHome();
  const synced: string[] = [];
  using _observed = observeDirectorySyncs((dir) => synced.push(dir));
  const runs = `${home.path}/runs`;
  const first = home.store.createRun(runInit());
  await first.appendDurably({ type: "completed", payload: { result: "done", reason: null } });
  first.close();
  assert.deepEqual(synced.toSorted(), [home.path, runs, `${runs}/${first.runId}`]);
  synced.length = 0;
  const second = home.store.createRun(runInit());
  await second.appendDurably({ type: "completed", payload: { result: "done", reason: null } });
  second.close();
  assert.deepEqual(synced.toSorted(), [runs, `${runs}/${second.runId}`], "runs/ made before");
  synced.length = 0;
  // Another process (a store opened on a data root whose runs/ exists) syncs no more either.
  const third = home.reopen().createRun(runInit());
  await third.appendDurably({ type: "completed", payload: { result: "done", reason: null } });
  third.close();
  assert.deepEqual(synced.toSorted(), [runs, `${runs}/${third.runId}`], "runs/ made elsewhere");
});

Deno.test("RunWriter.appendDurably() leaves the thread free while the log syncs: the line first, the record once it is on disk", async () => {
  await using home = await storeHome();
  const synced: string[] = [];
  using _observed = observeDirectorySyncs((dir) => synced.push(dir));
  using writer = home.store.createRun(runInit());
  const runs = `${home.path}/runs`;
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  const settling = writer.appendDurably({
    type: "completed",
    payload: { result: "done", reason: null },
  });
  // Nothing was waited for on this thread: the line is written, the syncs are under way and the
  // record does not say the run settled until they are done.
  assert.equal(JSON.parse(logLines(home.path, writer.runId).at(-1)!).type, "completed");
  assert.deepEqual(synced, []);
  assert.equal(home.store.inspectRun(writer.runId).record.status, "running");
  assert.ok(!exists(`${home.path}/runs/${writer.runId}/run.json`), "no record written yet");
  const terminal = await settling;
  assert.equal(terminal.type, "completed");
  // The two directories sync at the same time, so either may finish first (asserted in order,
  // this failed about one run in three on a loaded machine).
  assert.deepEqual(
    synced.toSorted(),
    [home.path, runs, `${runs}/${writer.runId}`],
    "the run's directory, runs/ and (it made runs/) the data root, with the log",
  );
  assert.equal(recordOnDisk(home.path, writer.runId).status, "completed");
  assert.equal(recordOnDisk(home.path, writer.runId).endedAt, terminal.timestamp);
  assert.equal(writer.settled, "completed");
  writer.close();
  assert.deepEqual(
    synced.toSorted(),
    [home.path, runs, `${runs}/${writer.runId}`],
    "once, not again at close",
  );
});

Deno.test("RunWriter.appendDurably() of an event after the outcome keeps it as ignored, the record as it was", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "failed", payload: { reason: "boom", result: null } });
  const before = recordOnDisk(home.path, writer.runId);
  const late = await writer.appendDurably({
    type: "completed",
    payload: { reason: null, result: "late" },
  });
  assert.equal(late.ignored, "run already failed");
  assert.deepEqual(recordOnDisk(home.path, writer.runId), before);
});

Deno.test("noteAgent() appends one line for each agent to the run's owner lock, redacted, making no file", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const dir = `${home.path}/runs/${writer.runId}`;
  const before = [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
  const secret = "sk-ant-api03-" + "x".repeat(40);
  writer.noteAgent(JSON.stringify({ pid: 1234, pgid: 1234, startedMs: 1, program: "a" }));
  writer.noteAgent(JSON.stringify({ pid: 5678, pgid: 5678, startedMs: 2, program: secret }));
  assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name).sort(), before);
  const path = `${dir}/owner.lock`;
  assert.equal(modeOf(path), 0o600);
  const [pid, ...lines] = Deno.readTextFileSync(path).trimEnd().split("\n");
  assert.equal(pid, String(Deno.pid));
  assert.deepEqual(lines.map((l) => JSON.parse(l).pid), [1234, 5678]);
  assert.deepEqual(lines.map((l) => JSON.parse(l).run), [writer.runId, writer.runId]);
  assert.ok(!Deno.readTextFileSync(path).includes(secret), "the key was written as it is");
  // The owner still holds its lock: the lines went through its own handle.
  assert.equal(home.store.ownerState(writer.runId), "alive");
  assert.deepEqual(recordedAgents(home.store, writer.runId).map((agent) => agent.pid), [
    1234,
    5678,
  ]);
});

Deno.test("createRun() makes no owner lock file: owner.lock links to the process's owner file", async () => {
  // regression: each run's owner.lock was a file of its own, a file (an inode) a turn
  await using home = await storeHome();
  const writers = [0, 1, 2].map(() => home.store.createRun(runInit()));
  const owners = [...Deno.readDirSync(`${home.path}/runs/.owners`)].map((e) => e.name);
  assert.equal(owners.length, 1, "one owner file for the process's runs");
  const owner = Deno.statSync(`${home.path}/runs/.owners/${owners[0]}`);
  assert.equal(owner.nlink, 4, "the owner file and three runs' owner.lock");
  for (const writer of writers) {
    assert.equal(Deno.statSync(home.store.layout.ownerLock(writer.runId)).ino, owner.ino);
  }
  // Each run's agents are its own, though they share the file.
  writers[0].noteAgent(JSON.stringify({ pid: 11, pgid: 11, startedMs: 1, program: "a" }));
  writers[1].noteAgent(JSON.stringify({ pid: 22, pgid: 22, startedMs: 2, program: "b" }));
  assert.deepEqual(recordedAgents(home.store, writers[0].runId).map((a) => a.pid), [11]);
  assert.deepEqual(recordedAgents(home.store, writers[1].runId).map((a) => a.pid), [22]);
  assert.deepEqual(recordedAgents(home.store, writers[2].runId), []);
  // Ownership is each run's: the directory's lock, let go when its writer closes.
  writers[1].close();
  assert.equal(home.store.ownerState(writers[1].runId), "gone");
  assert.equal(home.store.ownerState(writers[0].runId), "alive");
  assert.equal((await home.store.reconcileRun(writers[1].runId)).interrupted, true);
  assert.equal((await home.store.reconcileRun(writers[0].runId)).owner, "alive");
  writers[0].close();
  writers[2].close();
});

Deno.test("an older reins, which knows only owner.lock, finds a run owned for its process's life", async () => {
  // An older reins took a run whose owner.lock it could lock (or make) for dead, and interrupted it.
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  const olderSees = () => {
    const file = Deno.openSync(home.store.layout.ownerLock(writer.runId), { read: true });
    try {
      if (!file.tryLockSync(true)) return "alive";
      file.unlockSync();
      return "gone";
    } finally {
      file.close();
    }
  };
  assert.equal(olderSees(), "alive");
  writer.close();
  // Later than the run, never earlier: this process still holds its owner file.
  assert.equal(olderSees(), "alive");
  assert.equal(home.store.ownerState(writer.runId), "gone");
});

Deno.test("ownerState() of a run an older reins made decides by its own owner.lock", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  writer.close();
  const path = home.store.layout.ownerLock(writer.runId);
  // As an older reins made it: a file of the run's own, held by its (live) process.
  Deno.removeSync(path);
  const older = Deno.openSync(path, { write: true, createNew: true, mode: 0o600 });
  older.lockSync(true);
  try {
    assert.equal(home.store.ownerState(writer.runId), "alive");
    assert.equal((await home.store.reconcileRun(writer.runId)).owner, "alive");
  } finally {
    older.close();
  }
  assert.equal(home.store.ownerState(writer.runId), "gone");
});

Deno.test("recordedAgents() reads an older reins's agents.jsonl too, and skips the owner's pid", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.noteAgent(JSON.stringify({ pid: 1234, pgid: 1234, startedMs: 1, program: "a" }));
  Deno.writeTextFileSync(
    `${home.path}/runs/${writer.runId}/agents.jsonl`,
    `${JSON.stringify({ pid: 42, pgid: 42, startedMs: 3, program: "old" })}\n`,
    { mode: 0o600 },
  );
  assert.deepEqual(
    recordedAgents(home.store, writer.runId).map((agent) => [agent.pid, agent.program]),
    [[1234, "a"], [42, "old"]],
  );
});

Deno.test("recordedAgents() refuses an agents.jsonl that is a link out of the data root", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const outside = await Deno.makeTempFile();
  try {
    Deno.writeTextFileSync(outside, `${JSON.stringify({ pid: 7, pgid: 7, startedMs: 1 })}\n`);
    Deno.symlinkSync(outside, `${home.path}/runs/${writer.runId}/agents.jsonl`);
    assert.throws(() => recordedAgents(home.store, writer.runId), /outside the data root/);
  } finally {
    Deno.removeSync(outside);
  }
});
