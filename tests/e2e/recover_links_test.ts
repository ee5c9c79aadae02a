// A run whose files were replaced by planted links is skipped and reported by `reins recover` (and
// by the cheap reconciliation every command does) instead of stopping everything with exit 6, and
// it is settled in run.json so that it does not stay "running" for ever.
import assert from "node:assert/strict";
import { openStore } from "../../lib/store/store.ts";
import { reins, tempDir } from "../support/reins.ts";

function leftRunning(home: string): string {
  using store = openStore(home);
  const writer = store.createRun({
    sessionId: "session-links",
    contextId: null,
    harness: "reins",
    driver: "loop",
    trigger: "cli",
    cwd: "/tmp",
    goal: "work",
  });
  writer.append({ type: "message.completed", payload: { role: "assistant", text: "half way" } });
  // A change of its record, so that it has a run.json (a run's first is written then).
  writer.append({ type: "session.linked", payload: { nativeSessionId: "native-links" } });
  writer.close(); // its owner is gone, and it never settled
  return writer.runId;
}

Deno.test("regression: reins recover skips a run whose events.jsonl is a link out and settles it", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const outside = `${dir.path}/outside.jsonl`;
  Deno.writeTextFileSync(outside, "precious\n");
  const planted = leftRunning(home);
  const plain = leftRunning(home);
  const events = `${home}/runs/${planted}/events.jsonl`;
  Deno.removeSync(events);
  Deno.symlinkSync(outside, events);

  const result = await reins(["recover", "--json"], { home, cwd: dir.path });
  assert.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  assert.deepEqual(report.skipped, [planted]);
  assert.deepEqual(report.interrupted, [plain]);
  assert.match(report.problems.join("\n"), /runs\/.*: skipped: Refusing to follow the link/);
  assert.equal(Deno.readTextFileSync(outside), "precious\n", "nothing was written through it");

  using store = openStore(home);
  const record = store.loadRun(planted);
  assert.equal(record.status, "interrupted");
  assert.match(record.terminalReason!, /it cannot be reconciled: Refusing to follow the link/);
  const active = await reins(["runs", "--active", "--json"], { home, cwd: dir.path });
  assert.equal(active.code, 0, active.stderr);
  assert.deepEqual(JSON.parse(active.stdout), []);
});

Deno.test("regression: the cheap reconciliation of any command skips a planted link instead of exit 6", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  Deno.writeTextFileSync(`${dir.path}/outside.json`, "{}");
  const planted = leftRunning(home);
  const record = `${home}/runs/${planted}/run.json`;
  Deno.removeSync(record);
  Deno.symlinkSync(`${dir.path}/outside.json`, record);

  const listed = await reins(["runs", "--json"], { home, cwd: dir.path });
  assert.equal(listed.code, 0, listed.stderr);
  const again = await reins(["runs", "--active", "--json"], { home, cwd: dir.path });
  assert.deepEqual(JSON.parse(again.stdout), [], "it no longer counts as running");
  assert.equal(Deno.readTextFileSync(`${dir.path}/outside.json`), "{}");
});

Deno.test("a run whose events.jsonl is a link out is settled by the first command that looks", async () => {
  // The cheap reconciliation, not only reins recover: the run never stays "running" for ever.
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const outside = `${dir.path}/outside.jsonl`;
  Deno.writeTextFileSync(outside, "precious\n");
  const planted = leftRunning(home);
  const events = `${home}/runs/${planted}/events.jsonl`;
  Deno.removeSync(events);
  Deno.symlinkSync(outside, events);

  const shown = await reins(["runs", "--active", "--json"], { home, cwd: dir.path });
  assert.equal(shown.code, 0, shown.stderr);
  assert.deepEqual(JSON.parse(shown.stdout), [], "it no longer counts as running");
  const all = await reins(["runs", "--json"], { home, cwd: dir.path });
  const [row] = JSON.parse(all.stdout);
  assert.equal(row.status, "interrupted");
  assert.match(row.terminalReason, /it cannot be reconciled: Refusing to follow the link/);
  assert.equal(Deno.readTextFileSync(outside), "precious\n", "nothing was written through it");
});
