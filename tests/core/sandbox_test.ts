// What a refusal says when Deno's own words name nothing, and the check of the launcher's cached
// sandbox that main.ts makes before it runs.
import assert from "node:assert/strict";
import { launcherCacheRefusal, sandboxRefusal } from "../../lib/core/sandbox.ts";
import { tempDir } from "../support/reins.ts";

// regression: a link Deno refused came out as "The sandbox refused some access to a resource:
// scripts/permissions.ts does not grant it".
Deno.test("regression: sandboxRefusal() says a link was refused when Deno's message names none", () => {
  const refusal = sandboxRefusal(
    new Deno.errors.NotCapable(
      "Deno.symlink() requires unscoped --allow-read and --allow-write permissions; path-scoped " +
        "grants (e.g. --allow-write=<path>) are not supported because a symlink's target is only " +
        "resolved when the link is traversed",
    ),
  );
  assert.equal(refusal.exitCode, 4);
  assert.equal(refusal.kind, "link");
  assert.equal(
    refusal.message,
    "The sandbox refused to create a symbolic link: Deno lets a program make links only with " +
      "read and write access everywhere, which reins never has",
  );
});

Deno.test("launcherCacheRefusal() refuses an entry others may write, another name of a file, or none", async () => {
  await using dir = await tempDir();
  const entry = `${dir.path}/entry`;
  await Deno.writeTextFile(entry, "x\n", { mode: 0o600 });
  assert.equal(launcherCacheRefusal(entry), null);
  await Deno.chmod(entry, 0o620);
  assert.match(launcherCacheRefusal(entry)!.message, /may be written by others \(mode 0620\)/);
  await Deno.chmod(entry, 0o600);
  await Deno.link(entry, `${dir.path}/other`);
  assert.match(launcherCacheRefusal(entry)!.message, /has 2 names/);
  await Deno.remove(`${dir.path}/other`);
  await Deno.remove(entry);
  await Deno.symlink(`${dir.path}/elsewhere`, entry);
  assert.match(launcherCacheRefusal(entry)!.message, /is not a plain file/);
  await Deno.remove(entry);
  const gone = launcherCacheRefusal(entry)!;
  assert.equal(gone.exitCode, 4);
  assert.match(
    gone.message,
    /was removed as reins started \(.*run again\): reins did not run under it$/,
  );
});
