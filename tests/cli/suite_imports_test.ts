// regression: lib/cli/suite.ts, suite_plan.ts, suite_run.ts and suite_show.ts imported each other
// in a circle (the subcommands took SuiteContext from suite.ts, which loads them; plan took
// helpers that lived in run and show). The suite command's files and lib/suite/ must import in
// one direction: no cycle between files, type-only imports (`import type`, `typeof import()`)
// included, read from Deno's own module graph.
import assert from "node:assert/strict";
import { cycleThrough, moduleGraph } from "../support/module_graph.ts";

const ours = (file: string) => file.startsWith("lib/suite/") || file.startsWith("lib/cli/suite");

Deno.test("regression: the suite command's files and lib/suite/ import one another in no cycle, type-only imports included", async () => {
  const whole = await moduleGraph("lib/cli/suite.ts");
  const graph = new Map(
    [...whole].filter(([file]) => ours(file)).map(([file, to]) => [file, to.filter(ours)]),
  );
  // The graph reaches every subcommand (through the types of its lazy imports) and lib/suite.
  for (const file of ["lib/cli/suite_run.ts", "lib/cli/suite_show.ts", "lib/cli/suite_plan.ts"]) {
    assert.ok(graph.has(file), `${file} is not in the graph of lib/cli/suite.ts`);
  }
  assert.ok(graph.has("lib/suite/runner.ts"));
  for (const file of [...graph.keys()].sort()) {
    const cycle = cycleThrough(graph, file);
    assert.equal(cycle, null, `an import cycle: ${cycle?.join(" → ")}`);
  }
});
