// importLazily from the sources resolves a lib/ path, a node: module and a package of deno.json;
// in a bundle, only the loaders its entry handed over, and a name it lacks is an error that says
// so. (The bundle as a whole: tests/scripts/bundle_test.ts.)
import assert from "node:assert/strict";
import { importLazily, useBundledLoaders } from "../../lib/core/lazy_import.ts";

Deno.test("importLazily resolves lib/ paths, node: modules and packages, then a bundle's loaders alone", async () => {
  const ids = await importLazily<typeof import("../../lib/core/ids.ts")>("core/ids.ts");
  assert.equal(typeof ids.newId, "function");
  const util = await importLazily<typeof import("node:util")>("node:util");
  assert.equal(typeof util.parseArgs, "function");
  const yaml = await importLazily<typeof import("yaml")>("yaml");
  assert.equal(typeof yaml.parse, "function");

  // This file's own module instance: the loaders last for the rest of it.
  const loaded: string[] = [];
  useBundledLoaders({
    "core/ids.ts": () => {
      loaded.push("core/ids.ts");
      return Promise.resolve({ newId: () => "bundled" });
    },
  });
  const bundled = await importLazily<{ newId: () => string }>("core/ids.ts");
  assert.equal(bundled.newId(), "bundled");
  assert.deepEqual(loaded, ["core/ids.ts"]);
  await assert.rejects(
    importLazily("cli/run.ts"),
    new Error("This build of reins has no module 'cli/run.ts' to load"),
  );
});

Deno.test("importLazily asks for a name once while it loads or has loaded; one that failed is asked again", async () => {
  // After the test above, this file's loaders are a bundle's: count what is asked of them.
  let asked = 0;
  let fail = true;
  useBundledLoaders({
    "core/ids.ts": () => {
      asked++;
      return fail ? Promise.reject(new Error("not yet")) : Promise.resolve({ n: asked });
    },
  });
  await assert.rejects(importLazily("core/ids.ts"), /not yet/);
  fail = false;
  const first = importLazily<{ n: number }>("core/ids.ts");
  assert.equal(importLazily("core/ids.ts"), first, "one load for both");
  assert.equal((await first).n, 2);
  assert.equal((await importLazily<{ n: number }>("core/ids.ts")).n, 2);
  assert.equal(asked, 2);
});
