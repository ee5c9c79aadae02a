import assert from "node:assert/strict";
import { uniquePrefix } from "../../lib/store/list.ts";
import type { Store } from "../../lib/store/store.ts";
import { runInit, storeHome } from "./_helpers.ts";
import { exists } from "../../lib/store/run_files.ts";

/** Makes runs with the given inits, settling those with a status, oldest first. */
function makeRuns(store: Store, specs: { context?: string; session?: string; settle?: boolean }[]) {
  return specs.map((spec) => {
    const writer = store.createRun(
      runInit({ contextId: spec.context ?? null, sessionId: spec.session ?? "s" }),
    );
    if (spec.settle) writer.append({ type: "completed", payload: { reason: null, result: null } });
    writer.close();
    return writer.runId;
  });
}

Deno.test("resolveRun() finds a run by its id, a unique prefix of it, or last", async () => {
  await using home = await storeHome();
  const [first, second] = makeRuns(home.store, [{}, {}]);
  assert.equal(home.store.resolveRun(first).id, first);
  assert.equal(home.store.resolveRun("last").id, second);
  const prefix = uniquePrefix(first, [second]);
  assert.equal(home.store.resolveRunId(prefix), first);
});

Deno.test("resolveRun() throws UsageError naming the candidates when a prefix is ambiguous", async () => {
  await using home = await storeHome();
  const ids = makeRuns(home.store, [{}, {}, {}]);
  const shared = ids[0].slice(0, 4);
  assert.ok(ids.every((id) => id.startsWith(shared)));
  assert.throws(() => home.store.resolveRun(shared), {
    name: "UsageError",
    message: `Cannot tell which run "${shared}" means: 3 run ids start with it (${ids.join(", ")})`,
  });
});

Deno.test("resolveRun() throws NotFoundError for no match and for last with no runs", async () => {
  await using home = await storeHome();
  assert.throws(() => home.store.resolveRun("last"), { name: "NotFoundError" });
  makeRuns(home.store, [{}]);
  assert.throws(() => home.store.resolveRun("ffff"), {
    name: "NotFoundError",
    message: `No run matches "ffff" in ${home.path}`,
  });
});

Deno.test("resolveRun() refuses a reference that cannot be a run id before touching files", async () => {
  await using home = await storeHome();
  for (const ref of ["../x", "a/b", "", ".hidden"]) {
    assert.throws(() => home.store.resolveRun(ref), { name: "UsageError" }, ref);
  }
});

Deno.test("resolveRun() finds a run whose directory the index does not know yet", async () => {
  await using home = await storeHome();
  const [id] = makeRuns(home.store, [{}]);
  // A copy of the run under another id, made behind the index's back.
  // Its last four hex digits differ from the original's first of them, so that 33 characters
  // name the copy alone (regression: "beef" collided one time in sixteen).
  const copy = `${id.slice(0, -4)}${id.at(-4) === "b" ? "ceef" : "beef"}`;
  Deno.mkdirSync(`${home.path}/runs/${copy}`);
  for (const file of ["run.json", "events.jsonl"]) {
    // A run still running has no run.json yet (its record is written when it first changes).
    if (!exists(`${home.path}/runs/${id}/${file}`)) continue;
    const text = Deno.readTextFileSync(`${home.path}/runs/${id}/${file}`).replaceAll(id, copy);
    Deno.writeTextFileSync(`${home.path}/runs/${copy}/${file}`, text);
  }
  assert.equal(home.store.resolveRun(copy.slice(0, 33)).id, copy);
});

Deno.test("listRuns() lists newest first, filtered by context, session, status and activity", async () => {
  await using home = await storeHome();
  const ids = makeRuns(home.store, [
    { context: "a", session: "s1", settle: true },
    { context: "b", session: "s1" },
    { context: "a", session: "s2" },
    { context: "a", session: "s2", settle: true },
  ]);
  const list = (filter: Parameters<Store["listRuns"]>[0]) =>
    home.store.listRuns(filter).map((r) => ids.indexOf(r.id));
  assert.deepEqual(list({}), [3, 2, 1, 0]);
  assert.deepEqual(list({ contextId: "a" }), [3, 2, 0]);
  assert.deepEqual(list({ sessionId: "s1" }), [1, 0]);
  assert.deepEqual(list({ status: "completed" }), [3, 0]);
  assert.deepEqual(list({ status: ["running", "completed"], contextId: "a" }), [3, 2, 0]);
  assert.deepEqual(list({ active: true }), [2, 1]);
  assert.deepEqual(list({ limit: 2 }), [3, 2]);
  assert.deepEqual(list({ contextId: "nope" }), []);
});

