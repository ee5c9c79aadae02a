import assert from "node:assert/strict";
import { INTERRUPTED_REASON } from "../../lib/store/reconcile.ts";
import { recordOnDisk, runInit, storeHome } from "./_helpers.ts";
import { exists } from "../../lib/store/run_files.ts";

Deno.test("reconcileRun() leaves a run alone while its writer holds the lock", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  assert.equal(home.store.ownerState(writer.runId), "alive");
  const result = await home.store.reconcileRun(writer.runId);
  assert.equal(result.owner, "alive");
  assert.equal(result.interrupted, false);
  assert.equal(home.store.loadRun(writer.runId).status, "running");
  assert.equal(home.store.readEvents(writer.runId).events.length, 2);
  // The writer goes on as if nothing happened.
  assert.equal(writer.append({ type: "heartbeat", payload: { iteration: 2 } }).sequence, 2);
});

Deno.test("reconcileRun() marks interrupted a run whose owner is gone, at the next sequence", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  writer.close();
  assert.equal(home.store.ownerState(writer.runId), "gone");
  const result = await home.store.reconcileRun(writer.runId);
  assert.deepEqual(result, {
    runId: writer.runId,
    owner: "gone",
    interrupted: true,
    outcomeRepaired: false,
    recordRebuilt: false,
    removed: false,
    problems: [],
    skipped: null,
    agents: [],
  });
  const events = home.store.readEvents(writer.runId).events;
  const last = events.at(-1)!;
  assert.equal(last.sequence, 2);
  assert.deepEqual(last.payload, { status: "interrupted", reason: INTERRUPTED_REASON });
  const record = home.store.loadRun(writer.runId);
  assert.equal(record.status, "interrupted");
  assert.equal(record.endedAt, last.timestamp);
  assert.equal(record.terminalReason, INTERRUPTED_REASON);
  // Appending goes on at the next sequence, as evidence: the run has settled.
  const late = home.store.appendToRun(writer.runId, {
    type: "heartbeat",
    payload: { iteration: 9 },
  });
  assert.equal(late.sequence, 3);
  assert.equal(late.ignored, "run already interrupted");
  // A second reconciliation finds nothing to do.
  assert.equal((await home.store.reconcileRun(writer.runId)).interrupted, false);
  assert.equal(home.store.readEvents(writer.runId).events.length, 4);
});

Deno.test("reconcileRun() corrects a record its events contradict, keeping a copy first", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  // A change that writes run.json (still running); a new run's is written first then.
  writer.append({ type: "session.linked", payload: { nativeSessionId: "native-1" } });
  const running = Deno.readTextFileSync(`${home.path}/runs/${writer.runId}/run.json`);
  const done = writer.append({ type: "completed", payload: { reason: "ok", result: 1 } });
  writer.close();
  // As if the writer died between appending its outcome and rewriting the record.
  Deno.writeTextFileSync(`${home.path}/runs/${writer.runId}/run.json`, running);
  const result = await home.store.reconcileRun(writer.runId);
  assert.equal(result.outcomeRepaired, true);
  assert.equal(result.interrupted, false);
  assert.match(result.problems[0], /says running, its events say completed; corrected/);
  const record = recordOnDisk(home.path, writer.runId);
  assert.equal(record.status, "completed");
  assert.equal(record.endedAt, done.timestamp);
  assert.equal(record.terminalReason, "ok");
  assert.equal(
    Deno.readTextFileSync(`${home.path}/runs/${writer.runId}/run.json.before-outcome-repair`),
    running,
  );
  assert.equal(home.store.readEvents(writer.runId).events.length, 3, "no event was added");
});

Deno.test("reconcileRun() interrupts a run whose record claims an outcome its events lack", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  writer.append({ type: "session.linked", payload: { nativeSessionId: "native-1" } });
  writer.close();
  const path = `${home.path}/runs/${writer.runId}/run.json`;
  const claimed = Deno.readTextFileSync(path).replace('"running"', '"completed"');
  Deno.writeTextFileSync(path, claimed);
  const result = await home.store.reconcileRun(writer.runId);
  assert.equal(result.outcomeRepaired, true);
  assert.equal(result.interrupted, true);
  assert.equal(recordOnDisk(home.path, writer.runId).status, "interrupted");
  assert.equal(Deno.readTextFileSync(`${path}.before-outcome-repair`), claimed);
});

