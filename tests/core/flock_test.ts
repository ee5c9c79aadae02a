import assert from "node:assert/strict";
import { releaseLocks } from "../../lib/core/flock.ts";
import { tempDir } from "../support/reins.ts";

Deno.test("releaseLocks lets another open file take the lock, and closes every file", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/held`;
  Deno.writeTextFileSync(path, "");
  const held = Deno.openSync(path, { read: true });
  const unlocked = Deno.openSync(dir.path, { read: true }); // never locked: closed all the same
  assert.ok(held.tryLockSync(true));
  using other = Deno.openSync(path, { read: true });
  assert.equal(other.tryLockSync(true), false);
  releaseLocks([held, unlocked]);
  assert.ok(other.tryLockSync(true));
  assert.throws(() => held.statSync(), Deno.errors.BadResource);
  assert.throws(() => unlocked.statSync(), Deno.errors.BadResource);
});
