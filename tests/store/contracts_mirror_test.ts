// The zod-free mirrors the fast paths use must say what the contracts say, and docs/events.md
// must show every event type with a line that is valid.
import assert from "node:assert/strict";
import { EVENT_TYPES, RUN_STATUSES, RunEvent } from "../../lib/store/contracts.ts";
import { isActiveStatus } from "../../lib/store/contract_runtime.ts";
import { isActive, STATUS_NAMES } from "../../lib/store/run_files.ts";
import { REPO } from "./_helpers.ts";
import { cycleThrough, moduleGraph } from "../support/module_graph.ts";

Deno.test("isActive() and STATUS_NAMES mirror the contract's statuses", () => {
  assert.deepEqual([...STATUS_NAMES], [...RUN_STATUSES]);
  for (const status of RUN_STATUSES) assert.equal(isActive(status), isActiveStatus(status), status);
});

Deno.test("docs/events.md shows a valid example line of every event type", () => {
  const text = Deno.readTextFileSync(`${REPO}docs/events.md`);
  const blocks = [...text.matchAll(/```jsonl\n([\s\S]*?)```/g)].map((m) => m[1]);
  const lines = blocks.flatMap((block) => block.split("\n").filter(Boolean));
  const seen = new Set<string>();
  for (const line of lines) {
    const parsed = RunEvent.safeParse(JSON.parse(line));
    assert.ok(parsed.success, `${line}\n${parsed.error?.message}`);
    seen.add(parsed.data.type);
  }
  assert.deepEqual([...seen].sort(), [...EVENT_TYPES].sort());
});

Deno.test("docs/contexts.md shows a harness-session.json the contract accepts, with two drivers", async () => {
  const { HarnessSession } = await import("../../lib/store/contracts.ts");
  const text = Deno.readTextFileSync(`${REPO}docs/contexts.md`);
  const block = /```json\n([\s\S]*?)```/.exec(text)?.[1];
  assert.ok(block, "a json example");
  const parsed = HarnessSession.safeParse(JSON.parse(block));
  assert.ok(parsed.success, parsed.error?.message);
  assert.deepEqual(parsed.data.sessions?.map((s) => s.driver), ["claude", "codex"]);
  assert.equal(parsed.data.sessions?.[0].session_id, parsed.data.session_id);
});

// regression: contracts.ts imported its constants from contract_runtime.ts, which imports the
// contracts' types back: a circle, and `deno task gen` could not run once a generated check was gone
Deno.test("lib/store/contracts.ts and contract_runtime.ts import each other in no way (types included)", async () => {
  for (const file of ["lib/store/contracts.ts", "lib/store/contract_runtime.ts"]) {
    assert.equal(cycleThrough(await moduleGraph(file), file), null);
  }
});

Deno.test("cycleThrough() finds a circle of type-only imports (the guard can fail)", async () => {
  const dir = await Deno.makeTempDir({ dir: `${REPO}tests/store`, prefix: "_cycle-" });
  try {
    await Deno.writeTextFile(
      `${dir}/a.ts`,
      'import type { B } from "./b.ts";\nexport type A = B;\n',
    );
    await Deno.writeTextFile(
      `${dir}/b.ts`,
      'import type { A } from "./a.ts";\nexport type B = A;\n',
    );
    const a = `${dir.slice(REPO.length)}/a.ts`;
    assert.deepEqual(cycleThrough(await moduleGraph(a), a), [
      a,
      `${dir.slice(REPO.length)}/b.ts`,
      a,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
