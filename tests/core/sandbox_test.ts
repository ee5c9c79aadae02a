// What a refusal says when Deno's own words name nothing.
import assert from "node:assert/strict";
import { sandboxRefusal } from "../../lib/core/sandbox.ts";

// regression: a link Deno refused came out as "The sandbox refused some access to a resource:
// scripts/permissions.ts does not grant it".
Deno.test("sandboxRefusal() says a link was refused when Deno's message names none", () => {
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
