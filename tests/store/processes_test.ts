// The store against real processes: many appending to one run at once, a writer killed with
// SIGKILL at random moments, and a live run that another process's recover must not touch.
import assert from "node:assert/strict";
import { openStore } from "../../lib/store/store.ts";
import { reins } from "../support/reins.ts";
import { readLine, runChild, runInit, spawnChild, storeHome } from "./_helpers.ts";

Deno.test("RunAppender.append() gives 8 processes × 2,000 events distinct, gap-free sequences", async () => {
  await using home = await storeHome();
  using owner = home.store.createRun(runInit());
  const workers = Array.from({ length: 8 }, (_, w) => w);
  await Promise.all(
    workers.map((w) => runChild(["append", home.path, owner.runId, `${w}`, "2000"])),
  );
  const read = home.store.readEvents(owner.runId);
  assert.deepEqual(read.problems, []);
  assert.equal(read.tornLine, null);
  assert.equal(read.events.length, 1 + 8 * 2000);
  assert.deepEqual(read.events.map((e) => e.sequence), read.events.map((_, i) => i));
  for (const w of workers) {
    const mine = read.events
      .map((e) => e.payload as { worker?: number; index?: number })
      .filter((p) => p.worker === w)
      .map((p) => p.index);
    assert.deepEqual(mine, Array.from({ length: 2000 }, (_, i) => i), `worker ${w}`);
  }
  assert.equal(owner.append({ type: "heartbeat", payload: { iteration: 1 } }).sequence, 16_001);
});

/** One trial: a child appends up to 1,000 events and is killed at a random moment. */
async function killTrial(home: string, spinMs: number, killAfterMs: number): Promise<void> {
  const child = spawnChild(["own", home, "1000", String(spinMs)]);
  const reader = child.stdout.getReader();
  const runId = await readLine(reader);
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  child.kill("SIGKILL");
  await child.status;
  reader.releaseLock();
  await child.stdout.cancel();
  await child.stderr.cancel();
  await child.stdin.close().catch(() => {});

  const recover = await reins(["recover", "--json"], { home });
  assert.equal(recover.code, 0, recover.stderr);
  assert.ok(JSON.parse(recover.stdout).interrupted.includes(runId), recover.stdout);

  using store = openStore(home);
  const read = store.readEvents(runId);
  assert.deepEqual(read.problems, [], "every complete line is a valid event");
  assert.equal(read.tornLine, null, "recover's append moved a torn tail aside");
  const sequences = read.events.map((e) => e.sequence);
  assert.deepEqual(sequences, sequences.map((_, i) => i), "gap-free from 0");
  const last = read.events.at(-1)!;
  assert.equal(last.type, "status.changed");
  assert.equal((last.payload as { status: string }).status, "interrupted");
  const record = store.loadRun(runId);
  assert.equal(record.status, "interrupted");
  assert.equal(record.endedAt, last.timestamp);
  const next = store.appendToRun(runId, { type: "heartbeat", payload: { iteration: 0 } });
  assert.equal(next.sequence, last.sequence + 1);
}

Deno.test("reins recover after SIGKILL at a random moment leaves a valid, gap-free, interrupted log (20 trials)", async () => {
  await using home = await storeHome();
  // About 0.3 ms between appends spreads 1,000 of them over ~0.3 s; kills land across it.
  const trials = Array.from({ length: 20 }, () => Math.floor(Math.random() * 350));
  // Two at a time, each in a data root of its own (one's recover would reconcile the other's).
  for (let i = 0; i < trials.length; i += 2) {
    await Promise.all(
      trials.slice(i, i + 2).map((ms, j) => killTrial(`${home.path}/${i + j}`, 0.3, ms)),
    );
  }
});

Deno.test("reins recover and reins runs never interrupt a run whose owner is alive", async () => {
  await using home = await storeHome();
  const child = spawnChild(["own", home.path, "5", "0"]);
  const reader = child.stdout.getReader();
  const buffered = { text: "" };
  const runId = await readLine(reader, buffered);
  assert.equal(await readLine(reader, buffered), "done");
  try {
    assert.equal(home.store.ownerState(runId), "alive");
    const recover = await reins(["recover", "--json"], { home: home.path });
    assert.equal(recover.code, 0, recover.stderr);
    const report = JSON.parse(recover.stdout);
    assert.deepEqual(report.live, [runId]);
    assert.deepEqual(report.interrupted, []);
    const runs = await reins(["runs", "--json"], { home: home.path });
    assert.equal(JSON.parse(runs.stdout)[0].status, "running");
    assert.equal(home.store.loadRun(runId).status, "running");
    assert.equal(home.store.readEvents(runId).events.length, 6);
  } finally {
    await child.stdin.close();
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel();
    await child.stderr.cancel();
  }
  // Its process gone without settling the run, the next command marks it interrupted.
  const runs = await reins(["runs", "--json"], { home: home.path });
  assert.equal(JSON.parse(runs.stdout)[0].status, "interrupted");
  assert.match(runs.stderr, new RegExp(`marked interrupted .*${runId}`));
});
