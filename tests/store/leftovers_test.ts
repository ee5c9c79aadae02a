// What killed processes leave behind (a run's creation cut short, temp files of atomic writes in
// run and context directories) is swept by the cheap reconciliation every command runs, never
// anything a live process is making, and at most every SWEEP_EVERY_MS.
import assert from "node:assert/strict";
import { SWEPT_META_KEY } from "../../lib/store/index_db.ts";
import { SWEEP_EVERY_MS } from "../../lib/store/liveness.ts";
import { reins } from "../support/reins.ts";
import { runInit, storeHome } from "./_helpers.ts";

const SESSION = {
  sessionId: "sess-1",
  nativeSessionId: null,
  harness: "fixture",
  driver: "command",
};
const STAGED = "01900000-0000-7000-8000-00000000000a";
const TWO_MINUTES_AGO = new Date(Date.now() - 120_000);

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A file made as a killed writer leaves it: unlocked, and `at` old. */
function plant(path: string, at: Date, text = "half a write"): string {
  Deno.writeTextFileSync(path, text);
  Deno.utimeSync(path, at, at);
  return path;
}

/** A settled run, a context, and leftovers planted in runs/.staging/, the run and the context. */
async function withLeftovers() {
  const home = await storeHome();
  const writer = home.store.createRun(runInit());
  writer.append({ type: "completed", payload: { result: "done", reason: null } });
  writer.close();
  home.store.contexts.put("ticket-7", SESSION);
  const runs = `${home.path}/runs`;
  const staged = `${runs}/.staging/${STAGED}`;
  Deno.mkdirSync(staged, { recursive: true });
  plant(`${staged}/owner.lock`, TWO_MINUTES_AGO, "4242\n");
  Deno.utimeSync(staged, TWO_MINUTES_AGO, TWO_MINUTES_AGO);
  const runTemp = plant(`${runs}/${writer.runId}/.run.json.4242.k3j9.tmp`, TWO_MINUTES_AGO);
  const contextTemp = plant(
    `${home.path}/contexts/ticket-7/.harness-session.json.4242.q1w2.tmp`,
    TWO_MINUTES_AGO,
  );
  return { home, runId: writer.runId, staged, runTemp, contextTemp };
}

Deno.test("reins runs removes a creation cut short and the temp files killed writers left", async () => {
  // regression: only reins recover removed them (and never a context's temp files)
  const left = await withLeftovers();
  await using _home = left.home;
  const result = await reins(["runs", "--json"], { home: left.home.path });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(
    { staged: exists(left.staged), runTemp: exists(left.runTemp), ctx: exists(left.contextTemp) },
    { staged: false, runTemp: false, ctx: false },
  );
  // What is not a leftover stays: the run, its files, the context's session.
  assert.deepEqual(
    [...Deno.readDirSync(`${left.home.path}/runs/${left.runId}`)].map((e) => e.name).sort(),
    ["events.jsonl", "owner.lock", "run.json"],
  );
  assert.equal(left.home.reopen().contexts.get("ticket-7")?.session_id, "sess-1");
  assert.deepEqual(JSON.parse(result.stdout).map((row: { runId: string }) => row.runId), [
    left.runId,
  ]);
});

Deno.test("reins runs leaves alone what a live process is making: a locked or young leftover", async () => {
  const left = await withLeftovers();
  await using _home = left.home;
  const runs = `${left.home.path}/runs`;
  // A creation whose owner lock this process holds (the reins child cannot take it), however old.
  using held = Deno.openSync(`${left.staged}/owner.lock`, { read: true, write: true });
  held.lockSync(true);
  // A creation just begun, before its lock file; a temp file just made; an old one still locked.
  const young = `${runs}/.staging/01900000-0000-7000-8000-00000000000b`;
  Deno.mkdirSync(young);
  const youngTemp = plant(`${runs}/${left.runId}/.run.json.4243.a1b2.tmp`, new Date());
  using lockedTemp = Deno.openSync(left.contextTemp, { read: true, write: true });
  lockedTemp.lockSync(true);
  const result = await reins(["runs"], { home: left.home.path });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(
    {
      staged: exists(left.staged),
      young: exists(young),
      youngTemp: exists(youngTemp),
      lockedTemp: exists(left.contextTemp),
      oldRunTemp: exists(left.runTemp),
    },
    { staged: true, young: true, youngTemp: true, lockedTemp: true, oldRunTemp: false },
  );
});

Deno.test("reconcileCheaply() sweeps leftovers at most every SWEEP_EVERY_MS", async () => {
  const left = await withLeftovers();
  await using home = left.home;
  await home.store.reconcileCheaply();
  assert.equal(exists(left.runTemp), false);
  // Planted after a sweep: the next commands do not look (one meta read each)…
  const again = plant(
    `${left.home.path}/runs/${left.runId}/.run.json.4244.c3d4.tmp`,
    TWO_MINUTES_AGO,
  );
  await home.store.reconcileCheaply();
  assert.equal(exists(again), true);
  // …until the interval has passed since the last sweep.
  const index = home.store.index()!;
  index.setMeta(SWEPT_META_KEY, String(Date.now() - SWEEP_EVERY_MS - 1));
  await home.store.reconcileCheaply();
  assert.equal(exists(again), false);
});

Deno.test("reconcileInterruptedRuns() removes leftovers everywhere, an older reins's .creating too", async () => {
  const left = await withLeftovers();
  await using home = left.home;
  const legacy = `${left.home.path}/runs/.01900000-0000-7000-8000-00000000000c.creating`;
  Deno.mkdirSync(legacy);
  plant(`${legacy}/owner.lock`, TWO_MINUTES_AGO, "4242\n");
  Deno.utimeSync(legacy, TWO_MINUTES_AGO, TWO_MINUTES_AGO);
  // Swept just now, so the cheap sweep would not look: recover does all the same.
  home.store.index()!.setMeta(SWEPT_META_KEY, String(Date.now()));
  const report = await home.store.reconcileInterruptedRuns();
  assert.deepEqual({ removed: report.removed, removedTemps: report.removedTemps }, {
    removed: 2,
    removedTemps: 2,
  });
  assert.deepEqual(
    [exists(left.staged), exists(legacy), exists(left.runTemp), exists(left.contextTemp)],
    [false, false, false, false],
  );
});
