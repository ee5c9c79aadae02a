// The bundle `deno task compile` compiles into the binary (scripts/bundle.ts): reins's commands
// work from it under the binary's sandbox, which may read the bundle and not lib/ (so nothing of it
// falls back on the sources), it stays as lazy as the sources, and every lazy import of lib/ is in
// it.
import assert from "node:assert/strict";
import {
  buildBundle,
  BUNDLE_ENTRY,
  COMMON_ROOTS,
  lazyCalls,
  lazyNames,
} from "../../scripts/bundle.ts";
import { reins, tempDir } from "../support/reins.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const CONFIG = `${REPO}deno.json`;

Deno.test("every importLazily call of lib/ names, in one literal, a module that exists", () => {
  const imports = JSON.parse(Deno.readTextFileSync(CONFIG)).imports;
  const calls = lazyCalls();
  for (const { path, line, name } of calls) {
    const where = `${path}:${line}: ${name}`;
    if (name.startsWith("node:")) continue;
    if (name.endsWith(".ts")) assert.ok(Deno.statSync(`${REPO}lib/${name}`).isFile, where);
    else assert.ok(name in imports, `${where}: not a package of deno.json`);
  }
  // As many calls as the text has: a call the pattern missed would be missing from the bundle.
  let written = 0;
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) walk(path);
      else if (entry.name.endsWith(".ts") && !path.endsWith("core/lazy_import.ts")) {
        written += [...Deno.readTextFileSync(path).matchAll(/\bimportLazily\s*[<(]/g)].length;
      }
    }
  };
  walk(`${REPO}lib`);
  assert.equal(calls.length, written);
  assert.ok(lazyNames().includes("cli/run.ts"));
});

Deno.test("lazyNames refuses, naming the file and line, an importLazily it could not bundle", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/cli`);
  await Deno.writeTextFile(
    `${dir.path}/cli/x.ts`,
    'const a = importLazily<typeof import("./a.ts")>("cli/a.ts");\n' +
      'const b = importLazily<typeof import("./b.ts")>(`cli/${name}.ts`);\n',
  );
  assert.throws(
    () => lazyNames(dir.path),
    (error: Error) => {
      assert.equal(
        error.message,
        `${dir.path}/cli/x.ts:2: importLazily needs one string literal to be bundled, not ` +
          "`cli/${name}.ts`",
      );
      return true;
    },
  );
});

Deno.test("reins works from its bundle, under the binary's sandbox, reading none of lib/", async () => {
  await using dir = await tempDir();
  const outdir = `${dir.path}/bundle`;
  const entry = await buildBundle({ outdir });
  assert.equal(entry, `${outdir}/${BUNDLE_ENTRY}`);
  const files = [...Deno.readDirSync(outdir)].map((file) => file.name);
  // Chunks: the commands' modules are split off the entry, loaded when they are imported.
  assert.ok(files.some((name) => /^run-[A-Z0-9]+\.js$/.test(name)), files.join(" "));
  for (const name of files) {
    const text = Deno.readTextFileSync(`${outdir}/${name}`);
    // A literal dynamic import would have Deno load what it reaches at start-up.
    assert.doesNotMatch(text, /\bimport\(\s*["'`]/, name);
    assert.doesNotMatch(text, /from\s*"node:module"/, name);
  }

  const home = `${dir.path}/home`;
  const cwd = `${dir.path}/work`;
  await Deno.mkdir(cwd);
  await Deno.writeTextFile(`${cwd}/notes.txt`, "hello\n");
  const options = { home, cwd, allowRun: ["sh"], bundle: entry };
  const ok = async (args: string[]) => {
    const result = await reins(args, options);
    assert.equal(result.code, 0, `reins ${args.join(" ")}: ${result.stderr}`);
    return result;
  };

  const version = await ok(["--version"]);
  assert.match(version.stdout, /^reins \d+\.\d+\.\d+/);
  // The command driver, the built-in loop and its tools (lazily loaded driver modules).
  const echoed = await ok(["run", "--driver", "command", "--exec", "sh -c 'echo hi'", "hello"]);
  assert.equal(echoed.stdout, "hi\n");
  const looped = await ok(["run", "--context", "c1", "--json", "read notes.txt"]);
  assert.equal(JSON.parse(looped.stdout).status, "completed");
  // Index (node:sqlite), views, stats, help: each a chunk of its own.
  const runs = await ok(["runs", "--json"]);
  assert.equal(JSON.parse(runs.stdout).length, 2);
  const shown = await ok(["show", "last"]);
  assert.match(shown.stdout, /· completed ·/);
  await ok(["stats"]);
  await ok(["contexts"]);
  const help = await ok(["help", "suite"]);
  assert.match(help.stdout, /reins suite/);
  // zod and yaml (npm packages left outside the bundle) through `reins suite validate`.
  await Deno.writeTextFile(
    `${cwd}/suite.yaml`,
    [
      "suite: tiny",
      "driver: command",
      "exec: sh -c 'echo done'",
      "scenarios:",
      "  - key: one",
      "    turns: [hello]",
      "    checks: [{ name: said-done, regex: done, in: final }]",
      "",
    ].join("\n"),
  );
  const valid = await ok(["suite", "validate", "suite.yaml"]);
  assert.match(valid.stdout, /^suite\.yaml: suite "tiny" is valid: 1 scenario /);
  // A refusal still names what the sandbox allows (not a module it could not read).
  const refused = await reins(["--home", `${dir.path}/elsewhere`, "runs"], options);
  assert.equal(refused.code, 4, refused.stderr);
  assert.match(refused.stderr, /^reins: The sandbox refused to read/);
});

