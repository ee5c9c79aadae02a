// Locks dropped while another thread of the process starts children: a child holds a copy of
// every descriptor from fork to exec, and an flock lives as long as any copy, so a lock that is
// only closed (not unlocked) can outlive its holder by a moment — long enough for a reconciler
// to think a closed run still has its owner, or a turn to find a free context busy.
import assert from "node:assert/strict";
import { ContextLock } from "../../lib/turn/context_lock.ts";
import { runInit, storeHome } from "./_helpers.ts";

const SPAWNER = new URL("../fixtures/workers/spawner.ts", import.meta.url);

async function withSpawners(fn: () => Promise<void> | void): Promise<void> {
  const workers = [0, 1].map(() => new Worker(SPAWNER, { type: "module" }));
  const stopped = workers.map((worker) =>
    new Promise<void>((resolve) => worker.onmessage = () => resolve())
  );
  for (const worker of workers) worker.postMessage("go");
  try {
    await fn();
  } finally {
    for (const worker of workers) worker.postMessage("stop");
    await Promise.all(stopped);
    for (const worker of workers) worker.terminate();
  }
}

// regression: RunWriter.close() only closed owner.lock; a third of reconciles found the owner alive
Deno.test("a closed run's owner is gone at once, while another thread starts children", async () => {
  await using home = await storeHome();
  await withSpawners(async () => {
    let alive = 0;
    for (let i = 0; i < 100; i++) {
      const writer = home.store.createRun(runInit());
      writer.close();
      if ((await home.store.reconcileRun(writer.runId)).owner === "alive") alive++;
    }
    assert.equal(alive, 0, `${alive} of 100 closed runs still looked owned`);
  });
});

// regression: ContextLock.release() only closed turn.lock, so a free context could look busy
Deno.test("a released context is free at once, while another thread starts children", async () => {
  await using home = await storeHome();
  await withSpawners(async () => {
    let busy = 0;
    for (let i = 0; i < 300; i++) {
      const lock = await ContextLock.acquire(home.store, "ctx", { busy: "fail" });
      lock.release();
      try {
        (await ContextLock.acquire(home.store, "ctx", { busy: "fail" })).release();
      } catch (error) {
        if ((error as Error).name !== "ContextBusyError") throw error;
        busy++;
      }
    }
    assert.equal(busy, 0, `${busy} of 300 released contexts still looked busy`);
  });
});
