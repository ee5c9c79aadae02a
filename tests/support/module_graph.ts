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

/** How one module reaches another: a static import for code, one for types only, or a lazy name. */
export type ImportKind = "code" | "type" | "lazy";

export interface Import {
  to: string;
  kind: ImportKind;
}

/** Every `.ts` file under `dir` (a path under the repo), as paths under the repo. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (path: string) => {
    for (const entry of Deno.readDirSync(`${REPO}${path}`)) {
      const child = `${path}/${entry.name}`;
      if (entry.isDirectory) walk(child);
      else if (entry.name.endsWith(".ts")) out.push(child);
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The `importLazily` names of a module's text that are modules of lib/ ("cli/run.ts"), as paths
 * under the repo. A lazy import hides its arrow from Deno's graph (lib/core/lazy_import.ts).
 */
export function lazyNames(text: string): string[] {
  return [...text.matchAll(/\bimportLazily\s*<[\s\S]*?>\s*\(\s*["'`]([^"'`]+\.ts)["'`]/g)]
    .map((match) => `lib/${match[1]}`);
}

/**
 * The imports between the local modules reachable from `files` (paths under the repo), each kind
 * told apart: Deno's graph (`deno info --json` of one entry importing them all) and the lazy names.
 */
export async function importGraph(files: string[]): Promise<Map<string, Import[]>> {
  const dir = await Deno.makeTempDir({ prefix: "reins-module-graph-" });
  try {
    const entry = `${dir}/entry.ts`;
    await Deno.writeTextFile(
      entry,
      files.map((file) => `import "${new URL(file, `file://${REPO}`).href}";\n`).join(""),
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", `${REPO}deno.json`, entry],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(output.success, new TextDecoder().decode(output.stderr));
    const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
      modules: { specifier: string; dependencies?: (Dependency & { isDynamic?: boolean })[] }[];
    };
    const local = (specifier: string) =>
      specifier.startsWith(`file://${REPO}`)
        ? decodeURIComponent(new URL(specifier).pathname).slice(REPO.length)
        : null;
    const out = new Map<string, Import[]>();
    for (const module of graph.modules) {
      const from = local(module.specifier);
      if (from === null) continue;
      const imports: Import[] = [];
      for (const dep of module.dependencies ?? []) {
        const code = dep.code && local(dep.code.specifier);
        const type = dep.type && local(dep.type.specifier);
        if (code) imports.push({ to: code, kind: "code" });
        if (type && type !== code) imports.push({ to: type, kind: "type" });
      }
      const text = await Deno.readTextFile(`${REPO}${from}`);
      for (const to of lazyNames(text)) imports.push({ to, kind: "lazy" });
      out.set(from, imports);
    }
    return out;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The cycles of a graph: each strongly connected set of more than one file, or a file importing itself. */
export function cycles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative over a sorted graph so that its answer is stable.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (root: string) => {
    const work: [string, number][] = [[root, 0]];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work.at(-1)!;
      const [node, i] = frame;
      const next = graph.get(node) ?? [];
      if (i < next.length) {
        frame[1]++;
        const to = next[i];
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push([to, 0]);
        } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work.at(-1)![0];
        low.set(parent, Math.min(low.get(parent)!, low.get(node)!));
      }
      if (low.get(node) === index.get(node)) {
        const members: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          members.push(member);
        } while (member !== node);
        if (members.length > 1 || next.includes(node)) found.push(members.sort());
      }
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return found;
}
