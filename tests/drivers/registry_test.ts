// The driver registry: each harness driver by its name, with the harness it records.
import assert from "node:assert/strict";
import { createDriver } from "../../lib/drivers/registry.ts";
import { scratchDir, testSettings } from "./_helpers.ts";

Deno.test("createDriver() returns each harness driver with the harness name it records", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path);
  const named = [];
  for (const name of ["claude", "codex", "gemini", "opencode"] as const) {
    const driver = await createDriver(name, settings);
    named.push([driver.name, driver.harness]);
  }
  assert.deepEqual(named, [
    ["claude", "claude-code"],
    ["codex", "codex"],
    ["gemini", "gemini-cli"],
    ["opencode", "opencode"],
  ]);
});
