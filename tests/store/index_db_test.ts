import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { DIRTY_FILE, markIndexDirty, openIndex } from "../../lib/store/index_db.ts";
import type { Store } from "../../lib/store/store.ts";
import { modeOf, runInit, storeHome } from "./_helpers.ts";

/** Makes runs, then lists them once, so that the index file exists and holds them. */
function makeRuns(store: Store, count: number): string[] {
  const made = Array.from({ length: count }, (_, i) => {
    const writer = store.createRun(runInit({ goal: `goal ${i}` }));
    writer.append({ type: "completed", payload: { reason: null, result: null } });
    writer.close();
    return writer.runId;
  }).reverse();
  store.listRuns({ limit: 100 });
  return made;
}

/** Closes the store (its index connection) and removes the index files (SQLite may have removed
 * some): what the next process to open the data root finds. */
function dropIndex(store: Store): void {
  store.close();
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      Deno.removeSync(`${store.home}/index.sqlite${suffix}`);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

const ids = (store: Store) => store.listRuns({ limit: 100 }).map((r) => r.id);

Deno.test("openIndex() rebuilds a missing index from the run files", async () => {
  await using home = await storeHome();
  const made = makeRuns(home.store, 3);
  dropIndex(home.store);
  const store = home.reopen();
  assert.deepEqual((await store.listRunJson()).records.map((t) => JSON.parse(t).id), made);
  assert.deepEqual(ids(store), made);
});

Deno.test("openIndex() replaces a corrupt index and rebuilds it from the run files", async () => {
  await using home = await storeHome();
  const made = makeRuns(home.store, 3);
  dropIndex(home.store);
  Deno.writeTextFileSync(`${home.path}/index.sqlite`, "this is not a database ".repeat(300));
  assert.deepEqual(ids(home.reopen()), made);
  const check = new DatabaseSync(`${home.path}/index.sqlite`);
  assert.deepEqual({ ...check.prepare("PRAGMA integrity_check").get() }, { integrity_check: "ok" });
  check.close();
});

Deno.test("openIndex() rebuilds an index of another schema version", async () => {
  await using home = await storeHome();
  const made = makeRuns(home.store, 2);
  home.store.close();
  const db = new DatabaseSync(`${home.path}/index.sqlite`);
  db.exec("DELETE FROM runs; PRAGMA user_version = 99;");
  db.close();
  assert.deepEqual(ids(home.reopen()), made);
});

Deno.test("openIndex() adds a run directory made behind its back and drops a removed one", async () => {
  await using home = await storeHome();
  const [newest, middle, oldest] = makeRuns(home.store, 3);
  Deno.removeSync(`${home.path}/runs/${middle}`, { recursive: true });
  const copy = `${newest.slice(0, -4)}beef`;
  Deno.mkdirSync(`${home.path}/runs/${copy}`);
  for (const file of ["run.json", "events.jsonl"]) {
    const text = Deno.readTextFileSync(`${home.path}/runs/${newest}/${file}`);
    Deno.writeTextFileSync(`${home.path}/runs/${copy}/${file}`, text.replaceAll(newest, copy));
  }
  assert.deepEqual(new Set(ids(home.store)), new Set([copy, newest, oldest]));
});

Deno.test("listRunJson() reads the index, not the run files", async () => {
  await using home = await storeHome();
  const made = makeRuns(home.store, 5);
  await home.store.listRunJson();
  for (const id of made) Deno.writeTextFileSync(`${home.path}/runs/${id}/run.json`, "garbage");
  const { records } = await home.store.listRunJson();
  assert.deepEqual(
    records.map((text) => JSON.parse(text).goal),
    [4, 3, 2, 1, 0].map((i) => `goal ${i}`),
  );
});

Deno.test("openIndex() rebuilds the whole index after a writer left index.dirty", async () => {
  await using home = await storeHome();
  const [id] = makeRuns(home.store, 1);
  const path = `${home.path}/runs/${id}/run.json`;
  Deno.writeTextFileSync(path, Deno.readTextFileSync(path).replace('"goal 0"', '"edited"'));
  assert.equal(home.store.listRuns()[0].goal, "goal 0", "an edit alone is not noticed");
  markIndexDirty(home.store);
  assert.equal(
    (await home.store.listRunJson()).records.map((t) => JSON.parse(t).goal)[0],
    "edited",
  );
  assert.throws(() => Deno.statSync(`${home.path}/${DIRTY_FILE}`), Deno.errors.NotFound);
});

Deno.test("reconcileInterruptedRuns() with reindex rebuilds rows edited behind the index's back", async () => {
  await using home = await storeHome();
  const [id] = makeRuns(home.store, 1);
  const path = `${home.path}/runs/${id}/run.json`;
  Deno.writeTextFileSync(path, Deno.readTextFileSync(path).replace('"goal 0"', '"edited"'));
  const report = await home.store.reconcileInterruptedRuns({ reindex: true });
  assert.equal(report.reindexed, 1);
  assert.equal(home.store.listRuns()[0].goal, "edited");
});

Deno.test("DataRoot.connectIndex() keeps the index files private, 0600", async () => {
  await using home = await storeHome();
  makeRuns(home.store, 1);
  for (const suffix of ["", "-wal", "-shm"]) {
    assert.equal(modeOf(`${home.path}/index.sqlite${suffix}`), 0o600, suffix);
  }
  home.store.close();
  Deno.chmodSync(`${home.path}/index.sqlite`, 0o644);
  home.reopen().connectIndex();
  assert.equal(modeOf(`${home.path}/index.sqlite`), 0o600);
});

Deno.test("openIndex() falls back to an index in memory when the file cannot be used", async () => {
  await using home = await storeHome();
  const made = makeRuns(home.store, 2);
  dropIndex(home.store);
  Deno.mkdirSync(`${home.path}/index.sqlite`);
  const store = home.reopen();
  const index = await openIndex(store);
  assert.equal(index?.inMemory, true);
  assert.deepEqual(ids(store), made);
});

// regression: every reins run opened SQLite (and Deno's Node layer with it) to note its record
Deno.test("noteRun() without an open index queues the run in index.pending; the next reader applies it", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit({ goal: "queued" }));
  writer.append({ type: "completed", payload: { reason: null, result: null } });
  writer.close();
  assert.equal(home.store.openedIndex(), null, "the writer opened no index");
  assert.throws(() => Deno.statSync(`${home.path}/index.sqlite`), Deno.errors.NotFound);
  const pending = Deno.readTextFileSync(`${home.path}/index.pending`).trim().split("\n");
  assert.deepEqual([...new Set(pending)], [writer.runId]);
  // Another process reads: the pending run is in its listing, settled, and the queue is empty.
  using reader = home.reopen();
  const [listed] = reader.listRuns();
  assert.deepEqual([listed.id, listed.status], [writer.runId, "completed"]);
  assert.equal(Deno.readTextFileSync(`${home.path}/index.pending`), "");
  // With the index open, a writer notes its record there at once.
  const next = reader.createRun(runInit({ goal: "direct" }));
  next.close();
  assert.equal(Deno.readTextFileSync(`${home.path}/index.pending`), "");
  assert.equal(reader.index()!.get(next.runId) !== null, true);
});

Deno.test("a run settled by a process that queued it is listed settled by reins runs", async () => {
  await using home = await storeHome();
  const writer = home.store.createRun(runInit());
  // The index knows the run as running (listed while it ran) ...
  assert.equal(home.reopen().listRuns()[0].status, "running");
  writer.append({ type: "completed", payload: { reason: null, result: null } });
  writer.close();
  // ... and learns of its outcome from the queue, not from a rebuild.
  const { records } = await home.reopen().listRunJson();
  assert.equal(JSON.parse(records[0]).status, "completed");
});
