// The module graph Deno sees from an entry (`deno info --json`), every import counted: code and
// type-only, static and dynamic (a `typeof import("…")` too). For tests that hold the files of
// lib/ free of import cycles.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;

interface Dependency {
  code?: { specifier: string };
  type?: { specifier: string };
}

/** Each local module reachable from `entry` (a path under the repo) with the modules it imports. */
export async function moduleGraph(entry: string): Promise<Map<string, string[]>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${REPO}deno.json`, `${REPO}${entry}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: { specifier: string; dependencies?: Dependency[] }[];
  };
  const local = (specifier: string) =>
    specifier.startsWith("file://") ? new URL(specifier).pathname.slice(REPO.length) : null;
  const out = new Map<string, string[]>();
  for (const module of graph.modules) {
    const from = local(module.specifier);
    if (from === null) continue;
    const to = (module.dependencies ?? []).flatMap((dep) =>
      [dep.code?.specifier, dep.type?.specifier].flatMap((s) => s === undefined ? [] : [local(s)])
    ).filter((path): path is string => path !== null);
    out.set(from, [...new Set(to)]);
  }
  return out;
}

/** A cycle of imports from `file` back to itself (the files in order), or null when none. */
export function cycleThrough(graph: Map<string, string[]>, file: string): string[] | null {
  const seen = new Set<string>();
  const walk = (path: string[]): string[] | null => {
    for (const next of graph.get(path.at(-1)!) ?? []) {
      if (next === file) return [...path, next];
      if (seen.has(next)) continue;
      seen.add(next);
      const found = walk([...path, next]);
      if (found) return found;
    }
    return null;
  };
  return walk([file]);
}
