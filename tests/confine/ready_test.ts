// Sandboxes kept ready for the next turn (lib/confine/ready.ts), under the real bubblewrap and
// socat: the next turn of the same making takes the one started while the last agent ran, and
// finds nothing the last agent left in its /tmp; a turn of another context, a secret store that
// appeared since, a working directory replaced since: none takes it, and each gets a sandbox of
// its own; one kept past its time, and all at close, are ended with everything in them.
// Under /var/tmp, not /tmp: the sandbox's /tmp is private.
import assert from "node:assert/strict";
import {
  keepSandboxesReady,
  type OpenConfinement,
  openConfinement,
  type ReadySandboxes,
} from "../../lib/confine/mod.ts";
import { confinementProblem } from "../../lib/confine/probe.ts";
import { loadSettings } from "../../lib/core/config.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import type { TurnRequest } from "../../lib/turn/types.ts";

const PROBLEM = await confinementProblem();
if (PROBLEM !== null) {
  console.error(`%c!! tests/confine/ready_test.ts SKIPPED: ${PROBLEM}`, "color: red");
}

interface Scratch {
  root: string;
  work: string;
  data: string;
  home: string;
}

async function scratch(): Promise<Scratch> {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-ready-" });
  const [work, data, home] = [`${root}/work`, `${root}/data`, `${root}/home`];
  for (const dir of [work, data, home]) await Deno.mkdir(dir);
  return { root, work, data, home };
}

/** A turn's confinement as run_turn.ts opens it ahead: a Claude Code turn of `context`. */
async function open(s: Scratch, context: string): Promise<OpenConfinement> {
  const confined = await openConfinement({ allowHosts: [], hide: [] }, {
    dataRoot: s.data,
    userHome: s.home,
    vars: {},
    driver: "claude",
    stateDir: `${s.data}/contexts/${context}/harness/claude`,
    socketParent: `${s.data}/tmp`,
    gatewayPort: null,
    agentCwd: s.work,
  });
  confined.attach({ gatewayPort: null, onConnection: () => {} });
  return confined;
}

/** Runs `script` as the turn's agent: when its sandbox was started, and what it printed. */
async function agent(confined: OpenConfinement, s: Scratch, script: string) {
  const { child, startedMs } = confined.confinement.spawn(
    { program: "sh", args: ["-c", script], cwd: s.work, env: {} },
    "null",
  );
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  assert.equal(status.code, 0, stderr);
  return { startedMs, stdout };
}

