// `deno task bundle [DIR]`: reins as JavaScript bundled by `deno bundle`, split into chunks —
// what `deno task compile` compiles into dist/reins. From the sources, a `reins run` spends ~11 ms
// of its start finding, hashing and loading the ~75 modules its command needs; the bundle loads a
// few chunks (`deno task bench engine`, "a whole reins run … from the sources" against "… the
// bundle").
//
// Three things keep the bundle as lazy as the sources:
// - every name lib/ passes to importLazily (lib/core/lazy_import.ts) gets a literal import in the
//   entry (scripts/compile_entry.ts), which the bundler makes a chunk of its own (but for the
//   common chunk's roots, below);
// - Deno loads, with a module, every module a literal `import("…")` in it can reach, so the
//   bundle's dynamic imports are rewritten to resolve at run time (`import(import.meta.resolve(…))`),
//   as lazy_import.ts does for the sources;
// - the npm packages of deno.json stay outside (imported by name, from Deno's npm cache or the
//   binary): bundled, a CommonJS one (yaml) would have every chunk load Deno's Node
//   compatibility (`node:module`), ~15 ms, at start-up.
//
// And one keeps a `reins run` to a few chunks: what it needs (COMMON_ROOTS and every module they
// import) is one chunk. The bundler gives a module shared by several lazily imported ones a chunk
// for each set of them that imports it, so the run's modules came in 43 files, each one more
// stat, open, read and code-cache lookup for Deno. With this chunk, and the binary's V8 flags
// (scripts/permissions.ts), `deno task bench engine`'s whole `reins run --driver command` went
// from 2.5× to 1.71–1.78× the script spawning `true` (three runs, 2026-12-01); this chunk alone,
// 56.4 → 49.6 ms (medians of 30 interleaved runs each, without the V8 flags).
// The entry and every lazily imported module's wrapper import a module that imports the roots
// (`common.ts` of the build), so the bundler sees every entry reach them: one chunk, loaded at
// start-up. The roots' own lazy names (the run command, the settings, the command driver) are
// then handed over by the entry, which imports them (compile_entry.ts, `static`): a dynamic import
// of a wrapper chunk re-exporting them cost Deno a module load each (~0.5 ms for the run command's),
// so a trivial run loads two files, the entry and this chunk (docs/engine.md).
import { join } from "node:path";
import { compileEntry, type LazyLoader, plainLoader } from "./compile_entry.ts";
import type { SandboxOrigin } from "../lib/core/sandbox.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const CONFIG = `${ROOT}deno.json`;

/**
 * What a `reins run` needs, under lib/: the command line, the run command, the settings and the
 * command driver (the harness drivers and the built-in loop load theirs on top: lib/turn/agent.ts).
 * Their modules make the chunk every command loads at start-up.
 */
export const COMMON_ROOTS = ["cli/main.ts", "cli/run.ts", "core/config.ts", "drivers/command.ts"];

/** The file of the bundle's entry in its directory. */
export const BUNDLE_ENTRY = "reins.js";

const LAZY_CALL = /\bimportLazily\s*(?:<[^>]*>)?\s*\(\s*([^)]*?)\s*\)/g;

/** One importLazily call of lib/: where it is and the name it passes. */
export interface LazyCall {
  path: string;
  line: number;
  name: string;
}

/**
 * The importLazily calls of lib/. A call whose argument is not one string literal could not be
 * bundled: it is an error naming the file and line.
 */
export function lazyCalls(lib = `${ROOT}lib`): LazyCall[] {
  const calls: LazyCall[] = [];
  const walk = (dir: string) => {
    for (const entry of [...Deno.readDirSync(dir)].sort((a, b) => a.name < b.name ? -1 : 1)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) walk(path);
      else if (entry.name.endsWith(".ts") && !path.endsWith("core/lazy_import.ts")) {
        const text = Deno.readTextFileSync(path);
        for (const match of text.matchAll(LAZY_CALL)) {
          const line = text.slice(0, match.index).split("\n").length;
          const literal = /^"([^"\\]+)",?$/.exec(match[1]);
          if (literal === null) {
            throw new Error(
              `${path}:${line}: importLazily needs one string literal to be bundled, not ${
                match[1] || "nothing"
              }`,
            );
          }
          calls.push({ path, line, name: literal[1] });
        }
      }
    }
  };
  walk(lib);
  return calls;
}

/** The names lib/ passes to importLazily, sorted, each once. */
export function lazyNames(lib = `${ROOT}lib`): string[] {
  return [...new Set(lazyCalls(lib).map((call) => call.name))].sort();
}

