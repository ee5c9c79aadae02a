// No agent outlives reins: each agent leads a process group of its own; SIGTERM of reins stops
// the whole group (a `sleep` the agent started included), and after reins is SIGKILLed the next
// command that reconciles the run — or `reins recover` — stops the group it left, but only when
// the recorded start time says it is the same process (a reused pid is never touched).
import assert from "node:assert/strict";
import { openStore } from "../../lib/store/store.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is as good as gone
  } catch {
    return false;
  }
}

async function waitFor(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** An agent that starts a `sleep` in the background, says so, and waits for it. */
async function sleepyAgent(dir: string): Promise<{ script: string; pids: string }> {
  const pids = `${dir}/pids`;
  const script = `${dir}/agent.sh`;
  await Deno.writeTextFile(
    script,
    `sleep 300 &\necho "$$ $!" > ${pids}.tmp && mv ${pids}.tmp ${pids}\necho started\nwait\n`,
  );
  return { script, pids };
}

function readPids(path: string): { agent: number; sleep: number } {
  const [agent, sleep] = Deno.readTextFileSync(path).trim().split(" ").map(Number);
  return { agent, sleep };
}

/** What the runs of `home` noted of their agents. */
function agentsOf(home: string): string {
  return [...Deno.readDirSync(`${home}/runs`)].map((entry) => {
    try {
      return Deno.readTextFileSync(`${home}/runs/${entry.name}/owner.lock`);
    } catch (error) {
      return String(error);
    }
  }).join("; ");
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The ways reins starts an agent as a group leader (lib/core/process_group.ts): through the
 * trampoline setsid(1) under the binary's sandbox and under --allow-all, and with Deno's detached
 * spawn (a fork of reins) where the trampoline is not on the run list, as where it is missing. The
 * guarantees are the same either way.
 */
const STARTS: {
  name: string;
  options: { allowRun?: string[]; allowAll?: boolean; withoutTrampoline?: boolean };
}[] = [
  { name: "", options: { allowRun: ["sh"] } },
  { name: " (under --allow-all: the agent started through setsid)", options: { allowAll: true } },
  {
    name: " (no trampoline on the run list: the agent started by a fork of reins)",
    options: { allowRun: ["sh"], withoutTrampoline: true },
  },
];

for (const via of STARTS) {
  Deno.test(`regression: SIGTERM of reins stops the agent's whole process group, its sleep too${via.name}`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const { script, pids } = await sleepyAgent(dir.path);
    const child = spawnReins(["run", "--driver", "command", "--exec", `sh ${script}`, "go"], {
      home,
      cwd: dir.path,
      ...via.options,
    });
    const stderr = new Response(child.stderr).text();
    const stdout = new Response(child.stdout).text();
    await waitFor("the agent to start its sleep", () => exists(pids));
    const { agent, sleep } = readPids(pids);
    assert.ok(alive(agent) && alive(sleep));
    child.kill("SIGTERM");
    const status = await child.status;
    assert.equal(status.code, 1, await stderr);
    assert.equal(await stdout, "started\n");
    await waitFor("the sleep to be gone", () => !alive(sleep), 5_000);
    assert.ok(!alive(agent));
    using store = openStore(home);
    const [run] = store.listRuns({ limit: 1 });
    assert.equal(run.status, "interrupted");
    // The agent is on record with its run, group and start time, in the owner file the run's
    // owner lock links to, after the owner's pid (no agents.jsonl made).
    const [owner, line, ...rest] = Deno.readTextFileSync(store.layout.ownerLock(run.id))
      .trimEnd().split("\n");
    assert.match(owner, /^\d+$/);
    assert.deepEqual(rest, []);
    assert.ok(!exists(store.layout.agents(run.id)), "agents.jsonl was made");
    const recorded = JSON.parse(line);
    assert.deepEqual(Object.keys(recorded), ["run", "pid", "pgid", "startedMs", "program"]);
    assert.equal(recorded.run, run.id);
    assert.equal(recorded.pid, agent);
    assert.equal(recorded.pgid, agent);
  });
}

for (const via of STARTS) {
  for (const next of [["runs"], ["recover"]]) {
    Deno.test(`regression: after reins is SIGKILLed, reins ${next[0]} stops the group it left${via.name}`, async () => {
      await using dir = await tempDir();
      const home = `${dir.path}/home`;
      const { script, pids } = await sleepyAgent(dir.path);
      const child = spawnReins(["run", "--driver", "command", "--exec", `sh ${script}`, "go"], {
        home,
        cwd: dir.path,
        ...via.options,
      });
      await child.stdout.cancel();
      await child.stderr.cancel();
      await waitFor("the agent to start its sleep", () => exists(pids));
      // reins notes the agent right after it spawns it; on a busy machine the agent can be faster.
      await waitFor("reins to note its agent", () => /"pgid"/.test(agentsOf(home)));
      const { agent, sleep } = readPids(pids);
      child.kill("SIGKILL");
      await child.status;
      // Re-parented to init, the agent and its sleep go on.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.ok(alive(agent) && alive(sleep), "the agent outlived reins, as today");

      const result = await reins(next, { home, cwd: dir.path });
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(`stopped sh \\(process group ${agent}\\) of run .*: process\\(es\\) .*${sleep}`),
        `${result.stderr}\nowner.lock: ${agentsOf(home)}\nalive: agent ${alive(agent)}, sleep ${
          alive(sleep)
        }`,
      );
      await waitFor("the agent's group to be gone", () => !alive(agent) && !alive(sleep), 5_000);
      using store = openStore(home);
      assert.equal(store.listRuns({ limit: 1 })[0].status, "interrupted");
    });
  }
}

