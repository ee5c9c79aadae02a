// `deno task install` and the launcher it puts on the PATH, as a new user meets them: a fresh
// HOME, a PATH without the install directory, data roots and working directories outside the
// directory reins starts in (and outside the temp dir), a harness program named in config.json.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";

interface World extends AsyncDisposable {
  root: string;
  home: string;
  /** Where reins is started. */
  work: string;
  /** TMPDIR: the only temp dir the sandbox grants. */
  tmp: string;
  env: Record<string, string>;
}

async function world(): Promise<World> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-install-" }));
  const home = `${root}/home`;
  const work = `${root}/work`;
  const tmp = `${root}/tmp`;
  for (const dir of [home, work, tmp]) await Deno.mkdir(dir);
  await Deno.writeTextFile(`${work}/notes.txt`, "hello\n");
  return {
    root,
    home,
    work,
    tmp,
    env: { HOME: home, PATH: SYSTEM_PATH, TMPDIR: tmp, DENO_DIR, NO_COLOR: "1" },
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

async function run(
  program: string,
  args: string[],
  options: { cwd: string; env: Record<string, string> },
) {
  const output = await new Deno.Command(program, {
    args,
    cwd: options.cwd,
    clearEnv: true,
    env: options.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

function install(w: World, ...args: string[]) {
  return run(Deno.execPath(), ["task", "--quiet", "install", ...args], {
    cwd: REPO,
    env: w.env,
  });
}

Deno.test("deno task install puts reins in ~/.local/bin and says how to put that on the PATH", async () => {
  await using w = await world();
  const result = await install(w);
  assert.equal(result.code, 0, result.stderr);
  const launcher = `${w.home}/.local/bin/reins`;
  assert.equal(
    result.stdout,
    [
      `installed ${launcher}: runs ${REPO}main.ts under the binary's sandbox`,
      `${w.home}/.local/bin is not on your PATH: add it, for this shell and in your shell's profile:`,
      '  export PATH="$HOME/.local/bin:$PATH"',
      `(or run ${launcher} by its path), then: reins run 'list the files and summarise them'`,
      "",
    ].join("\n"),
  );
  assert.equal(Deno.statSync(launcher).mode! & 0o777, 0o755);
  // Typed as printed: the export line, then reins.
  const typed = await run("sh", ["-c", `export PATH="$HOME/.local/bin:$PATH"; reins --version`], {
    cwd: w.work,
    env: w.env,
  });
  assert.equal(typed.code, 0, typed.stderr);
  assert.match(typed.stdout, /^reins \d+\.\d+\.\d+\n$/);

  // On the PATH already: it says so and what to run next. Installing again replaces it.
  const onPath = { ...w.env, PATH: `${w.home}/.local/bin:${SYSTEM_PATH}` };
  const again = await run(Deno.execPath(), ["task", "--quiet", "install"], {
    cwd: REPO,
    env: onPath,
  });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /\nnext: reins run 'list the files and summarise them'/);
});

Deno.test("deno task install goes to $DENO_INSTALL_ROOT/bin or --dir, and leaves a reins it did not write alone", async () => {
  await using w = await world();
  const root = `${w.root}/deno-root`;
  const viaRoot = await run(Deno.execPath(), ["task", "--quiet", "install"], {
    cwd: REPO,
    env: { ...w.env, DENO_INSTALL_ROOT: root },
  });
  assert.equal(viaRoot.code, 0, viaRoot.stderr);
  assert.ok(Deno.statSync(`${root}/bin/reins`).isFile);
  const dir = `${w.root}/bin`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/reins`, "#!/bin/sh\necho someone else's\n");
  const refused = await install(w, "--dir", dir);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    `deno task install: ${dir}/reins exists and is not a reins launcher\n` +
      "hint: move it away, install elsewhere with --dir DIR, or replace it with --force\n",
  );
  assert.equal(await Deno.readTextFile(`${dir}/reins`), "#!/bin/sh\necho someone else's\n");
  assert.equal((await install(w, "--dir", dir, "--force")).code, 0);
  const removed = await install(w, "--dir", dir, "--uninstall");
  assert.equal(removed.stdout, `removed ${dir}/reins\n`);
  assert.equal(await Deno.stat(`${dir}/reins`).catch(() => null), null);
});

// A stand-in for Claude Code that speaks enough of its stream-json for one turn.
const FAKE_CLAUDE = `#!/bin/sh
read -r line
echo '{"type":"system","subtype":"init","session_id":"0190a0b0-0000-7000-8000-00000000abcd"}'
echo '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi from the configured program"}]},"parent_tool_use_id":null}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"hi from the configured program","session_id":"0190a0b0-0000-7000-8000-00000000abcd","usage":{"input_tokens":1,"output_tokens":1}}'
cat >/dev/null
`;

// regression: the sandbox of `deno task reins` was built from REINS_HOME/HOME and the start
// directory only, so `--home` or `--cwd` elsewhere was refused (exit 4, with a hint to set the
// flag that was set), and a program named in config.json was refused with Deno's raw message.
Deno.test("the launcher builds the sandbox from --home and --cwd as given and from config.json's programs", async () => {
  await using w = await world();
  assert.equal((await install(w)).code, 0);
  const reins = `${w.home}/.local/bin/reins`;
  const data = `${w.root}/elsewhere/data`;
  const other = `${w.root}/other`;
  await Deno.mkdir(other);
  await Deno.writeTextFile(`${other}/todo.txt`, "write tests\n");
  // Neither below the start directory nor in the temp dir.
  const first = await run(reins, ["--home", data, "run", "--json", "look around"], {
    cwd: w.work,
    env: w.env,
  });
  assert.equal(first.code, 0, first.stderr);
  assert.equal(JSON.parse(first.stdout).status, "completed");
  const elsewhere = await run(
    reins,
    ["run", `--home=${data}`, "--cwd", "../other", "--json", "look there"],
    { cwd: w.work, env: w.env },
  );
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  assert.match(JSON.parse(elsewhere.stdout).result, /read todo\.txt/);
  const listed = await run(reins, ["runs", "--home", data], { cwd: w.work, env: w.env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(listed.stdout.trimEnd().split("\n").length, 3, listed.stdout);

  // A harness program configured in the data root's config.json may run.
  const program = `${w.root}/tools/fake-claude`;
  await Deno.mkdir(`${w.root}/tools`);
  await Deno.writeTextFile(program, FAKE_CLAUDE, { mode: 0o755 });
  await Deno.writeTextFile(
    `${data}/config.json`,
    JSON.stringify({ drivers: { claude: { program } } }),
    { mode: 0o600 },
  );
  const claude = await run(reins, ["--home", data, "run", "--driver", "claude", "--json", "hi"], {
    cwd: w.work,
    env: w.env,
  });
  assert.equal(claude.code, 0, claude.stderr);
  assert.equal(JSON.parse(claude.stdout).result, "hi from the configured program");

  // `deno task reins` is the same launcher.
  const task = await run(Deno.execPath(), ["task", "--quiet", "reins", "--home", data, "runs"], {
    cwd: REPO,
    env: w.env,
  });
  assert.equal(task.code, 0, task.stderr);
  assert.deepEqual(
    task.stdout.trimEnd().split("\n").slice(1).map((line) => line.split(/ +/)[2]),
    ["claude-code", "reins", "reins"],
  );
});

Deno.test("regression: deno task reins runs the Deno that runs the task, whatever `deno` PATH has", async () => {
  // On a machine with Deno only from npm, PATH has no `deno`; one that has it may hold another
  // version. The task named `deno` and the shell looked it up: "scripts/reins.sh: deno: not found".
  await using w = await world();
  const bin = `${w.root}/bin`;
  await Deno.mkdir(bin);
  await Deno.writeTextFile(
    `${bin}/deno`,
    "#!/bin/sh\necho 'the deno on PATH ran' >&2\nexit 99\n",
    { mode: 0o755 },
  );
  const data = `${w.root}/data`;
  for (const path of [SYSTEM_PATH, `${bin}:${SYSTEM_PATH}`]) {
    const task = await run(Deno.execPath(), ["task", "--quiet", "reins", "--home", data, "runs"], {
      cwd: REPO,
      env: { ...w.env, PATH: path },
    });
    assert.equal(task.code, 0, `PATH=${path}: ${task.stderr}`);
    assert.doesNotMatch(task.stderr, /the deno on PATH ran|not found/);
  }
});
