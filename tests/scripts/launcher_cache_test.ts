// The launcher's cache of sandboxes (scripts/reins.sh, scripts/launcher_cache.ts): a command line
// seen before starts Deno once; an entry is keyed on everything its flags come from, follows the
// config file and the code that computes it, and one that someone else could have written, or
// that was made for another key, grants nothing.
import assert from "node:assert/strict";
import fc from "fast-check";
import { invocationSandbox, SANDBOX_ENV, VALUE_FLAGS } from "../../scripts/invocation.ts";
import { ALLOW_ENV, staticModules } from "../../scripts/launcher_cache.ts";
import { tempDir } from "../support/reins.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const REINS_SH = `${REPO}scripts/reins.sh`;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
const decoder = new TextDecoder();

/** A shell variable of reins.sh: its quoted words, or its value with line continuations. */
function shellValue(name: string): string {
  const text = Deno.readTextFileSync(REINS_SH);
  const quoted = new RegExp(`^${name}='([^']*)'`, "m").exec(text) ??
    new RegExp(`^${name}="([^"]*)"`, "m").exec(text);
  if (quoted) return quoted[1].replaceAll("\\\n", "");
  const plain = new RegExp(`^${name}=((?:[^\\n]*\\\\\\n)*[^\\n]*)`, "m").exec(text);
  if (!plain) throw new Error(`no ${name}= in reins.sh`);
  return plain[1].replaceAll("\\\n", "");
}

Deno.test("reins.sh keys its cache on SANDBOX_ENV and VALUE_FLAGS, hashes sandbox_flags.ts's static imports, spells out ALLOW_ENV", async () => {
  assert.deepEqual(shellValue("sandbox_env").split(/\s+/), [...SANDBOX_ENV]);
  assert.deepEqual(
    shellValue("value_flags").trim().split(" "),
    VALUE_FLAGS.map((name) => `--${name}`),
  );
  const hashed = shellValue("sandbox_code").split(/\s+/);
  const modules = staticModules(new URL("../../scripts/sandbox_flags.ts", import.meta.url));
  assert.deepEqual([...hashed].sort(), [...modules, "scripts/reins.sh"].sort());
  // staticModules() against Deno's own module graph, dynamic imports left out.
  const info = JSON.parse(
    decoder.decode(
      (await new Deno.Command(Deno.execPath(), {
        args: ["info", "--json", "--config", `${REPO}deno.json`, `${REPO}scripts/sandbox_flags.ts`],
        stdout: "piped",
      }).output()).stdout,
    ),
  ) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: {
        code?: { specifier: string };
        type?: { specifier: string };
        isDynamic?: boolean;
      }[];
    }[];
  };
  const bySpecifier = new Map(info.modules.map((module) => [module.specifier, module]));
  const graph = new Set<string>();
  const visit = (specifier: string) => {
    if (!specifier.startsWith("file://") || graph.has(specifier)) return;
    graph.add(specifier);
    for (const dependency of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (dependency.isDynamic) continue;
      for (const resolved of [dependency.code?.specifier, dependency.type?.specifier]) {
        if (resolved) visit(resolved);
      }
    }
  };
  visit(info.roots[0]);
  assert.deepEqual(
    [...graph].map((specifier) => new URL(specifier).pathname.slice(REPO.length)).sort(),
    modules,
  );
  assert.equal(`--allow-env=${shellValue("allow_env").slice("--allow-env=".length)}`, ALLOW_ENV);
});

/** A Deno that only says what reins.sh asked of it: the sandbox_flags.ts command line, one a line. */
async function fakeDeno(dir: string): Promise<{ deno: string; asked: string }> {
  const deno = `${dir}/fake-deno`;
  const asked = `${dir}/asked`;
  await Deno.writeTextFile(
    deno,
    `#!/bin/sh
case "$*" in *scripts/sandbox_flags.ts*) printf '%s\\n' "$@" > '${asked}'; printf '{}\\n--no-prompt\\n' ;; esac
exit 0
`,
    { mode: 0o755 },
  );
  return { deno, asked };
}

/** The words of `args` reins.sh lets sandbox_flags.ts see (--keep). */
async function keptWords(
  fake: { deno: string; asked: string },
  args: string[],
  cwd: string,
): Promise<string[]> {
  const output = await new Deno.Command("sh", {
    args: [REINS_SH, fake.deno, ...args],
    cwd,
    clearEnv: true,
    env: { HOME: cwd, PATH: SYSTEM_PATH },
  }).output();
  assert.equal(output.code, 0, decoder.decode(output.stderr));
  const asked = (await Deno.readTextFile(fake.asked)).split("\n");
  const keep = asked[asked.indexOf("--keep") + 1];
  if (keep === "all") return args;
  const kept = new Set(keep.split(" ").filter(Boolean).map(Number));
  return args.filter((_, i) => kept.has(i + 1));
}

