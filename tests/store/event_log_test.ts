import assert from "node:assert/strict";
import fc from "fast-check";
import { nowIso } from "../../lib/core/clock.ts";
import { EventLog, parseEventLog } from "../../lib/store/event_log.ts";
import { openStore } from "../../lib/store/store.ts";
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
  // The empty line holds nothing: skipped, not a problem (blanked garbage reads the same).
  assert.deepEqual(read.problems.map((p) => p.line), [2, 3, 5, 6]);
  assert.match(read.problems[0].reason, /^not JSON: /);
  assert.match(read.problems[1].reason, /at payload\.role$/);
  assert.match(read.problems[2].reason, /at type$/);
  assert.equal(read.problems[3].reason, 'belongs to run "another-run", not this one');
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
      // Blank lines hold nothing: skipped without a problem.
      const problemLines = entries.map((_, i) => i + 1)
        .filter((n) => !valid.some((e) => e.lineNo === n) && entries[n - 1].text.trim() !== "");
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

// regression: garbage lines in the middle of a log stayed there, and every read warned of them.
Deno.test("an append sets complete lines that are not JSON aside, keeps their bytes, and loses no event", async () => {
  await using parent = await storeHome();
  const warnings: string[] = [];
  using store = openStore(parent.path, { warn: (message) => warnings.push(message) });
  const writer = store.createRun(runInit());
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  writer.close();
  const path = `${parent.path}/runs/${writer.runId}/events.jsonl`;
  const valid = Deno.readFileSync(path);
  const garbage = [
    new TextEncoder().encode("disk said: \u00e9 garbage"),
    new Uint8Array([0xff, 0xfe, 0x00, 0x41]), // not even UTF-8
  ];
  const bytes = [valid, garbage[0], [0x0a], garbage[1], [0x0a], new TextEncoder().encode("\n")];
  // The valid lines, then two garbage lines and an empty one (lines 3, 4 and 5).
  Deno.writeFileSync(path, new Uint8Array(bytes.flatMap((part) => [...part])));
  const before = store.readEvents(writer.runId);
  assert.deepEqual(before.problems.map((p) => p.line), [3, 4]);

  const next = store.appendToRun(writer.runId, { type: "heartbeat", payload: { iteration: 2 } });
  assert.equal(next.sequence, 2);
  const after = store.readEvents(writer.runId);
  assert.deepEqual(after.problems, []);
  assert.deepEqual(after.events.map((e) => e.sequence), [0, 1, 2]);
  // The valid lines are byte for byte what they were; the garbage is blanked where it was.
  const now = Deno.readFileSync(path);
  assert.deepEqual(now.subarray(0, valid.length), valid);
  assert.equal(
    new TextDecoder().decode(now.subarray(valid.length)).split("\n").slice(0, 3).join("|"),
    `${" ".repeat(garbage[0].length)}|${" ".repeat(garbage[1].length)}|`,
  );
  const kept = Deno.readFileSync(`${path}.garbage`);
  assert.deepEqual(
    kept,
    new Uint8Array([
      ...new TextEncoder().encode("3:"),
      ...garbage[0],
      0x0a,
      ...new TextEncoder().encode("4:"),
      ...garbage[1],
      0x0a,
    ]),
  );
  assert.equal(Deno.statSync(`${path}.garbage`).mode! & 0o777, 0o600);
  assert.deepEqual(warnings, [
    `runs/${writer.runId}/events.jsonl: set aside 2 lines that were not JSON (line 3, 4), blanked in the log; their bytes are kept in runs/${writer.runId}/events.jsonl.garbage`,
  ]);
  // Said once: the next append finds nothing to set aside.
  store.appendToRun(writer.runId, { type: "heartbeat", payload: { iteration: 3 } });
  assert.equal(warnings.length, 1);
  assert.equal(Deno.readFileSync(`${path}.garbage`).length, kept.length);
});

Deno.test("an append after any mix of valid and garbage lines keeps every valid event (property)", async () => {
  await using parent = await storeHome();
  const writer = parent.store.createRun(runInit());
  const runId = writer.runId;
  const first = Deno.readTextFileSync(parent.store.layout.events(runId));
  writer.close();
  const valid = (sequence: number) =>
    JSON.stringify({
      ...JSON.parse(first),
      id: `v${sequence}`,
      sequence,
      type: "heartbeat",
      payload: { iteration: sequence },
    });
  const entry = fc.oneof(
    fc.constant({ valid: true }),
    // Not shaped as reins's own lines ({"id":"…}), which the appender takes for JSON unparsed.
    fc.string({ maxLength: 20 }).filter((text) =>
      !text.includes("\n") && !text.startsWith('{"id":"')
    )
      .map((text) => ({
        valid: false,
        text,
      })),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(entry, { maxLength: 20 }), async (entries) => {
      let sequence = 0;
      const lines = [first.trimEnd()];
      const expected = [0];
      for (const e of entries) {
        if (e.valid) {
          lines.push(valid(++sequence));
          expected.push(sequence);
        } else lines.push((e as { text: string }).text);
      }
      const path = parent.store.layout.events(runId);
      Deno.writeTextFileSync(path, `${lines.join("\n")}\n`);
      await Deno.remove(`${path}.garbage`).catch(() => {});
      const stillJson = lines.filter((text, i) => {
        if (
          i === 0 || text.trim() === "" || expected.includes(Number(/"v(\d+)"/.exec(text)?.[1]))
        ) {
          return false;
        }
        try {
          JSON.parse(text);
          return true;
        } catch {
          return false;
        }
      }).length;
      const appended = parent.store.appendToRun(runId, {
        type: "heartbeat",
        payload: { iteration: 99 },
      });
      const read = parent.store.readEvents(runId);
      assert.deepEqual(read.events.map((e) => e.sequence), [...expected, appended.sequence]);
      assert.equal(appended.sequence, sequence + 1);
      // What is left to warn of is JSON that is not an event: the readers' call, not garbage.
      assert.equal(read.problems.length, stillJson);
    }),
    { numRuns: 200 },
  );
});

Deno.test("the owner's next append sets aside garbage another process appended", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "heartbeat", payload: { iteration: 1 } });
  await Promise.resolve(); // the owner lets go of the lock at the end of the task
  const path = `${home.path}/runs/${writer.runId}/events.jsonl`;
  Deno.writeTextFileSync(path, "not an event\n", { append: true });
  writer.append({ type: "heartbeat", payload: { iteration: 2 } });
  const read = home.store.readEvents(writer.runId);
  assert.deepEqual(read.problems, []);
  assert.deepEqual(read.events.map((e) => e.sequence), [0, 1, 2]);
  assert.equal(Deno.readTextFileSync(`${path}.garbage`), "3:not an event\n");
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
