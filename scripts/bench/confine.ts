// Confinement's cost (issue 25), each turn through the turn engine in this one process, confined
// and unconfined turn about so that the machine's load weighs on both alike:
// - a trivial command turn (`true`): what a confined turn adds, whole — the probe (once per
//   process), the proxy's listener and the sockets outside (made per turn), then bubblewrap's
//   namespaces and mounts and the socat bridge inside, waited for until it listens — started
//   ahead of the agent, while the turn makes its run (lib/confine/warm.ts). Beside it, the parts
//   of that measured alone in the same run: bubblewrap starting `true`, bubblewrap starting the
//   bridge's socat and waiting for it as a turn does, and a sandbox started ahead and ready, from
//   the line that names its agent to the agent's end (what is left once the start is all hidden);
// - a Claude Code turn (the real CLI from npm, against the fake Anthropic server, through the
//   model gateway): what the same costs weigh against an agent that runs for a while. Skipped,
//   saying why, where the CLI is not installed.
// Each kind twice: a turn with no sandbox ready (as `reins run` runs its one turn), and turns back
// to back in a process that keeps the next turn's sandbox ready, as `reins serve` runs a
// context's turns (lib/confine/ready.ts): what a turn's latency is there, and the CPU it costs.
//   BENCH_CONFINE=trivial,claude runs only those parts (both by default).
import { compare, figure } from "./_lib.ts";
import { loadSettings, type Settings } from "../../lib/core/config.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import type { TurnRequest } from "../../lib/turn/types.ts";
import { BWRAP_BASE, confinementProblem } from "../../lib/confine/probe.ts";
import {
  type ConfineFacts,
  INNER_SCRIPT,
  releaseLine,
  sandboxAhead,
} from "../../lib/confine/profile.ts";
import { keepSandboxesReady } from "../../lib/confine/confinement.ts";
import { WarmSandbox } from "../../lib/confine/warm.ts";
import { text } from "../../tests/fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../../tests/fixtures/fake_anthropic.ts";
import { ensureCli } from "../../tests/interop/_install.ts";
import { makeScratch } from "../../tests/interop/_scratch.ts";

const TURNS = 30;
const BLOCKS = 6;
const BLOCK_TURNS = 6;
const PAUSE_MS = 100;
const CLAUDE_TURNS = 11;
const CLAUDE_BLOCKS = 4;
const CLAUDE_BLOCK_TURNS = 3;

/** CPU time of this process and of its children it has waited for (ms), from /proc/self/stat. */
function cpuMs(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  // utime, stime, cutime, cstime: the 14th to 17th fields, the 2nd (comm) in parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0);
  return ticks * 10; // USER_HZ is 100 on Linux
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
const spread = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (n: number) => n.toFixed(n >= 100 ? 0 : 1);
  return `${at(sorted[0])} / ${at(median(values))} / ${at(sorted[sorted.length - 1])} ms`;
};

const signals = () => ({ stop: new AbortController().signal, kill: new AbortController().signal });

async function timedTurn(
  store: Store,
  settings: Settings,
  request: Omit<TurnRequest, "confine">,
  confine: boolean,
): Promise<number> {
  const start = performance.now();
  const { summary } = await runTurn(store, settings, { ...request, confine }, signals());
  if (summary.status !== "completed") {
    throw new Error(`${confine ? "confined" : "unconfined"} turn: ${summary.reason}`);
  }
  return performance.now() - start;
}

/** Runs `program args` to its end; throws when it fails. */
async function ok(program: string, args: string[]): Promise<void> {
  const output = await new Deno.Command(program, { args, stdout: "null", stderr: "piped" })
    .output();
  if (!output.success) {
    throw new Error(`${program}: exit ${output.code}: ${new TextDecoder().decode(output.stderr)}`);
  }
}