/** The files of a bundle that `files` import statically, themselves included. */
function staticClosure(outdir: string, files: string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const text = Deno.readTextFileSync(`${outdir}/${name}`);
    for (const match of text.matchAll(/^(?:import|export)\b[^;]*?["']([^"']+)["'];?$/gms)) {
      const specifier = match[1];
      assert.ok(
        specifier.startsWith("./"),
        `${name} imports ${specifier} at start-up: a package or a module outside the bundle`,
      );
      visit(specifier.slice(2));
    }
  };
  for (const file of files) visit(file);
  return seen;
}

Deno.test("a reins run --driver command loads the bundle's entry and four more files, no package", async () => {
  await using dir = await tempDir();
  const outdir = `${dir.path}/bundle`;
  await buildBundle({ outdir });
  const files = [...Deno.readDirSync(outdir)].map((file) => file.name);
  const chunkOf = (module: string) => {
    const base = module.slice(module.lastIndexOf("/") + 1).replace(/\.ts$/, "");
    const found = files.filter((name) => new RegExp(`^${base}-[A-Z0-9]+\\.js$`).test(name));
    assert.equal(found.length, 1, `${module}: ${found.join(" ")}`);
    return found[0];
  };
  // The entry, and what the run command imports lazily on its way to the command driver's spawn.
  const loaded = staticClosure(outdir, [
    BUNDLE_ENTRY,
    chunkOf("cli/run.ts"),
    chunkOf("core/config.ts"),
    chunkOf("drivers/command.ts"),
  ]);
  // regression: 43 files, one chunk for each set of lazily imported modules sharing a module.
  assert.ok(loaded.size <= 5, [...loaded].join(" "));
  const common = [...loaded].find((name) => name.startsWith("chunk-"));
  assert.ok(common !== undefined, [...loaded].join(" "));
  const text = Deno.readTextFileSync(`${outdir}/${common}`);
  for (const module of [...COMMON_ROOTS, "turn/run_turn.ts", "store/run_writer.ts"]) {
    assert.ok(text.includes(`// lib/${module}\n`), `${module} is not in ${common}`);
  }
});
