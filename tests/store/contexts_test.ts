import assert from "node:assert/strict";
import { ContextMap, readHarnessSession } from "../../lib/store/contexts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { openStore } from "../../lib/store/store.ts";
import { tempDir } from "../support/reins.ts";

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
  assert.deepEqual(onDisk, {
    type: "reins.harness-session",
    session_id: "sess-1",
    native_session_id: null,
    harness: "fixture-harness",
    driver: "command",
    created_ms: 1_000,
    updated_ms: 1_000,
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