Deno.test("reconcileRun() interrupts a run killed before its record was first written, reporting no damage", async () => {
  // A run's run.json is written when its record first changes: one killed before never had one.
  await using home = await storeHome();
  const writer = home.store.createRun(runInit({ contextId: "ctx-3" }));
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  writer.close();
  const path = `${home.path}/runs/${writer.runId}/run.json`;
  assert.ok(!exists(path));
  const result = await home.store.reconcileRun(writer.runId);
  assert.equal(result.interrupted, true);
  assert.equal(result.recordRebuilt, false);
  assert.equal(result.outcomeRepaired, false);
  assert.deepEqual(result.problems, []);
  const record = recordOnDisk(home.path, writer.runId);
  assert.equal(record.status, "interrupted");
  assert.equal(record.contextId, "ctx-3");
  assert.equal(record.startedAt, writer.started.timestamp);
  assert.deepEqual(home.store.inspectRun(writer.runId).record, record);
});

for (const [name, cut] of [["0 bytes", () => 0], ["half", (n: number) => n >> 1]] as const) {
  Deno.test(`reconcileRun() rebuilds a run.json truncated to ${name} and keeps its bytes`, async () => {
    await using home = await storeHome();
    const writer = home.store.createRun(runInit({ contextId: "ctx-9" }));
    writer.append({ type: "session.linked", payload: { nativeSessionId: "native-1" } });
    writer.close();
    const path = `${home.path}/runs/${writer.runId}/run.json`;
    const bytes = Deno.readFileSync(path);
    const damaged = bytes.subarray(0, cut(bytes.length));
    Deno.writeFileSync(path, damaged);
    const result = await home.store.reconcileRun(writer.runId);
    assert.equal(result.recordRebuilt, true);
    assert.equal(result.interrupted, true);
    assert.match(result.problems[0], /; rebuilt from the events$/);
    const record = recordOnDisk(home.path, writer.runId);
    assert.equal(record.status, "interrupted");
    assert.equal(record.contextId, "ctx-9");
    assert.equal(record.nativeSessionId, "native-1");
    assert.deepEqual(Deno.readFileSync(`${path}.damaged`), damaged);
  });
}

Deno.test("reconcileInterruptedRuns() removes abandoned creations and directories with nothing recorded", async () => {
  await using home = await storeHome();
  const kept = home.store.createRun(runInit());
  kept.close();
  const runs = `${home.path}/runs`;
  // An older reins's staging name, left a while ago (a younger one may be a live creation's).
  const creating = `${runs}/.01900000-0000-7000-8000-000000000001.creating`;
  Deno.mkdirSync(creating);
  Deno.writeTextFileSync(`${creating}/owner.lock`, "1\n");
  const aWhileAgo = new Date(Date.now() - 120_000);
  Deno.utimeSync(creating, aWhileAgo, aWhileAgo);
  Deno.mkdirSync(`${runs}/01900000-0000-7000-8000-000000000002`);
  Deno.writeTextFileSync(`${runs}/01900000-0000-7000-8000-000000000002/owner.lock`, "1\n");
  const report = await home.store.reconcileInterruptedRuns();
  assert.equal(report.removed, 2);
  assert.deepEqual(report.interrupted, [kept.runId]);
  assert.deepEqual(
    [...Deno.readDirSync(runs)].map((e) => e.name).sort(),
    [".owners", ".staging", kept.runId],
  );
});

Deno.test("reconcileInterruptedRuns() reports damaged event lines without failing", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  writer.append({ type: "completed", payload: { reason: null, result: null } });
  writer.close();
  Deno.writeTextFileSync(`${home.path}/runs/${writer.runId}/events.jsonl`, "oops\n", {
    append: true,
  });
  const report = await home.store.reconcileInterruptedRuns();
  assert.deepEqual(report.problems, [
    `runs/${writer.runId}/events.jsonl:3: skipped: not JSON: Unexpected token 'o', "oops" is not valid JSON`,
  ]);
  assert.equal(report.checked, 1);
  assert.deepEqual(report.interrupted, []);
});

Deno.test("reconcileCheaply() interrupts only the active runs whose owner is gone", async () => {
  await using home = await storeHome();
  using alive = home.store.createRun(runInit());
  const gone = home.store.createRun(runInit());
  gone.close();
  const settled = home.store.createRun(runInit());
  settled.append({ type: "completed", payload: { reason: null, result: null } });
  settled.close();
  assert.deepEqual(await home.store.reconcileCheaply(), [gone.runId]);
  assert.equal(home.store.loadRun(alive.runId).status, "running");
  assert.equal(home.store.loadRun(gone.runId).status, "interrupted");
  assert.equal(home.store.loadRun(settled.runId).status, "completed");
  assert.deepEqual(await home.store.reconcileCheaply(), []);
});
