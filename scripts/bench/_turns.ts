// Run by `deno task bench engine` under the binary's sandbox flags (not --allow-all):
// `_turns.ts HOME CWD COUNT WIDTH` runs COUNT one-turn command runs of `true` on COUNT contexts,
// WIDTH at a time, in this one process (as a suite or a server runs them), checks every run
// complete and valid, then spawns `true` as often, as many at a time, with no engine around it,
// and prints both rates as JSON: {"turns": per second, "spawns": per second}, with the CPU time
// (user + system, ms) this process spent per turn and per spawn, which a busy machine disturbs
// less than the rates.
import process from "node:process";
import { loadSettings } from "../../lib/core/config.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";

const [home, cwd, countText, widthText] = Deno.args;
const count = Number(countText);
const width = Number(widthText);

async function manyTurns(store: Store, prefix: string, turns: number): Promise<string[]> {
  const settings = loadSettings({ REINS_HOME: home, HOME: cwd, REINS_CONFIG: `${cwd}/none.json` });
  const signals = { stop: new AbortController().signal, kill: new AbortController().signal };
  const runIds: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < turns) {
      const i = next++;
      const { summary } = await runTurn(store, settings, {
        agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
        prompt: `turn ${i}`,
        cwd,
        contextId: `${prefix}-${i}`,
        approval: "auto",
        budget: {},
        timeoutSeconds: null,
        parentRunId: null,
        trigger: "suite",
      }, signals);
      runIds.push(summary.runId);
    }
  }));
  return runIds;
}

/** Every run settled `completed`, its log whole and gap-free, and its owner gone. */
function assertAllValid(store: Store, runIds: string[]): void {
  if (new Set(runIds).size !== count) throw new Error(`${runIds.length} runs for ${count} turns`);
  for (const runId of runIds) {
    const record = store.loadRun(runId);
    const read = store.readEvents(runId);
    const gapFree = read.events.every((event, i) => event.sequence === i);
    const outcomes = read.events.filter((event) => event.type === "completed").length;
    if (
      record.status !== "completed" || read.problems.length > 0 || read.tornLine !== null ||
      !gapFree || outcomes !== 1 || store.ownerState(runId) !== "gone"
    ) {
      throw new Error(`run ${runId} is not complete and valid: ${JSON.stringify(record)}`);
    }
  }
}

async function bareSpawns(): Promise<number> {
  let spawned = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: width }, async () => {
    while (spawned < count) {
      spawned++;
      await new Deno.Command("true", { stdin: "null", stdout: "piped", stderr: "piped" }).output();
    }
  }));
  return count / ((performance.now() - start) / 1000);
}

using store = openStore(home);
await manyTurns(store, "warm", 16); // modules, the data root
await bareSpawns();
const cpuMs = (usage: { user: number; system: number }) => (usage.user + usage.system) / 1000;
let cpu = process.cpuUsage();
const start = performance.now();
const runIds = await manyTurns(store, "bench", count);
const turns = count / ((performance.now() - start) / 1000);
const turnCpuMs = cpuMs(process.cpuUsage(cpu)) / count;
cpu = process.cpuUsage();
const spawns = await bareSpawns();
const spawnCpuMs = cpuMs(process.cpuUsage(cpu)) / count;
assertAllValid(store, runIds);
console.log(JSON.stringify({ turns, spawns, turnCpuMs, spawnCpuMs }));
