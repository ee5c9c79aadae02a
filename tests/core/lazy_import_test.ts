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
