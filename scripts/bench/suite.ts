// Suites: 200 scenarios × 2 scripted turns on the command driver, 8 at a time, through the whole
// suite layer (state files, workdir copies, checks) against the same 400 turns through the turn
// engine alone (8 workers, each scenario's two turns on one context); and the suite's memory at 50
// and 200 scenarios, which should not grow with them. Each side runs in a child process of its
// own, so its peak resident size (VmHWM) and heap are its own. `deno task bench suite` runs it alone.
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

const AGENT = '#!/bin/sh\nprompt=$(cat)\necho "answer to $prompt"\n';

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

function heapKiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
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
  const result: ChildResult = { ms, turns, peakKiB: peakKiB(), heapKiB: heapKiB() };
  console.log(JSON.stringify(result));
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
    // Memory: what the suite keeps after a run (heap after a GC) should not grow with the number
    // of scenarios; its peak should be the engine's own at the same size.
    const small = await side("suite", dir, 50);
    const large = best(suite);
    compare({
      name: "suite heap kept after the run (after a GC) at 200 scenarios",
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
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main && Deno.args[0] === "--child") {
  await child(Deno.args[1] as "suite" | "engine", Deno.args[2], Number(Deno.args[3]));
}
