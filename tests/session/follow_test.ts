// Following a run's log in process: the incremental reader and the follower's end conditions.
// Following from another process is tested end to end in tests/e2e/show_test.ts.
import assert from "node:assert/strict";
import type { RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { followRun, PendingTracker, type TailBatch } from "../../lib/session/follow.ts";

const FIXTURES = new URL("../fixtures/session/", import.meta.url).pathname;

async function withHome(
  fn: (home: string, store: Store) => Promise<void> | void,
): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "reins-follow-" });
  const store = openStore(home);
  try {
    await fn(home, store);
  } finally {
    store.close();
    await Deno.remove(home, { recursive: true });
  }
}

/** A recorded fixture's run, placed in `home` as the store keeps runs; returns its lines. */
function install(home: string, name: string, lines?: (all: string[]) => string[]) {
  const record = JSON.parse(Deno.readTextFileSync(`${FIXTURES}${name}/run.json`)) as RunRecord;
  const all = Deno.readTextFileSync(`${FIXTURES}${name}/events.jsonl`).split("\n").filter(Boolean);
  const kept = lines ? lines(all) : all;
  const dir = `${home}/runs/${record.id}`;
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  Deno.writeTextFileSync(`${dir}/run.json`, JSON.stringify(record), { mode: 0o600 });
  Deno.writeTextFileSync(`${dir}/events.jsonl`, kept.map((line) => `${line}\n`).join(""), {
    mode: 0o600,
  });
  return { record, lines: all, path: `${dir}/events.jsonl` };
}

const sequences = (batch: TailBatch) => batch.events.map((event) => event.sequence);

Deno.test("EventTail.read() returns only the events appended since its last read", async () => {
  await withHome((home, store) => {
    const writer = store.createRun({
      sessionId: "s",
      contextId: null,
      harness: "test",
      driver: "command",
      trigger: "cli",
      cwd: home,
      goal: "tail",
    });
    const tail = store.tail(writer.runId);
    writer.append({ type: "heartbeat", payload: { iteration: 0 } });
    assert.deepEqual(sequences(tail.read()), [0, 1]);
    assert.deepEqual(sequences(tail.read()), []);
    writer.append({ type: "heartbeat", payload: { iteration: 1 } });
    writer.append({ type: "heartbeat", payload: { iteration: 2 } });
    assert.deepEqual(sequences(tail.read()), [2, 3]);
    writer.close();
  });
});

Deno.test("EventTail.read() leaves a line being written for the read after it is whole", async () => {
  await withHome((home, store) => {
    const { record, lines, path } = install(home, "loop_tools", (all) => all.slice(0, 10));
    const tail = store.tail(record.id);
    assert.equal(tail.read().events.length, 10);
    const next = new TextEncoder().encode(`${lines[10]}\n`);
    Deno.writeFileSync(path, next.subarray(0, 25), { append: true });
    assert.deepEqual(tail.read(), { events: [], problems: [] });
    assert.equal(tail.incompleteLine, 11);
    Deno.writeFileSync(path, next.subarray(25), { append: true });
    assert.deepEqual(sequences(tail.read()), [10]);
    assert.equal(tail.incompleteLine, null);
  });
});

Deno.test("EventTail.read() reports bad lines with their line numbers in the whole file", async () => {
  await withHome((home, store) => {
    const { record, lines, path } = install(home, "loop_tools", (all) => all.slice(0, 3));
    const tail = store.tail(record.id);
    tail.read();
    Deno.writeTextFileSync(path, `not json\n${lines[3]}\n{"type":"heartbeat"}\n`, { append: true });
    const batch = tail.read();
    assert.deepEqual(sequences(batch), [3]);
    assert.deepEqual(batch.problems.map((problem) => problem.line), [4, 6]);
    assert.match(batch.problems[0].reason, /^not JSON/);
  });
});

Deno.test("EventTail.readEach() hands a long backlog over in pieces, in order", async () => {
  await withHome((home, store) => {
    const { record, lines } = install(home, "loop_tools");
    // Every line again and again under growing sequences: about 3 MB.
    const template = JSON.parse(lines[9]) as RunEvent;
    const path = `${home}/runs/${record.id}/events.jsonl`;
    const extra: string[] = [];
    for (let sequence = lines.length; sequence < 12_000; sequence++) {
      extra.push(JSON.stringify({ ...template, sequence }));
    }
    Deno.writeTextFileSync(path, `${extra.join("\n")}\n`, { append: true });
    const pieces: number[][] = [];
    store.tail(record.id).readEach((batch) => pieces.push(sequences(batch)));
    assert.ok(pieces.length >= 2, `${pieces.length} pieces`);
    assert.deepEqual(pieces.flat(), Array.from({ length: 12_000 }, (_, i) => i));
  });
});

