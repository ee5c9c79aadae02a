// The context lock as files on disk: an flock on the context's directory, no lock file; an older
// reins's turn.lock still respected; a directory removed while a turn waited made anew.
import assert from "node:assert/strict";
import { ContextLock } from "../../lib/turn/context_lock.ts";
import { openStore } from "../../lib/store/store.ts";
import { runInit, storeHome } from "../store/_helpers.ts";

const SESSION = { sessionId: "s-1", nativeSessionId: null, harness: "h", driver: "command" };

Deno.test("ContextLock.acquire() locks the context's directory and makes no file in it", async () => {
  // regression: each new context's lock made contexts/<id>/turn.lock, a file (an inode) a turn
  await using home = await storeHome();
  const dir = `${home.path}/contexts/ctx`;
  const lock = await ContextLock.acquire(home.store, "ctx");
  assert.deepEqual([...Deno.readDirSync(dir)], [], "the lock made a file");
  // Held on the directory itself: another open file of it cannot take it.
  const other = Deno.openSync(dir, { read: true });
  try {
    assert.equal(other.tryLockSync(true), false, "the directory is not locked");
    lock.release();
    assert.equal(other.tryLockSync(true), true, "released, the directory is free");
    other.unlockSync();
  } finally {
    other.close();
  }
});

Deno.test("ContextLock.acquire() names the holder's run from the index: its context's live run", async () => {
  await using home = await storeHome();
  const lock = await ContextLock.acquire(home.store, "ctx");
  await assert.rejects(
    () => ContextLock.acquire(home.store, "ctx", { busy: "fail" }),
    (error: Error & { holderRunId?: string | null }) =>
      error.name === "ContextBusyError" && error.holderRunId === null,
    "before the holder has made its run, none is named",
  );
  // A settled run of the context (owner gone) is not the holder; the live one is.
  const old = home.store.createRun(runInit({ contextId: "ctx" }));
  old.close();
  using live = home.store.createRun(runInit({ contextId: "ctx" }));
  const other = home.reopen();
  await assert.rejects(
    () => ContextLock.acquire(other, "ctx", { busy: "fail" }),
    (error: Error & { holderRunId?: string | null }) =>
      error.name === "ContextBusyError" && error.holderRunId === live.runId,
  );
  lock.release();
});

