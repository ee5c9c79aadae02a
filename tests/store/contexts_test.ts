import assert from "node:assert/strict";
import { ContextMap, readHarnessSession, sessionsFromRuns } from "../../lib/store/contexts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { openStore } from "../../lib/store/store.ts";
import { tempDir } from "../support/reins.ts";
import { observeDirectorySyncs } from "../../lib/core/atomic_write.ts";
import { ContextLock } from "../../lib/turn/context_lock.ts";

const SESSION = {
  sessionId: "sess-1",
  nativeSessionId: null,
  harness: "fixture-harness",
  driver: "command",
};

function mode(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

Deno.test("ContextMap.entryPath() gives no file to an id that is not a path segment", () => {
  const map = new ContextMap(new DataRoot("/root"));
  assert.equal(map.entryPath("../escape"), null);
  assert.equal(map.entryPath(".hidden"), null);
  assert.equal(map.entryPath("a/b"), null);
  assert.equal(map.entryPath("ctx_1"), "/root/contexts/ctx_1/harness-session.json");
});

Deno.test("ContextMap with no data root still threads and forgets in memory", () => {
  const map = new ContextMap(null);
  assert.equal(map.entryPath("ctx_1"), null);
  map.put("ctx_1", SESSION);
  assert.equal(map.get("ctx_1")?.session_id, "sess-1");
  assert.equal(map.get("ctx_2"), null);
  assert.equal(map.forget("ctx_1"), "sess-1");
  assert.equal(map.get("ctx_1"), null);
  assert.equal(map.forget("ctx_1"), null);
});

Deno.test("ContextMap.put() does not remember an empty session id", () => {
  const map = new ContextMap(null);
  assert.equal(map.put("ctx_1", { ...SESSION, sessionId: "" }), null);
  assert.equal(map.get("ctx_1"), null);
});

Deno.test("ContextMap round-trips through a data root: 0600 file, 0700 dirs, created_ms kept, updated_ms moved", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using store = openStore(home);
  const map = store.contexts;
  const first = map.put("ctx_1", SESSION, 1_000)!;
  const path = map.entryPath("ctx_1")!;
  const onDisk = readHarnessSession(path)!;
  const session = {
    driver: "command",
    harness: "fixture-harness",
    session_id: "sess-1",
    native_session_id: null,
    created_ms: 1_000,
    updated_ms: 1_000,
  };
  assert.deepEqual(onDisk, {
    type: "reins.harness-session",
    session_id: "sess-1",
    native_session_id: null,
    harness: "fixture-harness",
    driver: "command",
    created_ms: 1_000,
    updated_ms: 1_000,
    sessions: [session],
  });
  assert.deepEqual(first, onDisk);
  assert.equal(mode(path), 0o600);
  for (const d of [`${home}/contexts/ctx_1`, `${home}/contexts`, home]) {
    assert.equal(mode(d), 0o700, d);
  }

  using other = openStore(home);
  const reread = other.contexts;
  assert.equal(reread.get("ctx_1")?.session_id, "sess-1");
  reread.put("ctx_1", { ...SESSION, sessionId: "sess-2", nativeSessionId: "native-9" }, 2_000);
  const updated = readHarnessSession(path)!;
  assert.equal(updated.session_id, "sess-2");
  assert.equal(updated.native_session_id, "native-9");
  assert.equal(updated.created_ms, 1_000);
  assert.equal(updated.updated_ms, 2_000);
  assert.deepEqual(reread.list().map((e) => e.contextId), ["ctx_1"]);

  assert.equal(reread.forget("ctx_1"), "sess-2");
  assert.equal(await Deno.stat(path).catch(() => null), null);
  assert.equal(map.get("ctx_1"), null, "another store's forget is seen: the file is the truth");
  assert.equal(reread.forget("ctx_1"), null);
});