Deno.test("listRuns() takes 20 by default and refuses a limit outside 1 to 10000", async () => {
  await using home = await storeHome();
  makeRuns(home.store, Array.from({ length: 22 }, () => ({})));
  assert.equal(home.store.listRuns().length, 20);
  assert.equal(home.store.listRuns({ limit: 10_000 }).length, 22);
  for (const limit of [0, 10_001, 1.5]) {
    assert.throws(() => home.store.listRuns({ limit }), { name: "UsageError" });
  }
  assert.throws(() => home.store.listRuns({ status: "done" }), {
    name: "UsageError",
    message: 'Unknown run status "done"',
  });
});

Deno.test("listRunJson() lists nothing and creates nothing when the data root does not exist", async () => {
  await using home = await storeHome();
  assert.deepEqual(await home.store.listRunJson(), { records: [], prefixes: [] });
  assert.deepEqual(home.store.listRuns(), []);
  assert.throws(() => Deno.statSync(home.path), Deno.errors.NotFound);
});

Deno.test("uniquePrefix() is the shortest prefix no neighbour shares, 8 characters at least", () => {
  assert.equal(uniquePrefix("0190abcd-1234", ["0190abcd-1200", "0190abce-0000"]), "0190abcd-123");
  assert.equal(uniquePrefix("0190abcd-1234", [null, "ffff"]), "0190abcd");
  assert.equal(uniquePrefix("abc", ["abc"]), "abc");
});

Deno.test("listRunJson() gives the same id prefixes for a long listing as for a short one", async () => {
  await using home = await storeHome();
  makeRuns(home.store, Array.from({ length: 105 }, () => ({})));
  const short = await home.store.listRunJson({ limit: 100 }, { prefixes: true });
  const long = await home.store.listRunJson({ limit: 105 }, { prefixes: true });
  assert.deepEqual(long.prefixes.slice(0, 100), short.prefixes);
  assert.equal(new Set(long.prefixes).size, 105);
  for (const [i, prefix] of long.prefixes.entries()) {
    assert.equal(home.store.resolveRunId(prefix), JSON.parse(long.records[i]).id);
  }
  assert.deepEqual((await home.store.listRunJson({ limit: 3 })).prefixes, []);
});

Deno.test("listRunJson() gives each row the prefix uniqueRunPrefix gives, rows close together or far apart", async () => {
  await using home = await storeHome();
  // Contexts a and b take turns; c has two runs at each end, with 36 others between them.
  const specs = Array.from({ length: 40 }, (_, i) => ({
    context: i < 2 || i >= 38 ? "c" : i % 2 === 0 ? "a" : "b",
  }));
  makeRuns(home.store, specs);
  for (const filter of [{ limit: 50 }, { limit: 5 }, { contextId: "a" }, { contextId: "c" }]) {
    const listed = await home.store.listRunJson(filter, { prefixes: true });
    assert.ok(listed.records.length > 1, JSON.stringify(filter));
    const ids = listed.records.map((record) => JSON.parse(record).id as string);
    assert.deepEqual(
      listed.prefixes,
      ids.map((id) => home.store.uniqueRunPrefix(id)),
      JSON.stringify(filter),
    );
  }
});

Deno.test("RunIndex.idsAround() gives the ids from the one before the lowest to the one after the highest, or null past its limit", async () => {
  await using home = await storeHome();
  const ids = makeRuns(home.store, Array.from({ length: 12 }, () => ({}))).sort();
  const index = home.store.index()!;
  assert.deepEqual(index.idsAround(ids[3], ids[7], 100), ids.slice(2, 9));
  assert.deepEqual(index.idsAround(ids[5], ids[5], 100), ids.slice(4, 7));
  assert.deepEqual(index.idsAround(ids[0], ids[2], 100), ids.slice(0, 4));
  assert.deepEqual(index.idsAround(ids[9], ids[11], 100), ids.slice(8));
  assert.deepEqual(index.idsAround(ids[3], ids[7], 7), ids.slice(2, 9));
  assert.equal(index.idsAround(ids[3], ids[7], 6), null);
});

// regression: approval hints named the run by its first 8 characters, which runs started within
// about a minute of each other share (the ids are time-ordered).
Deno.test("uniqueRunPrefix() is the shortest prefix, 8 characters at least, that names the run alone", async () => {
  await using home = await storeHome();
  const ids = makeRuns(home.store, [{}, {}, {}]);
  for (const id of ids) {
    const prefix = home.store.uniqueRunPrefix(id);
    assert.ok(id.startsWith(prefix) && prefix.length >= 8, prefix);
    assert.deepEqual(ids.filter((other) => other.startsWith(prefix)), [id]);
    assert.equal(home.store.resolveRunId(prefix), id);
    // One character less would name another run too (unless 8 is already the floor).
    if (prefix.length > 8) {
      const shorter = prefix.slice(0, -1);
      assert.ok(ids.filter((other) => other.startsWith(shorter)).length > 1, shorter);
    }
  }
  // Three runs made within a millisecond or so share their first 8 characters.
  assert.ok(home.store.uniqueRunPrefix(ids[1]).length > 8);
});
