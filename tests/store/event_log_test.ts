import assert from "node:assert/strict";
import fc from "fast-check";
import { nowIso } from "../../lib/core/clock.ts";
import { EventLog, parseEventLog } from "../../lib/store/event_log.ts";
import { logLines, runInit, storeHome } from "./_helpers.ts";

const RUN = "01900000-0000-7000-8000-000000000001";

function line(sequence: number, type = "heartbeat", payload: unknown = { iteration: sequence }) {
  return JSON.stringify({
    id: `e${sequence}`,
    runId: RUN,
    sessionId: "s",
    sequence,
    timestamp: "2026-01-01T00:00:00.000Z",
    type,
    payload,
  });
}

Deno.test("parseEventLog() skips a torn final line without calling it a problem", () => {
  const read = parseEventLog(`${line(0)}\n${line(1)}\n${line(2).slice(0, 30)}`, RUN);
  assert.deepEqual(read.events.map((e) => e.sequence), [0, 1]);
  assert.deepEqual(read.problems, []);
  assert.equal(read.tornLine, 3);
});

Deno.test("parseEventLog() skips malformed complete lines and reports their line numbers", () => {
  const text = [
    line(0),
    "{not json",
    line(1, "message.delta", { role: "robot", text: "x" }),
    "",
    line(2, "no.such.type", {}),
    JSON.stringify({ ...JSON.parse(line(3)), runId: "another-run" }),
    line(4),
  ].join("\n") + "\n";
  const read = parseEventLog(text, RUN);
  assert.deepEqual(read.events.map((e) => e.sequence), [0, 4]);
  assert.equal(read.tornLine, null);
  assert.deepEqual(read.problems.map((p) => p.line), [2, 3, 4, 5, 6]);
  assert.match(read.problems[0].reason, /^not JSON: /);
  assert.match(read.problems[1].reason, /at payload\.role$/);
  assert.equal(read.problems[2].reason, "empty line");
  assert.match(read.problems[3].reason, /at type$/);
  assert.equal(read.problems[4].reason, 'belongs to run "another-run", not this one');
});

Deno.test("parseEventLog() returns exactly the valid lines, in order, whatever is mixed in", () => {
  const entry = fc.oneof(
    fc.nat({ max: 1000 }).map((n) => ({ valid: true, text: line(n) })),
    fc.string({ maxLength: 20 }).filter((s) => !s.includes("\n")).map((text) => ({
      valid: false,
      text,
    })),
    fc.constant({ valid: false, text: line(7, "heartbeat", { iteration: -1 }) }),
  );
  fc.assert(
    fc.property(fc.array(entry, { maxLength: 30 }), fc.boolean(), (entries, torn) => {
      // A string of 20 characters at most cannot be a valid event, whatever it is.
      const valid = entries.map((e, i) => ({ ...e, lineNo: i + 1 })).filter((e) => e.valid);
      const text = entries.map((e) => `${e.text}\n`).join("") + (torn ? line(99).slice(0, 9) : "");
      const read = parseEventLog(text, RUN);
      assert.deepEqual(read.events, valid.map((e) => JSON.parse(e.text)));
      const problemLines = entries.map((_, i) => i + 1)
        .filter((n) => !valid.some((e) => e.lineNo === n));
      assert.deepEqual(read.problems.map((p) => p.line), problemLines);
      assert.equal(read.tornLine, torn ? entries.length + 1 : null);
    }),
    { numRuns: 300 },
  );
});

Deno.test("readEvents() reads a missing log as empty", async () => {
  await using home = await storeHome();
  assert.deepEqual(home.store.readEvents(RUN), { events: [], problems: [], tornLine: null });
});

Deno.test("EventLog.append() gives two handles on one log one gap-free sequence", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const a = EventLog.open(home.store, writer.runId, "session-1");
  const b = EventLog.open(home.store, writer.runId, "session-1");
  try {
    const sequences: number[] = [];
    for (let i = 0; i < 50; i++) {
      const log = i % 3 === 0 ? a : b;
      sequences.push(log.append({ type: "heartbeat", payload: { iteration: i } }).sequence);
    }
    assert.deepEqual(sequences, Array.from({ length: 50 }, (_, i) => i + 1));
    assert.deepEqual(home.store.readEvents(writer.runId).events.map((e) => e.sequence), [
      0,
      ...sequences,
    ]);
  } finally {
    a.close();
    b.close();
  }
});

Deno.test("EventLog.append() marks ignored what a handle appends after another settled the run", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const other = EventLog.open(home.store, writer.runId, "session-1");
  try {
    other.append({ type: "failed", payload: { reason: "stopped from elsewhere", result: null } });
    const late = writer.append({ type: "heartbeat", payload: { iteration: 1 } });
    assert.equal(late.ignored, "run already failed");
    assert.equal(late.sequence, 2);
    assert.equal(writer.settled, "failed");
  } finally {
    other.close();
  }
});

Deno.test("EventLog.append() refuses an invalid event, naming its type and the field", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => writer.append({ type: "message.delta", payload: { role: "assistant", text: 3 } } as any),
    {
      name: "ReinsError",
      message:
        "Cannot record a message.delta event: Invalid input: expected string, received number at payload.text",
    },
  );
  assert.throws(
    () => writer.append({ type: "tool.started", payload: { callId: "c", tool: "t", args: 1n } }),
    /Cannot record a tool\.started event: it is not JSON/,
  );
  // Nothing was written for either: the log still holds run.started alone.
  assert.equal(logLines(home.path, writer.runId).length, 1);
  assert.equal(writer.append({ type: "heartbeat", payload: { iteration: 0 } }).sequence, 1);
});

Deno.test("EventLog.append() repairs a torn tail before writing, and the sequence goes on", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  // Another writer can only write (and die mid-line) once this one has let go of the lock.
  await Promise.resolve();
  const path = `${home.path}/runs/${writer.runId}/events.jsonl`;
  Deno.writeTextFileSync(path, line(2).slice(0, 25), { append: true });
  const next = writer.append({ type: "heartbeat", payload: { iteration: 2 } });
  assert.equal(next.sequence, 2);
  const read = home.store.readEvents(writer.runId);
  assert.deepEqual(read.events.map((e) => e.sequence), [0, 1, 2]);
  assert.deepEqual(read.problems, []);
  assert.equal(Deno.readTextFileSync(`${path}.torn`), `${line(2).slice(0, 25)}\n`);
});

Deno.test("nowIso() is the current time as an ISO string", () => {
  const before = Date.now();
  const stamp = Date.parse(nowIso());
  assert.ok(stamp >= before && stamp <= Date.now());
});

Deno.test("EventLog.append() holds the owner's lock through a burst and lets go when the task ends", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const probe = Deno.openSync(`${home.path}/runs/${writer.runId}/events.jsonl`, { read: true });
  try {
    for (let i = 0; i < 3; i++) writer.append({ type: "heartbeat", payload: { iteration: i } });
    assert.equal(probe.tryLockSync(true), false, "held during the burst");
    await Promise.resolve();
    assert.equal(probe.tryLockSync(true), true, "released when the task ended");
    probe.unlockSync();
  } finally {
    probe.close();
  }
  // Another handle of this process in the same burst takes the lock over instead of deadlocking.
  writer.append({ type: "heartbeat", payload: { iteration: 3 } });
  const other = EventLog.open(home.store, writer.runId, "session-1");
  try {
    assert.equal(other.append({ type: "heartbeat", payload: { iteration: 4 } }).sequence, 5);
    assert.equal(writer.append({ type: "heartbeat", payload: { iteration: 5 } }).sequence, 6);
  } finally {
    other.close();
  }
});
