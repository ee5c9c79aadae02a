// regression: lib/cli/suite.ts, suite_plan.ts, suite_run.ts and suite_show.ts imported each other
// in a circle (the subcommands took SuiteContext from suite.ts, which loads them; plan took
// helpers that lived in run and show). The suite command's files and lib/suite/ must import in
// one direction: no cycle between files, type-only imports (`import type`, `typeof import()`)
// included, read from Deno's own module graph.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;

interface Module {
  specifier: string;
  dependencies?: {
    specifier: string;
    code?: { specifier: string };
    type?: { specifier: string };
  }[];
}

async function graphOf(entry: string): Promise<Map<string, string[]>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${REPO}deno.json`, `${REPO}${entry}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: Module[];
  };
  const lib = `file://${REPO}lib/`;
  const ours = (specifier: string) =>
    specifier.startsWith(`${lib}suite/`) || specifier.startsWith(`${lib}cli/suite`);
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    if (!ours(module.specifier)) continue;
    const targets = (module.dependencies ?? []).flatMap((dep) =>
      [dep.code?.specifier, dep.type?.specifier].filter((s): s is string => !!s && ours(s))
    );
    graph.set(module.specifier.slice(lib.length), targets.map((s) => s.slice(lib.length)));
  }
  return graph;
}

/** A cycle of the graph as the files along it, or null. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, "done");
    return null;
  };
  for (const node of [...graph.keys()].sort()) {
    if (state.get(node) === undefined) {
      const found = visit(node);
      if (found) return found;
    }
  }
  return null;
}

Deno.test("regression: the suite command's files and lib/suite/ import one another in no cycle, type-only imports included", async () => {
  const graph = await graphOf("lib/cli/suite.ts");
  // The graph reaches every subcommand (through the types of its lazy imports) and lib/suite.
  for (const file of ["cli/suite_run.ts", "cli/suite_show.ts", "cli/suite_plan.ts"]) {
    assert.ok(graph.has(file), `${file} is not in the graph of lib/cli/suite.ts`);
  }
  assert.ok(graph.has("suite/runner.ts"));
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `an import cycle: ${cycle?.join(" → ")}`);
});
