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
  // Chunks: the commands' modules are split off the entry, loaded when they are imported (all but
  // those of `reins run`, in the common chunk the entry loads).
  assert.ok(files.some((name) => /^show-[A-Z0-9]+\.js$/.test(name)), files.join(" "));
  assert.ok(!files.some((name) => /^run-[A-Z0-9]+\.js$/.test(name)), files.join(" "));
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

Deno.test("a reins run --driver command loads the bundle's entry and its common chunk, nothing else", async () => {
  await using dir = await tempDir();
  const outdir = `${dir.path}/bundle`;
  await buildBundle({ outdir });
  const loaded = staticClosure(outdir, [BUNDLE_ENTRY]);
  // regression: 43 files, one chunk for each set of lazily imported modules sharing a module; then
  // five, the run command, the settings and the command driver each through a chunk of its own.
  assert.equal(loaded.size, 2, [...loaded].join(" "));
  const common = [...loaded].find((name) => name.startsWith("chunk-"));
  assert.ok(common !== undefined, [...loaded].join(" "));
  const text = Deno.readTextFileSync(`${outdir}/${common}`);
  for (const module of [...COMMON_ROOTS, "turn/run_turn.ts", "store/run_writer.ts"]) {
    assert.ok(text.includes(`// lib/${module}\n`), `${module} is not in ${common}`);
  }
  // The two files alone, under the binary's sandbox (which may read only their directory): the
  // run, its settings and its driver are imported lazily from them, not from a chunk of their own.
  const alone = `${dir.path}/alone`;
  await Deno.mkdir(alone);
  for (const name of loaded) await Deno.copyFile(`${outdir}/${name}`, `${alone}/${name}`);
  const cwd = `${dir.path}/work`;
  await Deno.mkdir(cwd);
  const result = await reins(["run", "--driver", "command", "--exec", "true", "hello"], {
    home: `${dir.path}/home`,
    cwd,
    allowRun: ["true"],
    bundle: `${alone}/${BUNDLE_ENTRY}`,
  });
  assert.equal(result.code, 0, result.stderr);
});

Deno.test("the bundle is ASCII: a module with one character beyond it is a two-byte string for V8", async () => {
  await using dir = await tempDir();
  const outdir = `${dir.path}/bundle`;
  await buildBundle({ outdir });
  for (const name of Deno.readDirSync(outdir)) {
    const text = Deno.readTextFileSync(`${outdir}/${name.name}`);
    // regression: lib/'s doc comments (an ellipsis, a dash) came through in the common chunk.
    // deno-lint-ignore no-control-regex
    const found = /[^\u0000-\u007f]/.exec(text);
    assert.ok(found === null, `${name.name}: ${JSON.stringify(found?.[0])} at ${found?.index}`);
  }
  // The escapes are the same characters to whoever reads them: the general help's dash.
  const help = await reins(["--help"], {
    home: `${dir.path}/home`,
    cwd: dir.path,
    bundle: `${outdir}/${BUNDLE_ENTRY}`,
  });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^reins \d+\.\d+\.\d+ \u2014 runs, records/);
});
