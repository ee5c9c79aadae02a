// Suites: 200 scenarios × 2 scripted turns on the command driver, 8 at a time, through the whole
// suite layer (state files, workdir copies, checks) against the same 400 turns through the turn
// engine alone (8 workers, each scenario's two turns on one context); and the suite's memory at 50
// and 200 scenarios, which should not grow with them. Each side runs in a child process of its
// own, so its peak resident size (VmHWM) and heap are its own. Then `reins suite run` as a whole
// process against promptfoo's `promptfoo eval` (npm, pinned) at 50, 200, 800 and 3,200 scenarios of
// one scripted turn and one check each, on the same echo program, 8 at a time; and reins's heap after
// the run, which should not grow with the suite. `deno task bench suite` runs it alone.
import { compare, figure } from "./_lib.ts";

const SELF = new URL(import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const JOBS = 8;
const TURNS = 2;

interface ChildResult {
  ms: number;
  turns: number;
  peakKiB: number;
  heapKiB: number;
}

// The prompt on stdin (reins's command driver) or as the first argument (promptfoo's exec:).
const AGENT = "#!/bin/sh\nif [ $# -gt 0 ]; then prompt=$1; else prompt=$(cat); fi\n" +
  'echo "answer to $prompt"\n';

async function writeSuite(dir: string, scenarios: number): Promise<string> {
  await Deno.writeTextFile(`${dir}/agent.sh`, AGENT);
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  const lines = ["suite: bench", "driver: command", "exec: ./agent.sh", "scenarios:"];
  for (let i = 0; i < scenarios; i++) {
    lines.push(`  - {key: s${i}, turns: [first, second], checks: [{regex: 'answer to second'}]}`);
  }
  await Deno.writeTextFile(`${dir}/suite.yaml`, lines.join("\n"));
  return `${dir}/suite.yaml`;
}

function peakKiB(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
}

/**
 * The heap still in use after three collections, a task between each: what is kept. One collection
 * leaves what only a finalizer lets go (AbortSignal.any's dependents, ~1 MiB after 3,200 turns) and
 * what V8 ages out over collections, so its figure grew with the length of the run (1.09–1.12× at
 * 3,200 vs 200 scenarios, against 1.03× after three).
 */
async function heapKiB(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3 && gc; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return Math.round(Deno.memoryUsage().heapUsed / 1024);
}

/** The child: one side of the comparison, `{ms, turns, peakKiB, heapKiB}` on stdout. */
async function child(mode: "suite" | "engine", dir: string, scenarios: number): Promise<void> {
  const { loadSettings } = await import("../../lib/core/config.ts");
  const { loadSuite } = await import("../../lib/suite/load.ts");
  const { engineTurns } = await import("../../lib/suite/turns.ts");
  const { openStore } = await import("../../lib/store/store.ts");
  const home = `${dir}/home-${mode}-${scenarios}`;
  const settings = loadSettings({ REINS_HOME: home });
  const suite = await loadSuite(await writeSuite(dir, scenarios));
  using store = openStore(home);
  const runTurn = engineTurns(store, settings, () => {});
  const never = new AbortController().signal;
  let turns = 0;
  const started = performance.now();
  if (mode === "suite") {
    const { runSuite } = await import("../../lib/suite/runner.ts");
    const { startSuiteRun } = await import("../../lib/suite/start.ts");
    const { readScenarioStates } = await import("../../lib/suite/state.ts");
    const run = startSuiteRun(store, suite, { kind: "fresh", filter: null, repeat: 1 }, {
      jobs: JOBS,
      report: false,
    });
    await runSuite({
      suite,
      handle: run.handle,
      todo: run.todo,
      jobs: JOBS,
      stop: never,
      kill: never,
      runTurn,
      makeModel: () => Promise.reject(new Error("no models in this bench")),
    });
    run.handle.end("finished");
    const states = readScenarioStates(store, run.handle.header);
    const passed = states.filter((state) => state.status === "passed").length;
    if (passed !== scenarios) throw new Error(`${scenarios - passed} scenarios did not pass`);
    turns = states.reduce((sum, state) => sum + state.turns, 0);
    run.handle.close();
  } else {
    // The same turns without the suite: one context per scenario, its turns in order, 8 at once.
    let next = 0;
    const worker = async () => {
      while (next < suite.scenarios.length) {
        const spec = suite.scenarios[next++];
        const cwd = await Deno.makeTempDir({ dir, prefix: "engine-" });
        let parentRunId: string | null = null;
        for (const prompt of ["first", "second"]) {
          const { evidence } = await runTurn({
            scenario: spec,
            prompt,
            cwd,
            contextId: `bench-${spec.key}`,
            parentRunId,
            timeoutSeconds: null,
            stop: never,
            kill: never,
            onCreated: () => {},
          });
          if (evidence.status !== "completed") throw new Error(`a turn ${evidence.status}`);
          parentRunId ??= evidence.runId;
          turns++;
        }
      }
    };
    await Promise.all(Array.from({ length: JOBS }, worker));
  }
  const ms = performance.now() - started;
  const result: ChildResult = { ms, turns, peakKiB: peakKiB(), heapKiB: await heapKiB() };
  console.log(JSON.stringify(result));
}

// promptfoo, the newest release that runs on this machine's Node 20 (0.122 wants Node 22.22).
const PROMPTFOO = "0.121.20";
const SIZES = [50, 200, 800, 3200];

/** The one-turn suites of the comparison with promptfoo: the same scenarios for both. */
async function writeOneTurn(dir: string, scenarios: number): Promise<string> {
  const at = `${dir}/n${scenarios}`;
  await Deno.mkdir(at, { recursive: true });
  await Deno.writeTextFile(`${at}/agent.sh`, AGENT);
  await Deno.chmod(`${at}/agent.sh`, 0o755);
  const reins = ["suite: bench", "driver: command", "exec: ./agent.sh", "scenarios:"];
  const promptfoo = [
    "description: bench",
    "prompts:",
    "  - '{{prompt}}'",
    "providers:",
    `  - id: 'exec: ${at}/agent.sh'`,
    "tests:",
  ];
  for (let i = 0; i < scenarios; i++) {
    reins.push(
      `  - {key: s${i}, turns: ['hello s${i}'], checks: [{regex: 'answer to hello s${i}'}]}`,
    );
    promptfoo.push(
      `  - {vars: {prompt: 'hello s${i}'}, assert: [{type: contains, value: 'answer to hello s${i}'}]}`,
    );
  }
  await Deno.writeTextFile(`${at}/suite.yaml`, reins.join("\n") + "\n");
  await Deno.writeTextFile(`${at}/promptfooconfig.yaml`, promptfoo.join("\n") + "\n");
  return at;
}

/** promptfoo's program, installed once into a cache of its own; or why it cannot be. */
async function installPromptfoo(): Promise<{ main: string } | { skip: string }> {
  const cache = `${Deno.env.get("HOME") ?? "/tmp"}/.cache/reins-bench/promptfoo@${PROMPTFOO}`;
  const mainOf = async (dir: string) => {
    try {
      const pkg = JSON.parse(
        await Deno.readTextFile(`${dir}/node_modules/promptfoo/package.json`),
      );
      const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.promptfoo;
      return bin ? `${dir}/node_modules/promptfoo/${bin}` : null;
    } catch {
      return null;
    }
  };
  const ready = await mainOf(cache);
  if (ready) return { main: ready };
  const staging = `${cache}.installing-${Deno.pid}`;
  try {
    await Deno.mkdir(staging, { recursive: true });
    await Deno.writeTextFile(`${staging}/package.json`, '{ "private": true }\n');
    const install = await new Deno.Command("npm", {
      args: [
        "install",
        "--prefix",
        staging,
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        `promptfoo@${PROMPTFOO}`,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!install.success) {
      const why = new TextDecoder().decode(install.stderr).trim().split("\n").slice(-3).join(" ");
      return { skip: `npm install promptfoo@${PROMPTFOO} failed: ${why}` };
    }
    if (await mainOf(staging) === null) {
      return { skip: `promptfoo@${PROMPTFOO} installed without its program` };
    }
    await Deno.remove(cache, { recursive: true }).catch(() => {});
    await Deno.rename(staging, cache);
    return { main: (await mainOf(cache))! };
  } catch (error) {
    return { skip: `promptfoo@${PROMPTFOO} could not be installed: ${error}` };
  } finally {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
}

interface CliResult {
  ms: number;
  heapKiB: number;
  peakKiB: number;
}

/** `reins suite run` as a whole process, its heap after the run (after GCs) told in a file. */
async function reinsCli(dir: string, at: string, scenarios: number, round: number) {
  const out = `${at}/reins-${round}.json`;
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      "--v8-flags=--expose-gc",
      "--config",
      CONFIG,
      SELF,
      "--cli",
      `${at}/suite.yaml`,
      out,
    ],
    env: { REINS_HOME: `${dir}/home-cli-${scenarios}-${round}` },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - started;
  if (!output.success) {
    throw new Error(
      `reins suite run failed: ${new TextDecoder().decode(output.stderr).slice(-800)}`,
    );
  }
  const table = new TextDecoder().decode(output.stdout);
  const passed = table.match(/^\s*s\d+\b.*\bpassed\b/gm)?.length ?? 0;
  const told = JSON.parse(await Deno.readTextFile(out)) as Omit<CliResult, "ms">;
  return { ms, ...told, passed, table };
}

/** The `--cli` child: reins's own entry point, then its heap after GCs and its peak. */
async function cliChild(file: string, out: string): Promise<void> {
  const { runCli } = await import("../../lib/cli/main.ts");
  const code = await runCli(["suite", "run", file, "--jobs", String(JOBS), "--no-report"]);
  if (code !== 0) throw new Error(`reins suite run exited ${code}`);
  const heap = await heapKiB();
  // What is kept, to look into (Chrome's DevTools read it): REINS_BENCH_HEAP_SNAPSHOT=FILE.
  const snapshot = Deno.env.get("REINS_BENCH_HEAP_SNAPSHOT");
  if (snapshot) (await import("node:v8")).writeHeapSnapshot(snapshot);
  await Deno.writeTextFile(out, JSON.stringify({ heapKiB: heap, peakKiB: peakKiB() }));
  // As main.ts and the binary's entry do: the CLI exits when runCli returns, and does not wait
  // out the one-shot deadlines a run leaves armed (a turn's 2 s pipe grace, onceAfter's timers,
  // which hold the event loop until due). Without this the child timed that wait, not the suite.
  Deno.exit(0);
}

/** `promptfoo eval` as a whole process, 8 at a time, its cache, telemetry and update check off. */
async function promptfooEval(main: string, dir: string, at: string, round: number) {
  const started = performance.now();
  const output = await new Deno.Command("node", {
    args: [main, "eval", "-c", `${at}/promptfooconfig.yaml`, "-j", String(JOBS), "--no-cache"],
    cwd: at,
    env: {
      PROMPTFOO_CONFIG_DIR: `${dir}/promptfoo-home-${round}`,
      PROMPTFOO_DISABLE_TELEMETRY: "1",
      PROMPTFOO_DISABLE_UPDATE: "1",
      PROMPTFOO_CACHE_ENABLED: "false",
      PROMPTFOO_DISABLE_SHARING: "1",
      // Its file logs: off, as the cache (0.121's closes its log stream before its last line and
      // dies of "write after end" at exit otherwise).
      PROMPTFOO_DISABLE_DEBUG_LOG: "1",
      PROMPTFOO_DISABLE_ERROR_LOG: "1",
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - started;
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  return { ms, code: output.code, text };
}

async function againstPromptfoo(dir: string): Promise<void> {
  const installed = await installPromptfoo();
  if ("skip" in installed) {
    console.warn(`suite bench: SKIPPED the comparison with promptfoo: ${installed.skip}`);
    figure("SKIPPED reins against promptfoo", installed.skip);
    return;
  }
  const rounds = Number(Deno.env.get("REINS_BENCH_SUITE_ROUNDS") ?? "2");
  const heap = new Map<number, number>();
  // Warm both: module caches, promptfoo's database made.
  const warm = await writeOneTurn(dir, 4);
  await reinsCli(dir, warm, 4, 0);
  await promptfooEval(installed.main, dir, warm, 0);
  for (const scenarios of SIZES) {
    const at = await writeOneTurn(dir, scenarios);
    const ours: number[] = [];
    const theirs: number[] = [];
    let peak = 0;
    let heapMin = Infinity;
    for (let round = 1; round <= rounds; round++) {
      const reins = await reinsCli(dir, at, scenarios, round);
      if (reins.passed !== scenarios) {
        throw new Error(`reins passed ${reins.passed} of ${scenarios}: ${reins.table.slice(-400)}`);
      }
      ours.push(reins.ms);
      heapMin = Math.min(heapMin, reins.heapKiB);
      peak = Math.max(peak, reins.peakKiB);
      const pf = await promptfooEval(installed.main, dir, at, round);
      const passes = /(\d[\d,]*) passed|Successes:\s*(\d+)|Passed:?\s*(\d[\d,]*)/i.exec(pf.text);
      const passedPf = Number((passes?.[1] ?? passes?.[2] ?? passes?.[3] ?? "0").replace(/,/g, ""));
      if (pf.code !== 0 || passedPf !== scenarios) {
        throw new Error(
          `promptfoo eval exited ${pf.code} with ${passedPf} of ${scenarios} passed: ${
            pf.text.slice(-600)
          }`,
        );
      }
      theirs.push(pf.ms);
    }
    heap.set(scenarios, heapMin);
    compare({
      name: `suite of ${scenarios} scenarios × 1 scripted turn + 1 check, --jobs 8, wall time`,
      ours: Math.min(...ours) / 1000,
      baseline: Math.min(...theirs) / 1000,
      unit: "s",
      better: "lower",
      goal: "<= 0.5",
      baselineName: `promptfoo@${PROMPTFOO} eval (exec: provider, contains)`,
    });
    figure(
      `reins at ${scenarios} scenarios`,
      `heap after the run ${(heapMin / 1024).toFixed(1)} MiB, peak (VmHWM) ${
        (peak / 1024).toFixed(1)
      } MiB; wall ${ours.map((ms) => (ms / 1000).toFixed(2)).join(", ")} s against promptfoo's ${
        theirs.map((ms) => (ms / 1000).toFixed(2)).join(", ")
      } s`,
    );
  }
  compare({
    name: "reins heap after a suite run (after GCs) at 3,200 scenarios",
    ours: heap.get(3200)! / 1024,
    baseline: heap.get(200)! / 1024,
    unit: "MiB",
    better: "lower",
    goal: "<= 1.1",
    baselineName: "at 200",
  });
}

async function side(
  mode: "suite" | "engine",
  dir: string,
  scenarios: number,
): Promise<ChildResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      "--v8-flags=--expose-gc",
      "--config",
      CONFIG,
      SELF,
      "--child",
      mode,
      dir,
      String(scenarios),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(
      `the ${mode} child failed: ${new TextDecoder().decode(output.stderr).slice(-800)}`,
    );
  }
  const result = JSON.parse(new TextDecoder().decode(output.stdout)) as ChildResult;
  if (result.turns !== scenarios * TURNS) {
    throw new Error(`the ${mode} child ran ${result.turns} turns, not ${scenarios * TURNS}`);
  }
  return result;
}

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-suite-" }));
  try {
    // Warm the module cache of both children.
    await side("engine", dir, 4);
    await side("suite", dir, 4);
    // Alternate, so that whatever else the machine does weighs on both alike; keep the best.
    const engine: ChildResult[] = [];
    const suite: ChildResult[] = [];
    for (let round = 0; round < 2; round++) {
      engine.push(await side("engine", dir, 200));
      suite.push(await side("suite", dir, 200));
    }
    const rate = (r: ChildResult) => r.turns / (r.ms / 1000);
    const best = (rs: ChildResult[]) => rs.reduce((a, b) => rate(a) >= rate(b) ? a : b);
    compare({
      name: "suite of 200 scenarios × 2 scripted turns, command driver, --jobs 8",
      ours: rate(best(suite)),
      baseline: rate(best(engine)),
      unit: "turns/s",
      better: "higher",
      goal: ">= 0.8",
      baselineName: "the same turns through the engine alone",
    });
    // Memory: what the suite keeps after a run (heap after GCs) should not grow with the number
    // of scenarios; its peak should be the engine's own at the same size.
    const small = await side("suite", dir, 50);
    const large = best(suite);
    compare({
      name: "suite heap kept after the run (after GCs) at 200 scenarios",
      ours: large.heapKiB / 1024,
      baseline: small.heapKiB / 1024,
      unit: "MiB",
      better: "lower",
      goal: "<= 1.25",
      baselineName: "at 50 scenarios",
    });
    compare({
      name: "suite peak memory (VmHWM) at 200 scenarios",
      ours: large.peakKiB / 1024,
      baseline: best(engine).peakKiB / 1024,
      unit: "MiB",
      better: "lower",
      goal: "<= 1.25",
      baselineName: "the engine alone at 200",
    });
    figure(
      "suite peak memory (VmHWM)",
      `${(small.peakKiB / 1024).toFixed(1)} MiB at 50 scenarios, ${
        (large.peakKiB / 1024).toFixed(1)
      } MiB at 200 (the engine alone: ${(best(engine).peakKiB / 1024).toFixed(1)} MiB at 200)`,
    );
    await againstPromptfoo(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main && Deno.args[0] === "--child") {
  await child(Deno.args[1] as "suite" | "engine", Deno.args[2], Number(Deno.args[3]));
}
if (import.meta.main && Deno.args[0] === "--cli") {
  await cliChild(Deno.args[1], Deno.args[2]);
}