/** The packages of deno.json's imports: left outside the bundle. */
function packages(): string[] {
  return Object.keys(JSON.parse(Deno.readTextFileSync(CONFIG)).imports ?? {});
}

const LITERAL_IMPORT = /\bimport\(\s*("[^"\\]*")\s*\)/g;
// deno-lint-ignore no-control-regex
const NOT_ASCII = /[^\u0000-\u007f]/g;

/**
 * Rewrites the bundle's literal dynamic imports to resolve at run time, and writes what is not
 * ASCII as `\uXXXX`. The bundler escapes strings, not the comments it keeps (a `…` or `—` of lib/'s
 * doc comments); a module with one character beyond ASCII is a two-byte string for V8, the common
 * chunk's ~490 KB then decoded from UTF-8 to UTF-16 at every start: ~0.8 ms of a `reins run`
 * (docs/engine.md). In a comment, a string, a template or a regular expression, the escape is the
 * same text or the same character.
 */
function postProcess(outdir: string): void {
  for (const entry of Deno.readDirSync(outdir)) {
    if (!entry.name.endsWith(".js")) continue;
    const path = join(outdir, entry.name);
    const text = Deno.readTextFileSync(path);
    const rewritten = text.replace(LITERAL_IMPORT, "import(import.meta.resolve($1))")
      .replace(NOT_ASCII, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
    const left = /\bimport\(\s*['`]|\bfrom\s*["']node:module["']/.exec(rewritten);
    if (left !== null) {
      throw new Error(
        `${path}: the bundle has ${JSON.stringify(left[0])}, which Deno would load at start-up`,
      );
    }
    if (rewritten !== text) Deno.writeTextFileSync(path, rewritten);
  }
}

/**
 * The loader of lib/`name` through a wrapper of the build (`lazy/<name>`, so that its chunk is
 * named after the module) that imports the common module too and re-exports the module's exports.
 */
function wrapped(work: string, name: string, common: string): LazyLoader {
  const target = `${ROOT}lib/${name}`;
  const file = join(work, "lazy", name);
  Deno.mkdirSync(join(file, ".."), { recursive: true });
  const exports = [`export * from ${JSON.stringify(target)};`];
  // `export *` leaves out a default export.
  if (/^export default\b/m.test(Deno.readTextFileSync(target))) {
    exports.push(`export { default } from ${JSON.stringify(target)};`);
  }
  Deno.writeTextFileSync(file, [`import ${JSON.stringify(common)};`, ...exports, ""].join("\n"));
  return { name, specifier: file };
}

export interface BundleOptions {
  /** An empty directory (made if missing) the bundle is written to. */
  outdir: string;
  /** What a compiled binary's build baked in; none for a bundle run like a checkout. */
  origin?: SandboxOrigin | null;
}

/** Bundles reins into `outdir`; returns the path of its entry module. */
export async function buildBundle({ outdir, origin = null }: BundleOptions): Promise<string> {
  const names = lazyNames();
  await Deno.mkdir(outdir, { recursive: true });
  const work = await Deno.makeTempDir({ prefix: "reins-bundle-" });
  try {
    const entry = join(work, BUNDLE_ENTRY.replace(/\.js$/, ".ts"));
    const common = join(work, "common.ts");
    await Deno.writeTextFile(
      common,
      COMMON_ROOTS.map((root) => `import ${JSON.stringify(`${ROOT}lib/${root}`)};\n`).join(""),
    );
    const loaders = names.map((name) =>
      COMMON_ROOTS.includes(name)
        ? { ...plainLoader(name), static: true }
        : name.endsWith(".ts")
        ? wrapped(work, name, common)
        : plainLoader(name)
    );
    await Deno.writeTextFile(entry, compileEntry(origin, loaders, common));
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform=deno",
        "--format=esm",
        "--code-splitting",
        ...packages().map((name) => `--external=${name}`),
        "--config",
        CONFIG,
        "--outdir",
        outdir,
        entry,
      ],
      env: { DENO_NO_UPDATE_CHECK: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`deno bundle failed: ${new TextDecoder().decode(output.stderr).trim()}`);
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
  postProcess(outdir);
  return join(outdir, BUNDLE_ENTRY);
}

if (import.meta.main) {
  const outdir = Deno.args[0] ?? `${ROOT}dist/bundle`;
  await Deno.remove(outdir, { recursive: true }).catch(() => {});
  const entry = await buildBundle({ outdir });
  const files = [...Deno.readDirSync(outdir)].length;
  console.error(`deno task bundle: ${entry} and ${files - 1} chunks beside it`);
}
