import assert from "node:assert/strict";
import {
  directoryFsyncCount,
  observeDirectorySyncs,
  syncDirectoryAsync,
  syncHeldDirectory,
  syncHeldDirectoryAsync,
  writePrivateFileAtomic,
  writePrivateFileAtomicAsync,
} from "../../lib/core/atomic_write.ts";
import { DataRootError } from "../../lib/core/errors.ts";
import { tempDir } from "../support/reins.ts";
import { versionContent } from "../fixtures/private_files_child.ts";
import { appendPrivateLine, CHILD, mode } from "./_private_files.ts";

function currentVersion(file: string): number {
  try {
    return (JSON.parse(Deno.readTextFileSync(file)) as { version: number }).version;
  } catch {
    return -1;
  }
}

Deno.test("writePrivateFileAtomic() tightens a 0644 file and its 0755 dir inside the root on the first write", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  Deno.mkdirSync(`${root}/runs`, { mode: 0o755 });
  Deno.chmodSync(`${root}/runs`, 0o755);
  Deno.writeTextFileSync(`${root}/runs/run.json`, "old");
  Deno.chmodSync(`${root}/runs/run.json`, 0o644);
  writePrivateFileAtomic(root, `${root}/runs/run.json`, "new");
  assert.equal(mode(`${root}/runs`), 0o700);
  assert.equal(mode(`${root}/runs/run.json`), 0o600);
  assert.equal(Deno.readTextFileSync(`${root}/runs/run.json`), "new");
});

Deno.test("writePrivateFileAtomic() refuses a symlinked file that points outside the root", async () => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  Deno.writeTextFileSync(`${outside.path}/secret`, "keep");
  Deno.symlinkSync(`${outside.path}/secret`, `${dir.path}/run.json`);
  assert.throws(() => writePrivateFileAtomic(dir.path, `${dir.path}/run.json`, "x"), DataRootError);
  assert.throws(() => appendPrivateLine(dir.path, `${dir.path}/run.json`, "x"), DataRootError);
  assert.equal(Deno.readTextFileSync(`${outside.path}/secret`), "keep");
});

// regression: this test once failed under load with "18 !== 20": each child was given only the
// versions left up to 1,000, so a child the (starved) test process was slow to kill finished its
// work and exited before the kill. Now a child under fire always has more to write than it can
// finish, every kill must be the SIGKILL that ended its child, and a last child, never killed,
// writes the rest.
Deno.test("writePrivateFileAtomic() leaves a parseable committed version after 20 SIGKILLs mid-rewrite, then completes 1,000 versions", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  const file = `${root}/state/record.json`;
  const spawnRewriter = (from: number, count: number) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", CHILD, "rewrite", root, file, String(from), String(count)],
      stdout: "null",
      stderr: "null",
    }).spawn();
  const committed = () => {
    const text = Deno.readTextFileSync(file);
    const value = JSON.parse(text) as { version: number };
    assert.equal(text, versionContent(value.version), "the file equals one committed version");
    return value.version;
  };
  let next = 0;
  for (let kill = 1; kill <= 20; kill++) {
    // Far more versions than it can write before it is killed, however slow this process is.
    const proc = spawnRewriter(next, 1_000_000);
    // Kill once this child is busy rewriting (it has committed a version past `next`), at a
    // random moment of its writing, so kills land mid-write rather than during start-up.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && currentVersion(file) < next) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, Math.random() * 40));
    proc.kill("SIGKILL");
    const status = await proc.status;
    assert.equal(status.signal, "SIGKILL", `kill ${kill} ended its child`);
    next = committed() + 1;
  }
  const last = Math.max(next + 1, 1000);
  const status = await spawnRewriter(next, last - next).status;
  assert.ok(status.success, "the last child, never killed, finishes");
  assert.equal(committed(), last - 1);
  const leftovers = [...Deno.readDirSync(`${root}/state`)].map((e) => e.name).filter((n) =>
    n.endsWith(".tmp")
  );
  assert.deepEqual(leftovers, []);
});

Deno.test("syncDirectoryAsync() shares fsyncs between callers at once, each answered by one that started after it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const before = directoryFsyncCount();
    // Twenty at once: the first starts an fsync, the other nineteen share the one after it.
    await Promise.all(Array.from({ length: 20 }, () => syncDirectoryAsync(dir)));
    assert.equal(directoryFsyncCount() - before, 2);
    // One caller alone, and then another: each has an fsync of its own.
    await syncDirectoryAsync(dir);
    await syncDirectoryAsync(dir);
    assert.equal(directoryFsyncCount() - before, 4);
    // A caller that comes while an fsync runs is not answered by that one: it waits for the next.
    const order: string[] = [];
    const first = syncDirectoryAsync(dir).then(() => order.push("first"));
    await Promise.resolve();
    const second = syncDirectoryAsync(dir).then(() => order.push("second"));
    await Promise.all([first, second]);
    assert.deepEqual(order, ["first", "second"]);
    assert.equal(directoryFsyncCount() - before, 6);
    // Other directories are synced on their own.
    const other = await Deno.makeTempDir();
    await Promise.all([syncDirectoryAsync(dir), syncDirectoryAsync(other)]);
    assert.equal(directoryFsyncCount() - before, 8);
    await Deno.remove(other);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("new private files are looked at (a stat of the open file) only until the process knows its umask keeps 0600", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  const proto = Deno.FsFile.prototype as { statSync(): Deno.FileInfo };
  const statSync = proto.statSync;
  let stats = 0;
  proto.statSync = function (this: Deno.FsFile) {
    stats++;
    return statSync.call(this);
  };
  try {
    for (let i = 0; i < 3; i++) writePrivateFileAtomic(root, `${root}/d/f${i}.json`, "{}");
    await writePrivateFileAtomicAsync(root, `${root}/d/async.json`, "{}");
  } finally {
    proto.statSync = statSync;
  }
  // This process's umask (022 or 077 under the test runner) keeps 0600: the first new file at
  // most tells it so.
  assert.ok(stats <= 1, `${stats} stats for 4 new files`);
  for (const name of ["f0.json", "f1.json", "f2.json", "async.json"]) {
    assert.equal(mode(`${root}/d/${name}`), 0o600, name);
  }
});

Deno.test("syncHeldDirectory(Async) fsyncs the handle held, opening nothing; a closed one, the directory by its path", async () => {
  await using dir = await tempDir();
  const synced: string[] = [];
  using _observed = observeDirectorySyncs((path) => synced.push(path));
  const opens: string[] = [];
  const openSync = Deno.openSync;
  const handle = Deno.openSync(dir.path, { read: true });
  (Deno as { openSync: typeof Deno.openSync }).openSync = (path, options) => {
    opens.push(String(path));
    return openSync(path, options);
  };
  try {
    syncHeldDirectory(handle, dir.path);
    await syncHeldDirectoryAsync(handle, dir.path);
    assert.deepEqual(opens, [], "the directory was opened again");
    handle.close();
    const before = directoryFsyncCount();
    syncHeldDirectory(handle, dir.path);
    await syncHeldDirectoryAsync(handle, dir.path);
    assert.deepEqual(opens, [dir.path, dir.path], "a closed handle: synced by its path");
    assert.equal(directoryFsyncCount() - before, 1, "the async one through syncDirectoryAsync");
  } finally {
    (Deno as { openSync: typeof Deno.openSync }).openSync = openSync;
  }
  assert.deepEqual(synced, [dir.path, dir.path, dir.path, dir.path]);
});
