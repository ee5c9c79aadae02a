import assert from "node:assert/strict";
import {
  CheckedDirs,
  readPrivateText,
  trustProblem,
  UntrustedFileError,
} from "../../lib/core/trust.ts";
import { writePrivateFileAtomic } from "../../lib/core/atomic_write.ts";
import { PrivateLog } from "../../lib/core/private_log.ts";
import { tempDir } from "../support/reins.ts";

Deno.test("readPrivateText() refuses a file others may write, or one in a directory they may write", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  writePrivateFileAtomic(root, `${root}/a/file.json`, "{}");
  assert.equal(readPrivateText(root, `${root}/a/file.json`), "{}");
  Deno.chmodSync(`${root}/a/file.json`, 0o620);
  assert.throws(
    () => readPrivateText(root, `${root}/a/file.json`),
    (error: unknown) =>
      error instanceof UntrustedFileError &&
      error.reason === "it is writable by its group (mode 0620)",
  );
  Deno.chmodSync(`${root}/a/file.json`, 0o600);
  Deno.chmodSync(`${root}/a`, 0o703);
  assert.equal(
    trustProblem(root, `${root}/a/file.json`),
    `its directory ${root}/a is writable by others (mode 0703)`,
  );
  assert.throws(() => PrivateLog.open(root, `${root}/a/file.json`), UntrustedFileError);
  // Writing replaces the file with one of ours and tightens the directory: then it is trusted.
  writePrivateFileAtomic(root, `${root}/a/file.json`, "[]");
  assert.equal(readPrivateText(root, `${root}/a/file.json`), "[]");
  assert.equal(trustProblem(root, `${root}/missing.json`), null);
});

// regression: the directories found trustworthy were remembered by the module, for every data
// root and every Store of the process alike, until a test called forgetCheckedDirs()
Deno.test("trustProblem() remembers trusted directories in the CheckedDirs it is given, and only there", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  writePrivateFileAtomic(root, `${root}/a/file.json`, "{}");
  const checked = new CheckedDirs();
  assert.equal(trustProblem(root, `${root}/a/file.json`, checked), null);
  assert.ok(checked.trusted.has(`${root}/a`) && checked.trusted.has(root));
  Deno.chmodSync(`${root}/a`, 0o703);
  assert.equal(trustProblem(root, `${root}/a/file.json`, checked), null, "remembered as trusted");
  const widened = `its directory ${root}/a is writable by others (mode 0703)`;
  assert.equal(trustProblem(root, `${root}/a/file.json`, new CheckedDirs()), widened);
  assert.equal(trustProblem(root, `${root}/a/file.json`), widened);
  assert.throws(() => readPrivateText(root, `${root}/a/file.json`), UntrustedFileError);
});