Deno.test("reins.sh keys its cache on the words that can name something, not on a prompt or a run id", async () => {
  await using dir = await tempDir();
  const fake = await fakeDeno(dir.path);
  assert.deepEqual(
    await keptWords(
      fake,
      ["run", "--context", "t-42", "--json", "what is in the box?", "--cwd", "w"],
      dir.path,
    ),
    ["run", "--context", "--json", "--cwd", "w"],
  );
  assert.deepEqual(await keptWords(fake, ["show", "01ab", "--home", "/d"], dir.path), [
    "show",
    "--home",
    "/d",
  ]);
  assert.deepEqual(await keptWords(fake, ["run", "--", "--home", "/d"], dir.path), ["run"]);
  // A suite's file and its folders are bare words: its command line is kept whole.
  assert.deepEqual(await keptWords(fake, ["suite", "run", "s.yaml", "x"], dir.path), [
    "suite",
    "run",
    "s.yaml",
    "x",
  ]);
});

Deno.test("the words reins.sh drops change no sandbox: invocationSandbox() of the kept words is the whole line's", async () => {
  await using dir = await tempDir();
  const fake = await fakeDeno(dir.path);
  const word = fc.constantFrom(
    "run",
    "runs",
    "suite",
    "hello there",
    "--",
    "-q",
    "--json",
    "--context",
    "--home=/h2",
    "../elsewhere",
    "a.wav",
    "mock:m.json",
    "'/opt/an agent' -v",
    "http://models.example:9/v1",
    "::1",
    "",
    ...VALUE_FLAGS.map((name) => `--${name}`),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(word, { maxLength: 9 }), async (args) => {
      const kept = await keptWords(fake, args, dir.path);
      const env = { HOME: dir.path };
      assert.deepEqual(
        await invocationSandbox(kept, env, dir.path),
        await invocationSandbox(args, env, dir.path),
      );
    }),
    { numRuns: 100 },
  );
});

interface Checkout extends AsyncDisposable {
  root: string;
  home: string;
  work: string;
  env: Record<string, string>;
  /** The launcher `deno task install` writes, its Deno a wrapper that counts the starts. */
  reins(args: string[], options?: { env?: Record<string, string>; cwd?: string }): Promise<{
    code: number;
    stdout: string;
    stderr: string;
    /** How many times Deno was started. */
    denos: number;
  }>;
  /** The cache's entries, by name. */
  entries(): string[];
  cache: string;
}