/** Until `ready` holds `count` sandboxes, up (their bridges listening), for the next turns. */
async function settled(ready: ReadySandboxes, count = 1) {
  const deadline = Date.now() + 10_000;
  while (ready.size < count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(ready.size, count, "no sandbox was kept ready");
  await new Promise((resolve) => setTimeout(resolve, 300));
}

/** Every process under this one (as /proc shows them), by pid, with its name. */
function descendants(pid = Deno.pid): { pid: number; comm: string }[] {
  const out: { pid: number; comm: string }[] = [];
  let tasks: Deno.DirEntry[];
  try {
    tasks = [...Deno.readDirSync(`/proc/${pid}/task`)];
  } catch {
    return out;
  }
  for (const task of tasks) {
    let text = "";
    try {
      text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
    } catch {
      continue;
    }
    for (const child of text === "" ? [] : text.split(" ").map(Number)) {
      let comm = "?";
      try {
        comm = Deno.readTextFileSync(`/proc/${child}/comm`).trim();
      } catch {
        // gone meanwhile
      }
      out.push({ pid: child, comm }, ...descendants(child));
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    return !/^\S+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
};

/** Which of `processes` still run 2 s on (a SIGKILLed sandbox takes a moment to be reaped). */
async function stillAlive(processes: { pid: number; comm: string }[]) {
  const deadline = Date.now() + 2_000;
  while (processes.some((p) => alive(p.pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return processes.filter((p) => alive(p.pid));
}

Deno.test({
  name: "keepSandboxesReady(): the next turn of the context takes the sandbox started while the " +
    "last agent ran, and finds its state but nothing of the last agent's /tmp",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const ready = keepSandboxesReady();
    try {
      const first = await open(s, "a");
      const one = await agent(
        first,
        s,
        "echo left > /tmp/left-behind; echo state > ~/.claude/mine; echo pid=$$",
      );
      await first.close();
      await settled(ready);
      const before = Date.now();
      const second = await open(s, "a");
      const two = await agent(
        second,
        s,
        "ls -A /tmp | grep -v '^\\.reins-' ; cat ~/.claude/mine; echo pid=$$",
      );
      await second.close();
      assert.ok(two.startedMs < before, "the second agent's sandbox was not started ahead");
      assert.ok(two.startedMs > one.startedMs);
      // Nothing in /tmp but reins's own: the first agent's file is not there.
      assert.match(two.stdout, /^state\npid=\d+\n$/);
      assert.match(one.stdout, /^pid=\d+\n$/);
    } finally {
      await ready.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "keepSandboxesReady(): a turn of another context does not take the sandbox kept for " +
    "the last one's, and cannot read that context's state",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const ready = keepSandboxesReady();
    try {
      const first = await open(s, "a");
      await agent(first, s, "echo only-a > ~/.claude/secret-of-a");
      await first.close();
      await settled(ready);
      const before = Date.now();
      const other = await open(s, "b");
      assert.equal(ready.size, 1, "context b took context a's sandbox");
      const seen = await agent(other, s, "ls -A ~/.claude; cat ~/.claude/secret-of-a || true");
      await other.close();
      assert.ok(seen.startedMs >= before, "context b's agent ran in a sandbox started before it");
      assert.equal(seen.stdout, "");
    } finally {
      await ready.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "keepSandboxesReady(): a secret store made after the sandbox was kept ready, or the " +
    "working directory replaced, makes the next turn start a sandbox of its own",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const ready = keepSandboxesReady();
    try {
      const first = await open(s, "a");
      await agent(first, s, "true");
      await first.close();
      await settled(ready);
      // ~/.ssh appears: the sandbox kept ready did not hide it.
      await Deno.mkdir(`${s.home}/.ssh`);
      await Deno.writeTextFile(`${s.home}/.ssh/id_rsa`, "PRIVATE KEY");
      let before = Date.now();
      const second = await open(s, "a");
      const hidden = await agent(second, s, `cat ${s.home}/.ssh/id_rsa 2>/dev/null || echo hidden`);
      await second.close();
      assert.ok(hidden.startedMs >= before, "the sandbox kept ready was given after ~/.ssh came");
      assert.equal(hidden.stdout, "hidden\n");
      // The one made before ~/.ssh came is kept still (for a turn that would not hide it: none
      // comes), and one for turns that hide it.
      await settled(ready, 2);
      // The working directory replaced by another of the same name.
      await Deno.remove(s.work, { recursive: true });
      await Deno.mkdir(s.work);
      await Deno.writeTextFile(`${s.work}/new.txt`, "the new one");
      before = Date.now();
      const third = await open(s, "a");
      const listed = await agent(third, s, "cat new.txt");
      await third.close();
      assert.ok(listed.startedMs >= before, "the sandbox kept ready was given another directory");
      assert.equal(listed.stdout, "the new one");
    } finally {
      await ready.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "keepSandboxesReady(): one kept past its time is ended, and close() ends the rest, " +
    "everything in them",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const ready = keepSandboxesReady({ idleMs: 1_000 });
    try {
      const before = new Set(descendants().map((p) => p.pid));
      const first = await open(s, "a");
      await agent(first, s, "true");
      await first.close();
      await settled(ready);
      const kept = descendants().filter((p) => !before.has(p.pid));
      assert.ok(kept.some((p) => p.comm === "bwrap"), JSON.stringify(kept));
      assert.ok(kept.some((p) => p.comm === "socat"), JSON.stringify(kept));
      // Past its time: ended, its processes and its sockets' directory.
      const deadline = Date.now() + 5_000;
      while (ready.size > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(ready.size, 0);
      assert.deepEqual(await stillAlive(kept), []);
      const second = await open(s, "a");
      await agent(second, s, "true");
      await second.close();
      await settled(ready);
      const again = descendants().filter((p) => !before.has(p.pid));
      assert.ok(again.some((p) => p.comm === "bwrap"), JSON.stringify(again));
      await ready.close();
      assert.deepEqual(await stillAlive(again), []);
      assert.deepEqual([...Deno.readDirSync(`${s.data}/tmp`)], []);
      // Closed, it keeps no more.
      const third = await open(s, "a");
      await agent(third, s, "true");
      await third.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(ready.size, 0);
    } finally {
      await ready.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "runTurn() confined, in a process that keeps sandboxes ready: turns back to back each " +
    "complete, the second's agent in the sandbox started during the first",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    using store = openStore(s.data);
    const settings = loadSettings({ REINS_HOME: store.home, HOME: s.home });
    await Deno.writeTextFile(`${s.work}/agent.sh`, 'echo "$REINS_PROMPT" >> turns.txt\n');
    const request = (prompt: string): TurnRequest => ({
      agent: { kind: "command", exec: "sh ./agent.sh", idleTimeoutSeconds: null },
      prompt,
      cwd: s.work,
      contextId: "ctx",
      approval: "auto",
      budget: {},
      timeoutSeconds: null,
      parentRunId: null,
      trigger: "api",
      confine: true,
    });
    const signals = () => ({
      stop: new AbortController().signal,
      kill: new AbortController().signal,
    });
    const ready = keepSandboxesReady();
    try {
      const before = new Set(descendants().map((p) => p.pid));
      const one = await runTurn(store, settings, request("one"), signals());
      assert.equal(one.summary.status, "completed", one.summary.reason ?? "");
      await settled(ready);
      const kept = descendants().filter((p) => !before.has(p.pid) && p.comm === "bwrap");
      assert.ok(kept.length > 0 && kept.every((p) => alive(p.pid)), JSON.stringify(kept));
      const two = await runTurn(store, settings, request("two"), signals());
      assert.equal(two.summary.status, "completed", two.summary.reason ?? "");
      // The one kept was the second turn's agent's (it has ended with it), and the third's is
      // kept now.
      assert.deepEqual(await stillAlive(kept), []);
      await settled(ready);
      assert.equal(await Deno.readTextFile(`${s.work}/turns.txt`), "one\ntwo\n");
    } finally {
      await ready.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});