Deno.test("ContextLock.acquire() waits for an older reins's turn.lock where there is one", async () => {
  // An older reins locked contexts/<id>/turn.lock and wrote its run there.
  await using home = await storeHome();
  const dir = `${home.path}/contexts/ctx`;
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const older = Deno.openSync(`${dir}/turn.lock`, { read: true, write: true, create: true });
  older.lockSync(true);
  older.writeSync(new TextEncoder().encode("older-run\n"));
  try {
    await assert.rejects(
      () => ContextLock.acquire(home.store, "ctx", { busy: "fail" }),
      (error: Error & { holderRunId?: string | null }) =>
        error.name === "ContextBusyError" && error.holderRunId === "older-run",
    );
    const seen: (string | null)[] = [];
    const waiting = ContextLock.acquire(home.store, "ctx", { onBusy: (id) => seen.push(id) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(seen, ["older-run"]);
    older.unlockSync();
    (await waiting).release();
  } finally {
    older.close();
  }
});

Deno.test("ContextMap.forget() leaves a held context's directory; a waiter finds a removed one made anew", async () => {
  await using home = await storeHome();
  const dir = `${home.path}/contexts/ctx`;
  const lock = await ContextLock.acquire(home.store, "ctx");
  home.store.contexts.put("ctx", SESSION);
  assert.equal(home.store.contexts.forget("ctx"), "s-1");
  assert.ok(Deno.statSync(dir).isDirectory, "a held context's directory was removed");
  // A turn waits; meanwhile the directory it opened is removed (forgotten with nobody holding it,
  // or by hand): once it has the lock it sees the directory is not the context's any more.
  const waiting = ContextLock.acquire(home.reopen(), "ctx");
  await new Promise((resolve) => setTimeout(resolve, 30));
  Deno.removeSync(dir);
  lock.release();
  const next = await waiting;
  // What it holds is the context's directory as it is now, made again.
  const other = Deno.openSync(dir, { read: true });
  try {
    assert.equal(other.tryLockSync(true), false, "it holds a directory removed");
  } finally {
    other.close();
  }
  // Free, forget removes the empty directory.
  next.release();
  home.store.contexts.put("ctx", SESSION);
  home.store.contexts.forget("ctx");
  assert.throws(() => Deno.statSync(dir), Deno.errors.NotFound);
});

Deno.test("ContextLock.acquire() makes again a context's directory its store made and a forget removed", async () => {
  // regression: the store remembered the directory as made, so the next turn on a forgotten
  // context (reins serve's ForgetContext, then a message) failed to open it
  await using home = await storeHome();
  (await ContextLock.acquire(home.store, "ctx")).release();
  home.store.contexts.put("ctx", SESSION);
  home.store.contexts.forget("ctx");
  assert.throws(() => Deno.statSync(`${home.path}/contexts/ctx`), Deno.errors.NotFound);
  const again = await ContextLock.acquire(home.store, "ctx");
  assert.ok(Deno.statSync(`${home.path}/contexts/ctx`).isDirectory);
  again.release();
});

Deno.test("ContextLock.made: the lock made the context's directory and took it at once; not for one there, nor after a wait", async () => {
  await using home = await storeHome();
  // A store's first context is looked at as any other (contexts/ is made private then, after
  // its entry is vetted); from then on a new one is made at once.
  const looked = await ContextLock.acquire(home.store, "ctx-0");
  assert.equal(looked.made, false);
  looked.release();
  const first = await ContextLock.acquire(home.store, "ctx");
  assert.equal(first.made, true, "a new context: made here, nothing in it to read");
  // Another store (another process's view) finds it there, and waits for the holder: by the time
  // it holds the directory, the holder may have written its session there.
  const other = home.reopen();
  const waiting = ContextLock.acquire(other, "ctx");
  await new Promise((resolve) => setTimeout(resolve, 30));
  first.release();
  const second = await waiting;
  assert.equal(second.made, false);
  second.release();
  // A context used before, by this store or another.
  const again = await ContextLock.acquire(home.store, "ctx");
  assert.equal(again.made, false);
  again.release();
  const there = await ContextLock.acquire(home.reopen(), "ctx");
  assert.equal(there.made, false);
  there.release();
});

Deno.test("a turn's session on a context whose directory another store made while it waited continues that store's session", async () => {
  // Two stores race for a new context: the one that waited must read what the first wrote.
  await using home = await storeHome();
  (await ContextLock.acquire(home.store, "ctx-0")).release();
  const first = await ContextLock.acquire(home.store, "ctx");
  assert.equal(first.made, true);
  const other = home.reopen();
  (await ContextLock.acquire(other, "ctx-0")).release();
  const waiting = ContextLock.acquire(other, "ctx");
  await new Promise((resolve) => setTimeout(resolve, 30));
  await home.store.contexts.putAsync("ctx", SESSION, 1_000, { fresh: first.made });
  first.release();
  const second = await waiting;
  try {
    assert.equal(other.contexts.get("ctx", { fresh: second.made })?.session_id, "s-1");
  } finally {
    second.release();
  }
});

Deno.test("a store's first turn vets a context's entry before it tightens contexts/: one others could have planted stays unused", async () => {
  // regression (this branch's first makeDir): contexts/ was made private before the entry was
  // vetted, so an entry in a group-writable contexts/ read as trustworthy once tightened
  await using home = await storeHome();
  home.store.contexts.put("ctx", SESSION);
  Deno.chmodSync(`${home.path}/contexts`, 0o770);
  const warnings: string[] = [];
  using store = openStore(home.path, { warn: (message) => warnings.push(message) });
  const lock = await ContextLock.acquire(store, "ctx");
  try {
    assert.equal(Deno.statSync(`${home.path}/contexts`).mode! & 0o777, 0o700, "tightened");
    assert.equal(store.contexts.get("ctx", { fresh: lock.made }), null, "the entry was used");
    assert.equal(warnings.filter((w) => /ignoring the session of context 'ctx'/.test(w)).length, 1);
  } finally {
    lock.release();
  }
});