Deno.test("EventTail.read() leaves out what it read before when the log is rewritten shorter, and a sequence seen already", async () => {
  await withHome((home, store) => {
    const { record, lines, path } = install(home, "loop_tools", (all) => all.slice(0, 10));
    const tail = store.tail(record.id);
    assert.deepEqual(sequences(tail.read()), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Rewritten shorter: read again from the start, past what was shown; 3 comes after 10.
    Deno.writeTextFileSync(path, [0, 1, 2, 10, 3, 11].map((i) => `${lines[i]}\n`).join(""));
    assert.deepEqual(sequences(tail.read()), [10, 11]);
    Deno.writeTextFileSync(path, `${lines[12]}\n${lines[12]}\n${lines[13]}\n`, { append: true });
    assert.deepEqual(sequences(tail.read()), [12, 13]);
  });
});

Deno.test("EventTail.read() reads a line longer than a piece whole", async () => {
  await withHome((home, store) => {
    const { record, lines, path } = install(home, "loop_tools", (all) => all.slice(0, 7));
    const big = JSON.parse(lines[7]);
    big.payload.result = "x".repeat(3 << 20);
    Deno.writeTextFileSync(path, `${JSON.stringify(big)}\n${lines[8]}\n`, { append: true });
    const batch = store.tail(record.id).read();
    assert.deepEqual(sequences(batch), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert.equal((batch.events[7].payload as { result: string }).result.length, 3 << 20);
  });
});

Deno.test("followRun() yields events as another writer appends them and ends on its outcome", async () => {
  await withHome(async (home, store) => {
    const writer = store.createRun({
      sessionId: "s",
      contextId: null,
      harness: "test",
      driver: "command",
      trigger: "cli",
      cwd: home,
      goal: "follow",
    });
    let step = 0;
    const timer = setInterval(() => {
      if (step < 3) writer.append({ type: "heartbeat", payload: { iteration: step++ } });
      else {
        clearInterval(timer);
        writer.append({ type: "completed", payload: { reason: null, result: "done" } });
        writer.close();
      }
    }, 20);
    const seen: number[] = [];
    const follower = followRun(store, writer.runId, { intervalMs: 5 });
    let next = await follower.next();
    while (!next.done) {
      seen.push(...sequences(next.value));
      next = await follower.next();
    }
    assert.equal(next.value, "completed");
    assert.deepEqual(seen, [0, 1, 2, 3, 4]);
  });
});

Deno.test("followRun() ends when run.json says the run settled, though its log has no outcome", async () => {
  await withHome(async (home, store) => {
    const { record } = install(home, "loop_tools", (all) => all.slice(0, -1));
    let count = 0;
    const follower = followRun(store, record.id, { intervalMs: 5, recordCheckMs: 0 });
    let next = await follower.next();
    while (!next.done) {
      count += next.value.events.length;
      next = await follower.next();
    }
    assert.equal(next.value, "completed");
    assert.equal(count, 36);
  });
});

Deno.test("followRun() marks interrupted a run whose owner is gone, and ends", async () => {
  await withHome(async (home, store) => {
    // Recorded while it waited; no process owns it here.
    const { record } = install(home, "approval_waiting");
    const types: string[] = [];
    const follower = followRun(store, record.id, { intervalMs: 5, recordCheckMs: 0 });
    let next = await follower.next();
    while (!next.done) {
      types.push(...next.value.events.map((event) => event.type));
      next = await follower.next();
    }
    assert.equal(next.value, "interrupted");
    assert.equal(types.length, 9);
    assert.equal(types.at(-1), "status.changed");
  });
});

Deno.test("followRun() returns null when its signal stops it first", async () => {
  await withHome(async (home, store) => {
    const writer = store.createRun({
      sessionId: "s",
      contextId: null,
      harness: "test",
      driver: "command",
      trigger: "cli",
      cwd: home,
      goal: "never ends",
    });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    const follower = followRun(store, writer.runId, { intervalMs: 5, signal: stop.signal });
    let next = await follower.next();
    while (!next.done) next = await follower.next();
    assert.equal(next.value, null);
    writer.close();
  });
});

Deno.test("PendingTracker.takeNew() announces each unanswered request once", () => {
  const lines = Deno.readTextFileSync(`${FIXTURES}approval_denied/events.jsonl`).split("\n")
    .filter(Boolean).map((line) => JSON.parse(line) as RunEvent);
  const asked = lines.findIndex((event) => event.type === "approval.requested");
  const tracker = new PendingTracker();
  for (const event of lines.slice(0, asked + 1)) tracker.add(event);
  assert.deepEqual(tracker.takeNew().map((decision) => [decision.kind, decision.id]), [
    ["approval", "approval-1"],
  ]);
  assert.deepEqual(tracker.takeNew(), []);
  for (const event of lines.slice(asked + 1)) tracker.add(event);
  assert.deepEqual(tracker.takeNew(), []);
});
