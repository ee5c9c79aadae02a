// Run by `deno task bench engine` under the binary's sandbox flags (not --allow-all):
// `_turns.ts HOME CWD COUNT WIDTH` runs COUNT one-turn command runs of `true` on COUNT contexts,
// WIDTH at a time, in this one process (as a suite or a server runs them), checks every run
// complete and valid, and spawns `true` as often, as many at a time, with no engine around it, in
// rounds between the turns', and prints both rates as JSON: {"turns": per second, "spawns": per
// second}, with the CPU time (user + system, ms) this process spent per turn and per spawn, and a
// turn's user and system time apart: the system time follows the filesystem's state (on ext4
// without a journal, making an inode looks past every one freed in the last minutes, so it grows
// with what was removed lately, this benchmark's own earlier runs included), the user time much
// less.
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

/** `turns` spawns of `true`, `width` at a time, as the turns' agents are spawned. */
async function bareSpawns(turns: number): Promise<void> {
  let spawned = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (spawned < turns) {
      spawned++;
      await new Deno.Command("true", { stdin: "null", stdout: "piped", stderr: "piped" }).output();
    }
  }));
}

using store = openStore(home);
await manyTurns(store, "warm", 16); // modules, the data root
await bareSpawns(16);
// In alternating rounds (turns, spawns, spawns, turns, …), so that a busy spell of the machine
// weighs on both sides rather than on whichever ran during it.
const ROUNDS = 4;
const share = count / ROUNDS;
const spent = { turns: { ms: 0, user: 0, system: 0 }, spawns: { ms: 0, user: 0, system: 0 } };
const runIds: string[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ["turns", "spawns"] as const : ["spawns", "turns"] as const;
  for (const side of order) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    if (side === "turns") runIds.push(...await manyTurns(store, `bench-${round}`, share));
    else await bareSpawns(share);
    spent[side].ms += performance.now() - start;
    const used = process.cpuUsage(cpu);
    spent[side].user += used.user / 1000;
    spent[side].system += used.system / 1000;
  }
}
assertAllValid(store, runIds);
console.log(JSON.stringify({
  turns: count / (spent.turns.ms / 1000),
  spawns: count / (spent.spawns.ms / 1000),
  turnCpuMs: (spent.turns.user + spent.turns.system) / count,
  spawnCpuMs: (spent.spawns.user + spent.spawns.system) / count,
  turnUserMs: spent.turns.user / count,
  turnSystemMs: spent.turns.system / count,
}));