async function trivial(root: string): Promise<void> {
  const cwd = `${root}/work`;
  await Deno.mkdir(cwd);
  using store = openStore(`${root}/data`);
  const settings = loadSettings({ REINS_HOME: store.home, HOME: cwd });
  const request = (i: number): Omit<TurnRequest, "confine"> => ({
    agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
    prompt: `turn ${i}`,
    cwd,
    contextId: null,
    approval: "auto",
    budget: {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "suite",
  });
  // The parts alone: bubblewrap as every sandbox starts (BWRAP_BASE, the private /tmp and /run),
  // and the same running the inner script's bridge to a socket that is there, before `true`.
  const sockets = `${root}/net`;
  await Deno.mkdir(sockets);
  const socket = Deno.listen({ transport: "unix", path: `${sockets}/proxy.sock` });
  const sandbox = [...BWRAP_BASE, "--tmpfs", "/tmp", "--tmpfs", "/run"];
  const bwrapAlone = () => ok("bwrap", [...sandbox, "--", "true"]);
  const bwrapBridge = () =>
    ok("bwrap", [
      ...sandbox,
      "--ro-bind",
      sockets,
      "/tmp/.reins-net",
      "--",
      "sh",
      "-c",
      INNER_SCRIPT,
      "reins-confine",
      "0",
      "3128",
      "true",
    ]);
  const facts: ConfineFacts = {
    dataRoot: `${root}/data`,
    hidden: [],
    binds: [],
    keepEnv: ["PATH"],
    inherited: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    network: { socketDir: sockets, gatewayPort: null, proxyPort: 3128 },
  };
  const line = releaseLine({ program: "true", args: [], cwd, env: {} }, facts, {
    stdin: "null",
    gatewayPort: null,
  })!;
  // Started, given time to be ready (its bridge listening, the shell reading its stdin), then
  // timed from the line to the agent's end.
  const readyAhead = async (): Promise<number> => {
    const warm = WarmSandbox.start(sandboxAhead(cwd, facts))!;
    await new Promise((resolve) => setTimeout(resolve, 150));
    const start = performance.now();
    const child = warm.take(line, "null")!;
    const [status] = await Promise.all([
      child.status,
      child.stdout.cancel(),
      child.stderr.cancel(),
    ]);
    if (!status.success) throw new Error(`the sandbox started ahead: exit ${status.code}`);
    return performance.now() - start;
  };
  const time = async (fn: () => Promise<unknown>) => {
    const start = performance.now();
    await fn();
    return performance.now() - start;
  };
  // Warm both paths (the probe, module loading) before measuring.
  await timedTurn(store, settings, request(-1), false);
  await timedTurn(store, settings, request(-2), true);
  await bwrapAlone();
  await bwrapBridge();
  await readyAhead();
  const plain: number[] = [];
  const confined: number[] = [];
  const alone: number[] = [];
  const bridged: number[] = [];
  const ahead: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    plain.push(await timedTurn(store, settings, request(i), false));
    confined.push(await timedTurn(store, settings, request(i), true));
    alone.push(await time(bwrapAlone));
    bridged.push(await time(bwrapBridge));
    ahead.push(await readyAhead());
  }
  socket.close();
  // Back to back, as a process that runs turn after turn (reins serve) runs them: blocks of turns
  // with no pause between them, unconfined and confined block about; the confined ones in a
  // process that keeps the next turn's sandbox ready (lib/confine/ready.ts), from none at the
  // block's start, so each block's first turn has none ready (not counted here: it is the turn
  // above). Also the CPU each turn costs, reins's and its children's (the sandboxes kept ready
  // included, each block's last one ended before it is counted).
  // Then the same with a pause between turns, as a client's round trip or a simulated user's
  // reply leaves one: time for the sandbox kept ready to be all ready.
  const blocks = async (pauseMs: number) => {
    const plain: number[] = [];
    const confined: number[] = [];
    let plainCpu = 0;
    let confinedCpu = 0;
    const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs));
    for (let block = 0; block < BLOCKS; block++) {
      let cpu = cpuMs();
      for (let i = 0; i < BLOCK_TURNS; i++) {
        if (i > 0 && pauseMs > 0) await pause();
        const ms = await timedTurn(store, settings, request(i), false);
        if (i > 0) plain.push(ms);
      }
      plainCpu += cpuMs() - cpu;
      cpu = cpuMs();
      const ready = keepSandboxesReady();
      for (let i = 0; i < BLOCK_TURNS; i++) {
        if (i > 0 && pauseMs > 0) await pause();
        const ms = await timedTurn(store, settings, request(i), true);
        if (i > 0) confined.push(ms);
      }
      await ready.close();
      confinedCpu += cpuMs() - cpu;
    }
    return { plain, confined, plainCpu, confinedCpu };
  };
  const { plain: plainRun, confined: confinedRun, plainCpu, confinedCpu } = await blocks(0);
  const paused = await blocks(PAUSE_MS);
  compare({
    name: `a confined trivial command turn, back to back in one process that keeps the next ` +
      `turn's sandbox ready (reins serve; median of ${confinedRun.length})`,
    ours: median(confinedRun),
    baseline: median(plainRun),
    unit: "ms",
    better: "lower",
    goal: "<= 1.15",
    baselineName: "the same turns unconfined",
  });
  figure("  confined turn, min / median / max", spread(confinedRun));
  figure("  unconfined turn, min / median / max", spread(plainRun));
  const perTurn = (ms: number) => `${(ms / (BLOCKS * BLOCK_TURNS)).toFixed(1)} ms`;
  figure(
    "  CPU a turn, reins and its children: confined / unconfined",
    `${perTurn(confinedCpu)} / ${perTurn(plainCpu)} (${(confinedCpu / plainCpu).toFixed(2)}×)`,
  );
  figure(
    `  the same, ${PAUSE_MS} ms between turns: confined / unconfined, medians`,
    `${median(paused.confined).toFixed(1)} / ${median(paused.plain).toFixed(1)} ms (${
      (median(paused.confined) / median(paused.plain)).toFixed(2)
    }×)`,
  );
  compare({
    name: `a confined trivial command turn with no sandbox ready (reins run, or a process's ` +
      `first turn; in process, median of ${TURNS})`,
    ours: median(confined),
    baseline: median(plain),
    unit: "ms",
    better: "lower",
    goal: "<= 1.15",
    baselineName: "the same turn unconfined",
  });
  figure("  confined turn, min / median / max", spread(confined));
  figure("  unconfined turn, min / median / max", spread(plain));
  figure("  bwrap … true alone", spread(alone));
  figure("  bwrap … the inner script's socat bridge, then true", spread(bridged));
  figure("  a sandbox started ahead and ready: its line, then true", spread(ahead));
}

