// regression guard: `reins runs`, `reins run` and the cheap reconciliation every read command does
// must not load zod, npm packages or node:fs/path/util/crypto at start-up (zod costs ~24 ms of
// CPU, the others 20 ms and more; node:crypto came in with the snapshot every run takes, +19 ms): only what they import statically, for their code, is loaded — and
// nothing in lib/ imports lazily in a way Deno would load at start-up anyway (lib/core/lazy_import.ts).
import assert from "node:assert/strict";
import { REPO } from "./_helpers.ts";

interface Dependency {
  code?: { specifier: string };
  isDynamic?: boolean;
}

/** The modules `entry` loads before running: static imports for code, followed transitively. */
async function startupModules(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "info",
      "--json",
      "--config",
      `${REPO}deno.json`,
      entry.startsWith("/") ? entry : `${REPO}${entry}`,
    ],
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

for (
  const entry of [
    "lib/cli/runs.ts",
    "lib/store/data_root.ts",
    "lib/store/liveness.ts",
    "lib/store/list.ts",
    // regression: reins run loaded zod (~24 ms of CPU) for its settings, events and record
    "lib/cli/main.ts",
    "lib/cli/run.ts",
    "lib/store/store.ts",
    "lib/turn/run_turn.ts",
    "lib/core/config.ts",
    "lib/drivers/command.ts",
    // the wire schemas of the harnesses' lines are checked by generated code, not by zod
    "lib/drivers/claude.ts",
    "lib/drivers/claude_turn.ts",
    "lib/drivers/codex.ts",
    "lib/drivers/gemini.ts",
    "lib/drivers/opencode.ts",
  ]
) {
  Deno.test(`${entry} loads no npm package and no node:fs, node:path, node:util or node:crypto at start-up`, async () => {
    const modules = await startupModules(entry);
    const heavy = modules.filter((m) =>
      m.startsWith("npm:") || /^node:(fs|path|util|crypto)(\/|$)/.test(m) || m.includes("/zod")
    );
    assert.deepEqual(heavy, []);
  });
}

// regression: reins run imported node:sqlite (2.8 ms of a whole run's profile) though it never
// opens the index: node:sqlite is loaded when a connection is opened (lib/core/sqlite.ts), as is the
// snapshots' blob index
for (
  const entry of ["lib/cli/main.ts", "lib/cli/run.ts", "lib/turn/run_turn.ts", "lib/store/store.ts"]
) {
  Deno.test(`${entry} does not load node:sqlite at start-up`, async () => {
    const modules = await startupModules(entry);
    assert.deepEqual(modules.filter((m) => m === "node:sqlite"), []);
  });
}

Deno.test("startupModules() sees a static import of node:sqlite (the guard can fail)", async () => {
  const probe = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      probe,
      'import { DatabaseSync } from "node:sqlite";\nexport const d = DatabaseSync;\n',
    );
    const modules = await startupModules(probe);
    assert.ok(modules.includes("node:sqlite"), modules.join("\n"));
  } finally {
    await Deno.remove(probe);
  }
});

Deno.test("startupModules() finds zod behind lib/store/contracts.ts (the guard can fail)", async () => {
  const modules = await startupModules("lib/store/contracts.ts");
  assert.ok(modules.some((m) => m.startsWith("npm:") && m.includes("zod")), modules.join("\n"));
});

// regression: `import("./run.ts")` in the command table made Deno read every command's modules
// at start-up (importing lib/cli/main.ts took 22 ms; 2.3 ms without)
Deno.test("lib/ has no statically analyzable dynamic import (Deno would load it at start-up)", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".ts")) {
        const text = await Deno.readTextFile(path);
        if (path.endsWith("lib/core/lazy_import.ts")) continue;
        for (const match of text.matchAll(/(typeof\s+)?\bimport\(\s*["'`]/g)) {
          if (match[1] === undefined) offenders.push(`${path.slice(REPO.length)}:${match.index}`);
        }
      }
    }
  };
  await walk(`${REPO}lib`);
  assert.deepEqual(offenders, []);
});