Deno.test("readHarnessSession() reads a file that is not a map entry as absent", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/harness-session.json`;
  Deno.writeTextFileSync(path, "{ not json");
  assert.equal(readHarnessSession(path), null);
  Deno.writeTextFileSync(path, '{"type":"something.else","session_id":"s"}');
  assert.equal(readHarnessSession(path), null);
  Deno.writeTextFileSync(
    path,
    '{"type":"reins.harness-session","session_id":"","native_session_id":null,"harness":"h","driver":"d","created_ms":1,"updated_ms":1}',
  );
  assert.equal(readHarnessSession(path), null);
  assert.equal(readHarnessSession(`${dir.path}/absent.json`), null);
});

Deno.test("ContextMap.put() reports an unwritable root once and goes on in memory", async () => {
  await using dir = await tempDir();
  const blocked = `${dir.path}/blocked`;
  Deno.writeTextFileSync(blocked, "not a directory");
  const reports: string[] = [];
  using store = openStore(blocked, { warn: (message) => reports.push(message) });
  const map = store.contexts;
  map.put("ctx_1", SESSION);
  map.put("ctx_1", { ...SESSION, sessionId: "sess-2" });
  assert.equal(Deno.statSync(blocked).isFile, true);
  assert.equal(map.get("ctx_1")?.session_id, "sess-2");
  assert.equal(reports.length, 1, reports.join("\n"));
  assert.match(
    reports[0],
    /^the session of context 'ctx_1' could not be written to .*; this conversation is remembered only until this process ends$/,
  );
});

const CLAUDE = {
  sessionId: "s-claude",
  nativeSessionId: "n-claude",
  harness: "claude-code",
  driver: "claude",
};
const CODEX = {
  sessionId: "s-codex",
  nativeSessionId: "thread-9",
  harness: "codex",
  driver: "codex",
};

// regression: a context held one harness session: claude then codex forgot the claude session,
// and going back to claude started over.
Deno.test("ContextMap keeps one session per driver under a context, the one used last on top", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const map = store.contexts;
  map.put("t", CLAUDE, 1_000);
  map.put("t", CODEX, 2_000);
  assert.equal(map.session("t", "claude")?.native_session_id, "n-claude");
  assert.equal(map.session("t", "codex")?.native_session_id, "thread-9");
  assert.equal(map.session("t", "gemini"), null);
  const both = map.get("t")!;
  // The top-level fields are the session used last: what a reins of before `sessions` reads.
  assert.deepEqual(
    [both.driver, both.session_id, both.native_session_id, both.created_ms, both.updated_ms],
    ["codex", "s-codex", "thread-9", 1_000, 2_000],
  );
  assert.deepEqual(both.sessions.map((s) => s.driver), ["codex", "claude"]);
  // Back to claude: its own session, its own creation time, now on top.
  map.put("t", { ...CLAUDE, nativeSessionId: "n-claude-2" }, 3_000);
  const back = readHarnessSession(map.entryPath("t")!)!;
  assert.equal(back.driver, "claude");
  assert.deepEqual(back.sessions, [
    {
      driver: "claude",
      harness: "claude-code",
      session_id: "s-claude",
      native_session_id: "n-claude-2",
      created_ms: 1_000,
      updated_ms: 3_000,
    },
    {
      driver: "codex",
      harness: "codex",
      session_id: "s-codex",
      native_session_id: "thread-9",
      created_ms: 2_000,
      updated_ms: 2_000,
    },
  ]);
  assert.deepEqual(map.list().map((e) => [e.contextId, e.sessions.length]), [["t", 2]]);
  assert.equal(map.forget("t"), "s-claude");
  assert.equal(map.session("t", "codex"), null, "forget drops every driver's session");
});

Deno.test("readHarnessSession() reads a file of one session (written before sessions) as a map of one", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const map = store.contexts;
  const path = map.entryPath("old")!;
  Deno.mkdirSync(`${dir.path}/home/contexts/old`, { recursive: true, mode: 0o700 });
  Deno.chmodSync(`${dir.path}/home`, 0o700);
  Deno.chmodSync(`${dir.path}/home/contexts`, 0o700);
  const old = {
    type: "reins.harness-session",
    session_id: "s-old",
    native_session_id: "n-old",
    harness: "claude-code",
    driver: "claude",
    created_ms: 5,
    updated_ms: 6,
  };
  Deno.writeTextFileSync(path, JSON.stringify(old), { mode: 0o600 });
  const read = map.get("old")!;
  assert.deepEqual(read.sessions, [{
    driver: "claude",
    harness: "claude-code",
    session_id: "s-old",
    native_session_id: "n-old",
    created_ms: 5,
    updated_ms: 6,
  }]);
  assert.equal(map.session("old", "claude")?.session_id, "s-old");
  // A second driver joins it; the old session is kept.
  map.put("old", CODEX, 10);
  assert.deepEqual(map.get("old")!.sessions.map((s) => [s.driver, s.session_id]), [
    ["codex", "s-codex"],
    ["claude", "s-old"],
  ]);
});

Deno.test("ContextMap.putAsync() writes what put() writes, leaving the thread free until the file is in place", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const path = store.contexts.entryPath("ctx")!;
  const writing = store.contexts.putAsync("ctx", SESSION, 1_000);
  // The new session is synced before its rename: not in place until that is done.
  assert.equal(readHarnessSession(path), null);
  const entry = await writing;
  assert.deepEqual(readHarnessSession(path), entry);
  assert.equal(mode(path), 0o600);
  assert.equal(entry?.session_id, "sess-1");
  assert.deepEqual(store.contexts.get("ctx"), entry);
  // The same session again moves updated_ms, durably too (synced before its rename).
  const again = store.contexts.putAsync("ctx", SESSION, 2_000);
  assert.equal(readHarnessSession(path)?.updated_ms, 1_000);
  assert.equal((await again)?.created_ms, 1_000);
  assert.equal(readHarnessSession(path)?.updated_ms, 2_000);
  assert.equal(await store.contexts.putAsync("ctx", { ...SESSION, sessionId: "" }), null);
});

Deno.test("sessionsFromRuns() gives each driver the session of its newest run, the newest driver on top", () => {
  const run = (
    id: string,
    driver: string,
    sessionId: string,
    startedAt: string,
    native: string | null,
  ) => ({
    id,
    sessionId,
    contextId: "c",
    nativeSessionId: native,
    parentRunId: null,
    resumedFromRunId: null,
    relation: null,
    harness: driver === "claude" ? "claude-code" : driver,
    driver,
    trigger: "cli" as const,
    cwd: "/w",
    goal: null,
    startedAt,
    endedAt: startedAt.replace(":00.000Z", ":30.000Z"),
    status: "completed" as const,
    exitCode: null,
    terminalReason: null,
  });
  const entry = sessionsFromRuns([
    run("r1", "claude", "s-old", "2026-01-01T10:00:00.000Z", "n-old"),
    run("r2", "claude", "s-claude", "2026-01-01T11:00:00.000Z", "n-claude"),
    run("r3", "codex", "s-codex", "2026-01-01T12:00:00.000Z", null),
    run("r4", "claude", "s-claude", "2026-01-01T13:00:00.000Z", null),
  ])!;
  assert.deepEqual(entry.sessions.map((s) => [s.driver, s.session_id, s.native_session_id]), [
    ["claude", "s-claude", "n-claude"],
    ["codex", "s-codex", null],
  ]);
  assert.equal(entry.session_id, "s-claude");
  assert.equal(entry.sessions[0].created_ms, Date.parse("2026-01-01T11:00:00.000Z"));
  assert.equal(entry.sessions[0].updated_ms, Date.parse("2026-01-01T13:00:30.000Z"));
  assert.equal(entry.created_ms, Date.parse("2026-01-01T11:00:00.000Z"));
  assert.equal(sessionsFromRuns([]), null);
});

Deno.test("a new context's directory is synced into contexts/ (and contexts/ into the data root) with its first session, once; a context made before costs no sync more", async () => {
  // regression: contexts/<id>/ (made by the turn's lock) was never synced into contexts/, nor
  // contexts/ into the data root, so on a filesystem that does not order a directory's creation
  // before the writes into it a power cut could lose a context's synced session with its directory
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const contexts = `${home}/contexts`;
  const synced: string[] = [];
  using _observed = observeDirectorySyncs((path) => synced.push(path));
  {
    using store = openStore(home);
    // The turn engine makes a context's directory with its lock, before the turn starts.
    const lock = await ContextLock.acquire(store, "ctx");
    assert.deepEqual(synced, [], "the lock syncs nothing");
    await store.contexts.putAsync("ctx", SESSION, 1_000);
    lock.release();
    // The file's directory, contexts/ (the new context's name) and the root (contexts/'s name).
    assert.deepEqual(synced.toSorted(), [home, contexts, `${contexts}/ctx`].toSorted());
    synced.length = 0;
    // The same context again, in the same process: only the file's own directory.
    using _again = await ContextLock.acquire(store, "ctx");
    await store.contexts.putAsync("ctx", SESSION, 2_000);
    assert.deepEqual(synced, [`${contexts}/ctx`]);
    synced.length = 0;
    // A second new context: its name in contexts/, not contexts/'s in the root (made before).
    using _other = await ContextLock.acquire(store, "ctx-2");
    store.contexts.put("ctx-2", SESSION, 3_000);
    assert.deepEqual(synced, [`${contexts}/ctx-2`, contexts]);
    synced.length = 0;
  }
  // Another process on a context made before: nothing more than the file's directory.
  using store = openStore(home);
  using _lock = await ContextLock.acquire(store, "ctx");
  await store.contexts.putAsync("ctx", SESSION, 4_000);
  assert.deepEqual(synced, [`${contexts}/ctx`]);
});
