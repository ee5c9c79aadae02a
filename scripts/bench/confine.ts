// Confinement's cost (issue 25): one trivial command turn (`true`) confined under bubblewrap
// (lib/confine/) against the same turn unconfined, in one process through the turn engine, turn
// about so that the machine's load weighs on both alike. What a confined turn adds: the probe
// (once per process), the proxy's listener and two socat bridges outside (made per turn), then
// bubblewrap's namespaces and mounts and two socat bridges inside, waited for until they listen.
import { compare, figure } from "./_lib.ts";
import { loadSettings } from "../../lib/core/config.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import { confinementProblem } from "../../lib/confine/probe.ts";

const TURNS = 30;

export default async function main(): Promise<void> {
  const problem = await confinementProblem();
  if (problem !== null) {
    figure("confined trivial turn", `SKIPPED: ${problem}`);
    return;
  }
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-bench-confine-" });
  const cwd = `${root}/work`;
  await Deno.mkdir(cwd);
  using store = openStore(`${root}/data`);
  const settings = loadSettings({ REINS_HOME: store.home, HOME: cwd });
  const signals = { stop: new AbortController().signal, kill: new AbortController().signal };
  const turn = async (confine: boolean, i: number) => {
    const start = performance.now();
    const { summary } = await runTurn(store, settings, {
      agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
      prompt: `turn ${i}`,
      cwd,
      contextId: null,
      approval: "auto",
      budget: {},
      timeoutSeconds: null,
      parentRunId: null,
      trigger: "suite",
      confine,
    }, signals);
    if (summary.status !== "completed") throw new Error(`turn ${i}: ${summary.reason}`);
    return performance.now() - start;
  };
  // Warm both paths (the probe, module loading) before measuring.
  await turn(false, -1);
  await turn(true, -2);
  const plain: number[] = [];
  const confined: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    plain.push(await turn(false, i));
    confined.push(await turn(true, i));
  }
  await Deno.remove(root, { recursive: true });
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
  compare({
    name: "a confined trivial command turn (in process, median of 30)",
    ours: median(confined),
    baseline: median(plain),
    unit: "ms",
    better: "lower",
    goal: "<= 1.15",
    baselineName: "the same turn unconfined",
  });
}

if (import.meta.main) await main();
