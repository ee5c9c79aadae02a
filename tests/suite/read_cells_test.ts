// readCells(): the cells compare reads without the state schema are the ones the schema's reader
// gives, and a file whose cell fields are wrong is refused in the schema's words.
import assert from "node:assert/strict";
import { readCells } from "../../lib/suite/read_cells.ts";
import { cellsOf } from "../../lib/suite/aggregate.ts";
import { pendingScenario, readScenarioStates, SuiteRunHandle } from "../../lib/suite/state.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { tempDir } from "../support/reins.ts";

const OPTIONS = {
  jobs: 1,
  filter: null,
  repeat: 2,
  agents: null,
  report: false,
  shard: null,
  rerunOf: null,
};
const INSTANCES = [
  { id: "a.1", key: "a", repeat: 1, agent: null, index: 0, name: "A" },
  { id: "a.2", key: "a", repeat: 2, agent: null, index: 0, name: "A" },
  { id: "b.1", key: "b", repeat: 1, agent: null, index: 1, name: "B" },
];

Deno.test("readCells() reads what readScenarioStates() and cellsOf() read, pending ones included", async () => {
  await using dir = await tempDir();
  const root = new DataRoot(`${dir.path}/home`);
  using handle = SuiteRunHandle.create(root, {
    suite: "s",
    file: "/x/suite.yaml",
    digest: "sha256:00",
    options: OPTIONS,
    instances: INSTANCES,
  });
  const [first, second] = INSTANCES.map(({ name: _, ...instance }) => instance);
  await handle.writeScenario({
    ...pendingScenario(first, "A"),
    status: "passed",
    costUsd: 0.25,
    durationMs: 12,
    checks: [{
      name: "says",
      kind: "judge",
      outcome: "passed",
      met: true,
      checkpoint: true,
      detail: "score 0.9",
      score: 0.9,
      by: "polite (mock)",
      reason: "kind words",
    }],
  });
  await handle.writeScenario({
    ...pendingScenario(second, "A"),
    status: "error",
    reason: "exit 3",
  });
  const expected = cellsOf(readScenarioStates(root, handle.header));
  assert.deepEqual(readCells(root, handle.header), expected);
  assert.deepEqual(expected.map((c) => [c.scenario, c.epoch, c.outcome]), [
    ["a", 1, "passed"],
    ["a", 2, "error"],
    ["b", 1, "unfinished"],
  ]);

  // A cell field of the wrong type in begun.jsonl: refused, in the schema reader's words.
  const journal = `${handle.dir}/begun.jsonl`;
  const lines = (await Deno.readTextFile(journal)).split("\n");
  const at = lines.findIndex((line) => line.includes('"id":"a.2"'));
  const state = JSON.parse(lines[at]);
  const damaged = [...lines];
  damaged[at] = JSON.stringify({ ...state, costUsd: "cheap" });
  await Deno.writeTextFile(journal, damaged.join("\n"));
  assert.throws(
    () => readCells(root, handle.header),
    new RegExp(
      `Cannot read line ${
        at + 1
      } of .*begun\\.jsonl: Invalid input: expected number, received string at costUsd`,
    ),
  );
  await Deno.writeTextFile(journal, lines.join("\n"));
  assert.deepEqual(readCells(root, handle.header), expected);

  // An older reins's state file wins over the journal, and is checked the same way.
  const path = `${handle.dir}/scenarios/a.2.json`;
  root.writeFileAtomic(path, JSON.stringify({ ...state, costUsd: "cheap" }));
  assert.throws(
    () => readCells(root, handle.header),
    /Cannot read the state of scenario a\.2 .*: Invalid input: expected number, received string at costUsd/,
  );
  await Deno.writeTextFile(path, "{not json");
  assert.throws(
    () => readCells(root, handle.header),
    /Cannot read the state of scenario a\.2 .*: it is not JSON/,
  );
});