Deno.test("a recorded group whose leader's pid now belongs to another process is left alone", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  // Someone else's process leads a group of its own, with the pid the run recorded…
  const stranger = new Deno.Command("sleep", { args: ["300"], detached: true }).spawn();
  try {
    using store = openStore(home);
    const writer = store.createRun({
      sessionId: "s-1",
      contextId: null,
      harness: "command",
      driver: "command",
      trigger: "cli",
      cwd: dir.path,
      goal: "go",
    });
    // …but the run's agent started an hour before it did: the pid was reused.
    store.appendLine(
      store.layout.agents(writer.runId),
      JSON.stringify({
        pid: stranger.pid,
        pgid: stranger.pid,
        startedMs: Date.now() - 3_600_000,
        program: "sh",
      }),
    );
    writer.close();
    store.close();

    const result = await reins(["recover", "--json"], { home, cwd: dir.path });
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout);
    assert.deepEqual(report.interrupted, [writer.runId]);
    assert.equal(report.agents.length, 1);
    assert.equal(report.agents[0].outcome.state, "not-ours");
    assert.match(report.agents[0].outcome.why, /its number was reused/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(alive(stranger.pid), "the stranger was not touched");
  } finally {
    stranger.kill("SIGKILL");
    await stranger.status;
  }
});

/** A run of `sleepyAgent` whose reins is SIGKILLed: its agent and sleep go on, re-parented. */
async function orphanedRun(
  dir: string,
  home: string,
  via: (typeof STARTS)[number],
  beforeKill: () => Promise<void> = async () => {},
): Promise<{ agent: number; sleep: number }> {
  const { script, pids } = await sleepyAgent(dir);
  const child = spawnReins(["run", "--driver", "command", "--exec", `sh ${script}`, "go"], {
    home,
    cwd: dir,
    ...via.options,
  });
  await child.stdout.cancel();
  await child.stderr.cancel();
  await waitFor("the agent to start its sleep", () => exists(pids));
  await waitFor("reins to note its agent", () => /"pgid"/.test(agentsOf(home)));
  await beforeKill();
  child.kill("SIGKILL");
  await child.status;
  return readPids(pids);
}

for (const via of STARTS) {
  // regression: a follower that found the owner dead marked the run interrupted and exited 0,
  // and the agent's group went on; later commands saw a settled run and never stopped it.
  Deno.test(`regression: reins show --follow that sees the owner die stops the group it left${via.name}`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    let follower: Deno.ChildProcess | null = null;
    const { agent, sleep } = await orphanedRun(dir.path, home, via, async () => {
      // Following before the owner dies: its own reconciliation is what notices.
      follower = spawnReins(["show", "last", "--follow"], { home, cwd: dir.path });
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const followed = follower as unknown as Deno.ChildProcess;
    const [status, stdout, stderr] = await Promise.all([
      followed.status,
      new Response(followed.stdout).text(),
      new Response(followed.stderr).text(),
    ]);
    assert.equal(status.code, 0, stderr);
    assert.match(stdout, /interrupted after/);
    assert.match(
      stderr,
      new RegExp(`stopped sh \\(process group ${agent}\\) of run .*: process\\(es\\) .*${sleep}`),
      stderr,
    );
    await waitFor("the agent's group to be gone", () => !alive(agent) && !alive(sleep), 5_000);
  });
}

// regression: reins recover never stopped the group of a run that was already marked
// interrupted (by a follower of an older reins, which did not stop it).
Deno.test("reins recover stops the group of a run already marked interrupted whose agents were left running", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const { agent, sleep } = await orphanedRun(dir.path, home, STARTS[0]);
  {
    // What an older reins's follower did: settle the run, leave the group.
    using store = openStore(home);
    const [run] = store.listRuns({ limit: 1 });
    store.appendToRun(run.id, {
      type: "status.changed",
      payload: { status: "interrupted", reason: "the process running it stopped" },
    });
  }
  const runs = await reins(["runs"], { home, cwd: dir.path });
  assert.equal(runs.code, 0, runs.stderr);
  assert.ok(alive(agent) && alive(sleep), "reins runs looks at active runs only");
  const result = await reins(["recover", "--json"], { home, cwd: dir.path });
  assert.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout);
  assert.deepEqual(report.interrupted, [], "it was interrupted already");
  assert.deepEqual(
    report.agents.map((left: { outcome: { state: string } }) => left.outcome.state),
    [
      "stopped",
    ],
  );
  await waitFor("the agent's group to be gone", () => !alive(agent) && !alive(sleep), 5_000);
  // Once gone, a second recovery finds nothing to stop and says nothing of it.
  const again = await reins(["recover"], { home, cwd: dir.path });
  assert.doesNotMatch(again.stderr, /stopped sh/);
});
