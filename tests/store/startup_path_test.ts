// regression guard: `reins runs` and the cheap reconciliation every read command does must not
// load zod, npm packages or node:fs/path/util at start-up (each costs 20 to 50 ms, as much as the
// whole command is allowed): only what they import statically, for their code, is loaded.
import assert from "node:assert/strict";
import { REPO } from "./_helpers.ts";

interface Dependency {
  code?: { specifier: string };
  isDynamic?: boolean;
}

/** The modules `entry` loads before running: static imports for code, followed transitively. */
async function startupModules(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${REPO}deno.json`, `${REPO}${entry}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: { specifier: string; dependencies?: (Dependency & { specifier: string })[] }[];
  };
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const queue = [...graph.roots];
  while (queue.length > 0) {
    const specifier = queue.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dep of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (dep.code && !dep.isDynamic) queue.push(dep.code.specifier);
    }
  }
  return [...seen];
}

// [entry, whether it reads the index]
for (
  const [entry, readsIndex] of [
    ["lib/cli/runs.ts", true],
    ["lib/store/data_root.ts", true],
    ["lib/store/liveness.ts", true],
    ["lib/store/list.ts", true],
    // regression: reins run loaded zod (~24 ms of CPU) for its settings, events and record
    ["lib/cli/run.ts", true],
    ["lib/store/store.ts", true],
    ["lib/turn/run_turn.ts", false],
    ["lib/core/config.ts", false],
    ["lib/drivers/command.ts", false],
  ] as const
) {
  Deno.test(`${entry} loads no npm package and no node:fs, node:path or node:util at start-up`, async () => {
    const modules = await startupModules(entry);
    const heavy = modules.filter((m) =>
      m.startsWith("npm:") || /^node:(fs|path|util)(\/|$)/.test(m) || m.includes("/zod")
    );
    assert.deepEqual(heavy, []);
    if (readsIndex) assert.ok(modules.includes("node:sqlite"), "it reads the index");
  });
}

Deno.test("startupModules() finds zod behind lib/store/contracts.ts (the guard can fail)", async () => {
  const modules = await startupModules("lib/store/contracts.ts");
  assert.ok(modules.some((m) => m.startsWith("npm:") && m.includes("zod")), modules.join("\n"));
});