async function claude(root: string): Promise<void> {
  const installed = await ensureCli("claude");
  if (installed.program === null) {
    figure("a confined Claude Code turn", `SKIPPED: ${installed.skip}`);
    console.error(
      `%c!! bench confine: the Claude Code turn SKIPPED: ${installed.skip}`,
      "color: red",
    );
    return;
  }
  await using server = startFakeAnthropic(() => text("The answer."));
  await using scratch = await makeScratch("claude", server.url);
  using store = openStore(`${root}/claude-data`);
  const settings = loadSettings({
    ...scratch.env,
    REINS_HOME: store.home,
    REINS_CLAUDE_BIN: installed.program,
  });
  // Each in a context of its own, so that both find Claude Code's state as the last turn left it
  // (a confined turn with no context would start from an empty one each time).
  const request = (i: number, contextId: string): Omit<TurnRequest, "confine"> => ({
    agent: { kind: "harness", driver: "claude", idleTimeoutSeconds: null },
    prompt: `hello ${i}`,
    cwd: scratch.cwd,
    contextId,
    approval: "auto",
    budget: {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "api",
    env: scratch.env,
  });
  await timedTurn(store, settings, request(-1, "plain"), false);
  await timedTurn(store, settings, request(-2, "confined"), true);
  const plain: number[] = [];
  const confined: number[] = [];
  for (let i = 0; i < CLAUDE_TURNS; i++) {
    plain.push(await timedTurn(store, settings, request(i, "plain"), false));
    confined.push(await timedTurn(store, settings, request(i, "confined"), true));
  }
  // Back to back in blocks, as for the trivial turn: the confined ones in a process that keeps
  // the next turn's sandbox ready, each block's first turn (none ready) not counted.
  const plainRun: number[] = [];
  const confinedRun: number[] = [];
  for (let block = 0; block < CLAUDE_BLOCKS; block++) {
    for (let i = 0; i < CLAUDE_BLOCK_TURNS; i++) {
      const ms = await timedTurn(store, settings, request(i, "plain"), false);
      if (i > 0) plainRun.push(ms);
    }
    const ready = keepSandboxesReady();
    for (let i = 0; i < CLAUDE_BLOCK_TURNS; i++) {
      const ms = await timedTurn(store, settings, request(i, "confined"), true);
      if (i > 0) confinedRun.push(ms);
    }
    await ready.close();
  }
  compare({
    name: `a confined Claude Code turn against a local fake model, back to back in one process ` +
      `that keeps the next turn's sandbox ready (median of ${confinedRun.length})`,
    ours: median(confinedRun),
    baseline: median(plainRun),
    unit: "ms",
    better: "lower",
    goal: "<= 1.05",
    baselineName: "the same turns unconfined",
  });
  figure("  confined turn, min / median / max", spread(confinedRun));
  figure("  unconfined turn, min / median / max", spread(plainRun));
  compare({
    name: `a confined Claude Code turn against a local fake model with no sandbox ready ` +
      `(in process, median of ${CLAUDE_TURNS})`,
    ours: median(confined),
    baseline: median(plain),
    unit: "ms",
    better: "lower",
    goal: "<= 1.05",
    baselineName: "the same turn unconfined",
  });
  figure("  confined turn, min / median / max", spread(confined));
  figure("  unconfined turn, min / median / max", spread(plain));
}

export default async function main(): Promise<void> {
  const problem = await confinementProblem();
  if (problem !== null) {
    figure("confined turns", `SKIPPED: ${problem}`);
    return;
  }
  const parts = (Deno.env.get("BENCH_CONFINE") ?? "trivial,claude").split(",");
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-bench-confine-" });
  try {
    if (parts.includes("trivial")) await trivial(root);
    if (parts.includes("claude")) await claude(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

if (import.meta.main) await main();
