import assert from "node:assert/strict";
import { CheckedDirs, UntrustedFileError } from "../../lib/core/trust.ts";
import { ensurePrivateDir } from "../../lib/core/private_dir.ts";
import { writePrivateFileAtomic } from "../../lib/core/atomic_write.ts";
import { DataRootError } from "../../lib/core/errors.ts";
import { tempDir } from "../support/reins.ts";
import { appendPrivateLine, child, mode } from "./_private_files.ts";

// 277 and 377 take owner bits off what is made: the first directory made tells the process so
// (it is read back), and each later one — `a/b`, `a/c` — is tightened too, not only the first.
for (const umask of ["000", "022", "077", "277", "377"]) {
  Deno.test(`ensurePrivateDir() and the writers make 0700 dirs and 0600 files under umask ${umask}`, async () => {
    await using dir = await tempDir();
    const root = `${dir.path}/home`;
    await child(["make", root], umask);
    for (const path of [root, `${root}/a`, `${root}/a/b`, `${root}/a/c`]) {
      assert.equal(mode(path), 0o700, path);
    }
    for (
      const path of [`${root}/a/b/record.json`, `${root}/a/log.jsonl`, `${root}/a/c/async.json`]
    ) {
      assert.equal(mode(path), 0o600, path);
    }
  });
}

Deno.test("ensurePrivateDir() refuses a symlinked directory that points outside the root and writes nothing there", async () => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  const root = `${dir.path}/home`;
  ensurePrivateDir(root, root);
  Deno.symlinkSync(outside.path, `${root}/runs`);
  assert.throws(
    () => writePrivateFileAtomic(root, `${root}/runs/x/run.json`, "{}"),
    (error: unknown) =>
      error instanceof DataRootError && /points outside the data root/.test(error.message),
  );
  assert.throws(() => appendPrivateLine(root, `${root}/runs/events.jsonl`, "{}"), DataRootError);
  assert.deepEqual([...Deno.readDirSync(outside.path)], []);
});

Deno.test("ensurePrivateDir() follows a link that stays inside the root", async () => {
  await using dir = await tempDir();
  Deno.mkdirSync(`${dir.path}/real`);
  Deno.symlinkSync(`${dir.path}/real`, `${dir.path}/alias`);
  writePrivateFileAtomic(dir.path, `${dir.path}/alias/f`, "ok");
  assert.equal(Deno.readTextFileSync(`${dir.path}/real/f`), "ok");
});

Deno.test("ensurePrivateDir() with a CheckedDirs set looks at a directory once; without one, every time", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  const checked = new CheckedDirs();
  ensurePrivateDir(root, `${root}/a`, checked);
  Deno.chmodSync(`${root}/a`, 0o755);
  assert.deepEqual(ensurePrivateDir(root, `${root}/a`, checked), []);
  assert.equal(mode(`${root}/a`), 0o755, "remembered as checked: not looked at again");
  assert.deepEqual(ensurePrivateDir(root, `${root}/a`), [`${root}/a`]);
  assert.equal(mode(`${root}/a`), 0o700);
});

Deno.test({
  name: "ensurePrivateDir() refuses a directory another user owns instead of tightening it",
  ignore: Deno.uid() !== 0,
  async fn() {
    await using dir = await tempDir();
    Deno.mkdirSync(`${dir.path}/theirs`);
    Deno.chmodSync(`${dir.path}/theirs`, 0o777);
    Deno.chownSync(`${dir.path}/theirs`, 65534, 65534);
    assert.throws(
      () => ensurePrivateDir(dir.path, `${dir.path}/theirs/x`),
      (error: unknown) =>
        error instanceof UntrustedFileError && /owned by uid 65534/.test(error.reason),
    );
    assert.equal(Deno.statSync(`${dir.path}/theirs`).mode! & 0o777, 0o777);
  },
});
