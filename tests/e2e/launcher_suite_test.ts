// reins suite through the launcher a checkout installs, as the README and docs/suites.md have it:
// the launcher grants what a suite command names — the suite file and what it names (workdir,
// agents, mock models, sh for setup and command checks), --out, --plan and --junit elsewhere —
// and reins suite run asks the sandbox for all of it before it starts or reports anything.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import { hasPython, startPythonPlatform } from "../fixtures/python_platform.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const EXAMPLE_DIR = `${REPO}examples/suite`;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const decoder = new TextDecoder();

interface World extends AsyncDisposable {
  root: string;
  reins(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** `deno task install` into a fresh HOME, as a new user runs it; a PATH without deno. */
async function installed(): Promise<World> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-launcher-suite-" }));
  const env = {
    HOME: `${root}/home`,
    PATH: "/usr/local/bin:/usr/bin:/bin",
    DENO_DIR,
    NO_COLOR: "1",
  };
  await Deno.mkdir(env.HOME);
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "install", "--dir", `${root}/bin`],
    cwd: REPO,
    clearEnv: true,
    env,
  }).output();
  assert.equal(install.code, 0, decoder.decode(install.stderr));
  return {
    root,
    async reins(args, cwd) {
      const output = await new Deno.Command(`${root}/bin/reins`, {
        args,
        cwd,
        clearEnv: true,
        env,
        stdin: "null",
      }).output();
      return {
        code: output.code,
        stdout: decoder.decode(output.stdout),
        stderr: decoder.decode(output.stderr),
      };
    },
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

// regression: the README's own `reins suite run examples/suite/suite.yaml` was refused ("refused
// to run sh", then the agent), and from another directory so were the suite's workdir and mock
// files, and `reins suite plan … --out` a folder away (the plan is written beside, then renamed).
Deno.test("regression: the installed reins runs the README's example suite as printed, and from elsewhere with --out, --plan and --junit", async () => {
  await using w = await installed();
  const asPrinted = await w.reins(["suite", "run", "examples/suite/suite.yaml"], REPO);
  assert.equal(asPrinted.code, 0, asPrinted.stderr + asPrinted.stdout);
  assert.match(asPrinted.stdout, /\n4 scenarios: 4 passed, 0 failed, 0 errors, 0 skipped in /);
  // regrade reads the suite file the suite run names: the launcher grants it and what it names
  // (its mock judges, sh for its command checks), from a directory that is not the suite's.
  const regraded = await w.reins(["suite", "regrade", "last"], w.root);
  assert.equal(regraded.code, 0, regraded.stderr + regraded.stdout);
  assert.match(regraded.stdout, /\n4 scenarios: 4 passed, 0 failed, 0 errors, 0 skipped in /);

  // A copy of the example beside the directory reins starts in; the plan and JUnit a folder away.
  const suite = `${w.root}/suite`;
  const copied = await new Deno.Command("cp", { args: ["-R", EXAMPLE_DIR, suite] }).output();
  assert.ok(copied.success);
  const work = `${w.root}/work`;
  const out = `${w.root}/out`;
  for (const dir of [work, out]) await Deno.mkdir(dir);
  const validated = await w.reins(["suite", "validate", "../suite/suite.yaml"], work);
  assert.equal(validated.code, 0, validated.stderr);
  const planned = await w.reins(
    ["suite", "plan", "../suite/suite.yaml", "--shards", "2", "--out", `${out}/plan.json`],
    work,
  );
  assert.equal(planned.code, 0, planned.stderr);
  assert.equal(JSON.parse(await Deno.readTextFile(`${out}/plan.json`)).shards, 2);
  const shard = await w.reins(
    [
      "suite",
      "run",
      "../suite/suite.yaml",
      "--plan",
      "../out/plan.json",
      "--shard",
      "1/2",
      "--junit",
      "../out/junit.xml",
    ],
    work,
  );
  assert.equal(shard.code, 0, shard.stderr + shard.stdout);
  assert.match(shard.stdout, /\n2 scenarios: 2 passed, 0 failed, 0 errors, 0 skipped in /);
  assert.match(await Deno.readTextFile(`${out}/junit.xml`), /<testsuite [^>]*tests="2"/);
});

const PYTHON = hasPython();
if (!PYTHON) console.error("SKIPPED: the platform stub needs python3");

// regression: a sandbox that could not run the suite's agent (or sh) was told so only by the first
// scenario, after provision, start and batch had reached the platform: the suite run was left
// begun there, never to finish.
Deno.test({
  name:
    "regression: reins suite run stops before it reports anything when the sandbox refuses what the suite needs",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await using platform = await startPythonPlatform();
    const home = `${dir.path}/home`;
    const suite = `${dir.path}/suite`;
    const copied = await new Deno.Command("cp", { args: ["-R", EXAMPLE_DIR, suite] }).output();
    assert.ok(copied.success);
    const options = {
      home,
      cwd: suite,
      env: { ...platform.env, ALK_HARNESS_JOB_ID: "job-1" },
    };
    const noShell = await reins(["suite", "run", "suite.yaml"], {
      ...options,
      allowRun: [`${suite}/agents/shop.sh`],
    });
    assert.equal(noShell.code, 4, noShell.stderr);
    assert.match(
      noShell.stderr,
      /^reins: The sandbox refused to run "sh": .*\nhint: scenarios\[0\] \(refund-late-order\): setup needs it; nothing was started or reported\n$/,
    );
    const noAgent = await reins(["suite", "run", "suite.yaml"], { ...options, allowRun: ["sh"] });
    assert.equal(noAgent.code, 4, noAgent.stderr);
    assert.match(noAgent.stderr, new RegExp(`refused to run "${suite}/agents/shop.sh"`));
    assert.match(noAgent.stderr, /hint: scenarios\[0\] \(refund-late-order\): exec needs it/);
    assert.deepEqual((await platform.log()).requests.map((request) => request.route), []);
    // Left stopped here only, every scenario unplayed, for --resume once the sandbox grants it.
    const listed = JSON.parse((await reins(["suite", "list", "--json"], options)).stdout);
    assert.deepEqual(
      listed.suiteRuns.map((run: { state: string; totals: { unfinished: number } }) => [
        run.state,
        run.totals.unfinished,
      ]),
      [["stopped", 4], ["stopped", 4]],
    );
    // --filter narrows what is asked: the built-in loop's scenario needs no agent program.
    const loopOnly = await reins(
      ["suite", "run", "suite.yaml", "--filter", "notes-on-the-demo-model", "--no-report"],
      { ...options, allowRun: ["sh"] },
    );
    assert.equal(loopOnly.code, 0, loopOnly.stderr + loopOnly.stdout);
  },
});