async function checkout(repo = REPO): Promise<Checkout> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-launcher-" }));
  const home = `${root}/home`;
  const work = `${root}/work`;
  for (const dir of [home, work]) await Deno.mkdir(dir);
  const log = `${root}/denos.log`;
  const deno = `${root}/deno`;
  await Deno.writeTextFile(
    deno,
    `#!/bin/sh\necho started >> '${log}'\nexec '${Deno.execPath()}' "$@"\n`,
    { mode: 0o755 },
  );
  const launcher = `${root}/reins`;
  const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`;
  await Deno.writeTextFile(
    launcher,
    `#!/bin/sh\nset -- --launcher ${quote(deno)} ${quote(repo.replace(/\/$/, ""))} "$@"\n. ${
      quote(`${repo}scripts/reins.sh`)
    }\n`,
    { mode: 0o755 },
  );
  const env = { HOME: home, PATH: SYSTEM_PATH, DENO_DIR, NO_COLOR: "1" };
  const cache = `${home}/.cache/reins/launcher`;
  return {
    root,
    home,
    work,
    env,
    cache,
    async reins(args, options = {}) {
      await Deno.remove(log).catch(() => {});
      const output = await new Deno.Command(launcher, {
        args,
        cwd: options.cwd ?? work,
        clearEnv: true,
        env: { ...env, ...options.env },
        stdin: "null",
      }).output();
      const started = await Deno.readTextFile(log).catch(() => "");
      return {
        code: output.code,
        stdout: decoder.decode(output.stdout),
        stderr: decoder.decode(output.stderr),
        denos: started.split("\n").filter(Boolean).length,
      };
    },
    entries() {
      try {
        return [...Deno.readDirSync(cache)].map((entry) => entry.name).sort();
      } catch {
        return [];
      }
    },
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/** `reins doctor --json`'s sandbox, as the process sees it. */
function sandboxOf(result: { code: number; stdout: string; stderr: string }) {
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).sandbox as {
    read: { anywhere: boolean };
    run: { programs: Record<string, boolean>; shell: boolean };
  };
}

// regression: the installed reins started Deno twice on every start (sandbox_flags.ts, then
// main.ts): `reins --version` took 2.6 times an empty `deno run`.
Deno.test("regression: the installed reins starts Deno once for a command line it has seen", async () => {
  await using c = await checkout();
  const first = await c.reins(["--version"]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.denos, 2);
  assert.equal(c.entries().length, 1);
  const again = await c.reins(["--version"]);
  assert.deepEqual([again.code, again.stdout, again.denos], [0, first.stdout, 1]);
  // Another prompt is the same sandbox: the same entry.
  assert.equal((await c.reins(["run", "--json", "one prompt"])).denos, 2);
  const other = await c.reins(["run", "--json", "another prompt"]);
  assert.equal(other.code, 0, other.stderr);
  assert.equal(JSON.parse(other.stdout).status, "completed");
  assert.equal(other.denos, 1);
  // Another data root is another sandbox.
  assert.equal((await c.reins(["runs", "--home", `${c.root}/data`])).denos, 2);
  assert.equal(c.entries().length, 3);
});

const FAKE_PROGRAM = "#!/bin/sh\necho hi\n";

Deno.test("a cached sandbox follows the config file: a program it no longer names may not run", async () => {
  await using c = await checkout();
  const program = `${c.root}/tools/agent`;
  await Deno.mkdir(`${c.root}/tools`);
  await Deno.writeTextFile(program, FAKE_PROGRAM, { mode: 0o755 });
  await Deno.mkdir(`${c.home}/.reins`, { mode: 0o700 });
  const config = `${c.home}/.reins/config.json`;
  const write = (value: unknown) =>
    Deno.writeTextFile(config, JSON.stringify(value), { mode: 0o600 });
  await write({ drivers: { claude: { program } } });
  for (let i = 0; i < 2; i++) {
    const seen = sandboxOf(await c.reins(["doctor", "--json"]));
    assert.equal(seen.run.programs[program], true);
  }
  // Replaced by a file written earlier (mtime older than the entry), as `cp -p` or `mv` would.
  const older = `${c.root}/older.json`;
  await Deno.writeTextFile(older, JSON.stringify({ drivers: {} }), { mode: 0o600 });
  await Deno.utime(older, 1, 1);
  await Deno.rename(older, config);
  const after = await c.reins(["doctor", "--json"]);
  assert.equal(after.denos, 2, "a miss: the config file it was computed from changed");
  assert.equal(sandboxOf(after).run.programs[program] ?? false, false);
  // Gone: as if it never was.
  await Deno.remove(config);
  assert.equal(
    sandboxOf(await c.reins(["doctor", "--json"])).run.programs[program] ?? false,
    false,
  );
});

Deno.test("a cached sandbox follows the code that computes it", async () => {
  // A checkout of its own, to change its permissions.ts.
  await using c0 = await tempDir("reins-launcher-checkout-");
  const copy = `${await Deno.realPath(c0.path)}/reins/`;
  await Deno.mkdir(copy);
  for (const path of ["lib", "scripts"]) {
    const done = await new Deno.Command("cp", { args: ["-R", `${REPO}${path}`, copy] }).output();
    assert.ok(done.success);
  }
  for (const file of ["main.ts", "deno.json", "deno.lock"]) {
    await Deno.copyFile(`${REPO}${file}`, `${copy}${file}`);
  }
  await using c = await checkout(copy);
  assert.equal(sandboxOf(await c.reins(["doctor", "--json"])).run.shell, false);
  assert.equal((await c.reins(["--version"])).denos, 2);
  assert.equal((await c.reins(["--version"])).denos, 1);
  // Its process tools now include sh; the file keeps its old mtime, as a restored copy would.
  const permissions = `${copy}scripts/permissions.ts`;
  const { mtime } = await Deno.stat(permissions);
  const text = await Deno.readTextFile(permissions);
  await Deno.writeTextFile(
    permissions,
    text.replace(
      'export const PROCESS_TOOLS = ["kill", "ps"];',
      'export const PROCESS_TOOLS = ["kill", "ps", "sh"];',
    ),
  );
  await Deno.utime(permissions, mtime!, mtime!);
  const changed = await c.reins(["doctor", "--json"]);
  assert.equal(changed.denos, 2);
  assert.equal(sandboxOf(changed).run.shell, true);
});

/** The one entry of the cache, after a first start made it. */
async function theEntry(c: Checkout, args: string[]): Promise<string> {
  const made = await c.reins(args);
  assert.equal(made.code, 0, made.stderr);
  const entries = c.entries();
  assert.equal(entries.length, 1);
  return `${c.cache}/${entries[0]}`;
}

/** The entry with sh added to its programs: what someone planting one would want. */
async function widened(entry: string): Promise<string> {
  const text = await Deno.readTextFile(entry);
  assert.match(text, /^--allow-run=.*$/m);
  return text.replace(/^(--allow-run=.*)$/m, "$1,sh");
}

Deno.test("a planted cache entry grants nothing: another user's, a link, another key's, a line that is no permission", async () => {
  await using c = await checkout();
  const args = ["doctor", "--json"];
  const entry = await theEntry(c, args);
  const planted = await widened(entry);
  const check = async (what: string) => {
    const seen = await c.reins(args);
    assert.equal(seen.denos, 2, `${what}: computed afresh`);
    assert.equal(sandboxOf(seen).run.shell, false, what);
  };
  // The same user's own, well-formed entry is believed: that is what the cache is.
  await Deno.writeTextFile(entry, planted, { mode: 0o600 });
  assert.equal(sandboxOf(await c.reins(args)).run.shell, true);

  if (Deno.uid() === 0) {
    await Deno.writeTextFile(entry, planted, { mode: 0o600 });
    await Deno.chown(entry, 65534, 65534);
    await check("an entry another user owns");
    await Deno.writeTextFile(entry, planted, { mode: 0o600 });
    await Deno.chown(c.cache, 65534, 65534);
    await check("an entry in a directory another user owns");
    await Deno.chown(c.cache, 0, 0);
  } else {
    console.error("SKIPPED: entries another user owns need root to make (chown)");
  }
  const elsewhere = `${c.root}/planted`;
  await Deno.writeTextFile(elsewhere, planted, { mode: 0o600 });
  await Deno.remove(entry);
  await Deno.symlink(elsewhere, entry);
  await check("a link to an entry");
  // Another key's entry renamed over this one names the key it was made for.
  const otherKey = planted.replace(
    /^(reins launcher cache 1 )[0-9a-f]{16}$/m,
    "$10123456789abcdef",
  );
  await Deno.writeTextFile(entry, otherKey, { mode: 0o600 });
  await check("an entry made for another key");
  await Deno.writeTextFile(entry, `${planted}--preload=${elsewhere}\n`, { mode: 0o600 });
  await check("an entry with a line that is no permission flag");
  await Deno.writeTextFile(entry, planted.replace(/^env$/m, "--allow-env"), { mode: 0o600 });
  await check("an entry with an unscoped permission");
});

Deno.test("a cache entry others may write, or linked in from elsewhere, stops reins before it runs", async () => {
  await using c = await checkout();
  const args = ["doctor", "--json"];
  const entry = await theEntry(c, args);
  await Deno.writeTextFile(entry, await widened(entry), { mode: 0o600 });
  await Deno.chmod(entry, 0o666);
  const writable = await c.reins(args);
  assert.equal(writable.code, 4, writable.stderr);
  assert.equal(JSON.parse(writable.stdout).error.code, "sandbox");
  assert.equal(
    writable.stderr,
    `reins: The launcher's cached sandbox ${JSON.stringify(entry)} may be written by others ` +
      `(mode 0666): reins did not run under it\n` +
      `hint: remove it (rm ${JSON.stringify(entry)}) and run again: the launcher makes it anew\n`,
  );
  await Deno.chmod(entry, 0o600);
  await Deno.link(entry, `${c.root}/second-name`);
  const linked = await c.reins(args);
  assert.equal(linked.code, 4);
  assert.match(linked.stderr, /has 2 names \(a hard link from elsewhere\): reins did not run/);
  await Deno.remove(`${c.root}/second-name`);
  assert.equal((await c.reins(args)).code, 0);
});

Deno.test("deno task reins finds its flags in the same cache; a suite's are never cached", async () => {
  await using c = await checkout();
  const task = () =>
    new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "reins", "--home", `${c.root}/data`, "runs"],
      cwd: REPO,
      clearEnv: true,
      env: c.env,
    }).output();
  assert.equal((await task()).code, 0);
  const [name] = c.entries();
  const made = await Deno.stat(`${c.cache}/${name}`);
  const again = await task();
  assert.equal(again.code, 0, decoder.decode(again.stderr));
  // Found, not made again: an entry is replaced by a rename, which a new inode would show.
  assert.deepEqual(c.entries(), [name]);
  assert.equal((await Deno.stat(`${c.cache}/${name}`)).ino, made.ino);

  await Deno.writeTextFile(
    `${c.work}/s.yaml`,
    "suite: s\nscenarios:\n  - key: a\n    turns: [hi]\n",
  );
  const validated = await c.reins(["suite", "validate", "s.yaml"]);
  assert.equal(validated.code, 0, validated.stderr);
  assert.equal((await c.reins(["suite", "validate", "s.yaml"])).denos, 2);
  assert.deepEqual(c.entries(), [name]);
});
