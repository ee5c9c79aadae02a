// pendingReports(): what `reins doctor` says about the outbox, without zod or a lock.
import assert from "node:assert/strict";
import { platformTarget } from "../../lib/platform/client.ts";
import { createReport } from "../../lib/platform/report_entry.ts";
import { readEntry, writeEntry } from "../../lib/platform/outbox.ts";
import { pendingReports } from "../../lib/platform/pending.ts";
import { runReportOf } from "../../lib/platform/run_outcome.ts";
import { tempDir } from "../support/reins.ts";
import { makeRun } from "./_runs.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

Deno.test("pendingReports() sorts the outbox into pending, refused and unreadable", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  assert.deepEqual(pendingReports(root), { pending: [], refused: [], unreadable: [] });
  const target = platformTarget({
    url: "http://127.0.0.1:9",
    apiKey: "k",
    secretKey: "s",
    workspaceId: null,
    jobId: null,
    allowHttp: false,
  });
  const entries = [];
  for (const name of ["first", "second"]) {
    const { record, events } = await makeRun(dir.path);
    const report = runReportOf(record, events, { runDir: "/x" });
    entries.push({ record, entry: createReport(root, { name, scenarios: [report], target }) });
  }
  const read = readEntry(root, entries[1].entry.id);
  assert.ok(read?.ok);
  writeEntry(root, { ...read.entry, state: "refused", lastError: "POST /x/ failed (400): no" });
  await Deno.writeTextFile(`${dir.path}/outbox/broken.json`, "{");
  await Deno.writeTextFile(`${dir.path}/outbox/foreign.json`, '{"type":"other"}');

  const found = pendingReports(root);
  assert.deepEqual(found.pending.map((r) => [r.id, r.name, r.runIds, r.reason]), [
    [entries[0].entry.id, "first", [entries[0].record.id], null],
  ]);
  assert.deepEqual(found.refused.map((r) => [r.name, r.reason]), [
    ["second", "POST /x/ failed (400): no"],
  ]);
  assert.deepEqual(found.pending[0].path, `${dir.path}/outbox/${entries[0].entry.id}.json`);
  assert.deepEqual(found.unreadable.length, 2);
  assert.match(found.unreadable.join("\n"), /outbox\/broken\.json: .*JSON/);
  assert.match(found.unreadable.join("\n"), /outbox\/foreign\.json: not a reins report/);
});
