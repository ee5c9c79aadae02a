// A sandbox started ahead of its agent (lib/confine/warm.ts), under the real bubblewrap and socat:
// the turn's first agent takes it and gets exactly its command line, environment and stdin; the
// gateway given once the run is bound reaches it; a sandbox no agent took leaves nothing behind,
// from a turn that fails before its agent starts too; and an agent with neither a gateway nor an
// allowed host reaches nothing, its one attempt through the proxy an event of the run.
// Under /var/tmp, not /tmp: the sandbox's /tmp is private.
import assert from "node:assert/strict";
import {
  type ConnectionReport,
  type OpenConfinement,
  openConfinement,
} from "../../lib/confine/mod.ts";
import { confinementProblem } from "../../lib/confine/probe.ts";
import { loadSettings } from "../../lib/core/config.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import type { TurnRequest } from "../../lib/turn/types.ts";

const PROBLEM = await confinementProblem();
if (PROBLEM !== null) {
  console.error(`%c!! tests/confine/warm_test.ts SKIPPED: ${PROBLEM}`, "color: red");
}

async function scratch(): Promise<{ root: string; work: string; data: string; home: string }> {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-warm-" });
  const [work, data, home] = [`${root}/work`, `${root}/data`, `${root}/home`];
  for (const dir of [work, data, home]) await Deno.mkdir(dir);
  return { root, work, data, home };
}

async function open(
  s: { work: string; data: string; home: string },
  extra: { agentCwd?: string; gatewayPort?: number | null } = {},
): Promise<OpenConfinement> {
  return await openConfinement({ allowHosts: [], hide: [] }, {
    dataRoot: s.data,
    userHome: s.home,
    vars: {},
    driver: "command",
    stateDir: null,
    socketParent: `${s.data}/tmp`,
    gatewayPort: extra.gatewayPort ?? null,
    ...(extra.agentCwd === undefined ? {} : { agentCwd: extra.agentCwd }),
  });
}

async function finish(child: Deno.ChildProcess, input?: string) {
  if (input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  }
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code: status.code, stdout, stderr };
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

/**
 * Which of `processes` still run 2 s on. SIGKILLed, the sandbox's processes are dying, not gone at
 * once: the pid namespace's first process waits, in its exit, for the others to be reaped.
 */
async function stillAlive(processes: { pid: number; comm: string }[]) {
  const deadline = Date.now() + 2_000;
  while (processes.some((p) => alive(p.pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return processes.filter((p) => alive(p.pid));
}

Deno.test({
  name: "openConfinement() with agentCwd: the first agent takes the sandbox started ahead, its " +
    "arguments, environment and stdin exactly as given",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const confined = await open(s, { agentCwd: s.work });
    try {
      confined.attach({ gatewayPort: null, onConnection: () => {} });
      // Long enough for the sandbox to be ready, so that its start shows as earlier than this.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const before = Date.now();
      const tricky = `it's "quoted" $HOME \`x\` \\ ;\nand a second line\n`;
      const first = confined.confinement.spawn({
        program: "sh",
        args: ["-c", 'printf "%s|%s|%s|" "$1" "$TRICKY" "$HOME"; cat', "agent", tricky],
        cwd: s.work,
        env: { TRICKY: tricky, nl: "a newline's holder" },
      }, "piped");
      assert.ok(first.startedMs < before, "the first agent did not take the sandbox started ahead");
      const out = await finish(first.child, "from stdin\n");
      assert.equal(out.stdout, `${tricky}|${tricky}|/tmp/.reins-home|from stdin\n`, out.stderr);
      assert.equal(out.code, 0);
      // A second agent of the turn gets a sandbox of its own, started then; stdin /dev/null.
      const second = confined.confinement.spawn({
        program: "sh",
        args: ["-c", 'cat; echo "nl=$nl"'],
        cwd: s.work,
        env: { nl: "kept" },
      }, "null");
      assert.ok(second.startedMs >= before);
      const again = await finish(second.child);
      assert.equal(again.stdout, "nl=kept\n", again.stderr);
    } finally {
      await confined.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "openConfinement() with agentCwd: an agent told of /dev/null for stdin reads nothing",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const confined = await open(s, { agentCwd: s.work });
    try {
      confined.attach({ gatewayPort: null, onConnection: () => {} });
      const agent = confined.confinement.spawn({
        program: "sh",
        args: ["-c", "cat; readlink /proc/self/fd/0"],
        cwd: s.work,
        env: {},
      }, "null");
      const out = await finish(agent.child);
      assert.equal(out.stdout, "/dev/null\n", out.stderr);
    } finally {
      await confined.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "openConfinement() with agentCwd: the gateway given at attach is bridged into the sandbox " +
    "started before it was known",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const gateway = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("the gateway\n"),
    );
    const confined = await open(s, { agentCwd: s.work });
    try {
      confined.attach({ gatewayPort: gateway.addr.port, onConnection: () => {} });
      const agent = confined.confinement.spawn({
        program: "curl",
        args: ["-sf", "-m", "5", "--noproxy", "*", `http://127.0.0.1:${gateway.addr.port}/`],
        cwd: s.work,
        env: {},
      }, "null");
      const out = await finish(agent.child);
      assert.equal(out.stdout, "the gateway\n", out.stderr);
    } finally {
      await confined.close();
      await gateway.shutdown();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "openConfinement() with agentCwd and no gateway nor allowed host: the agent reaches " +
    "nothing, and its attempt through the proxy is reported",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const host = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("reached\n"),
    );
    const confined = await open(s, { agentCwd: s.work });
    const reports: ConnectionReport[] = [];
    try {
      confined.attach({ gatewayPort: null, onConnection: (report) => reports.push(report) });
      const url = `http://127.0.0.1:${host.addr.port}/`;
      const agent = confined.confinement.spawn({
        program: "sh",
        args: [
          "-c",
          `curl -sf -m 3 --noproxy '*' ${url} || echo direct:no; ` +
          `curl -sf -m 3 http://example.com/ || echo proxy:no`,
        ],
        cwd: s.work,
        env: {},
      }, "null");
      const out = await finish(agent.child);
      assert.equal(out.stdout, "direct:no\nproxy:no\n", out.stderr);
      await confined.close();
      assert.deepEqual(reports, [{
        host: "example.com",
        port: 80,
        allowed: false,
        bytesSent: 0,
        bytesReceived: 0,
        reason: "not an allowed host (--allow-host)",
      }]);
    } finally {
      await confined.close();
      await host.shutdown();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "OpenConfinement.close() ends the sandbox started ahead that no agent took, " +
    "and everything in it",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    const before = new Set(descendants().map((p) => p.pid));
    const confined = await open(s, { agentCwd: s.work });
    try {
      // Until its bridge listens: socat runs inside.
      const deadline = Date.now() + 10_000;
      let started = descendants().filter((p) => !before.has(p.pid));
      while (!started.some((p) => p.comm === "socat") && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        started = descendants().filter((p) => !before.has(p.pid));
      }
      assert.ok(started.some((p) => p.comm === "bwrap"), JSON.stringify(started));
      assert.ok(started.some((p) => p.comm === "socat"), JSON.stringify(started));
      await confined.close();
      assert.deepEqual(await stillAlive(started), []);
    } finally {
      await confined.close();
      await Deno.remove(s.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "runTurn() confined: a turn that fails before its agent starts leaves no sandbox behind",
  ignore: PROBLEM !== null,
  async fn() {
    const s = await scratch();
    using store = openStore(s.data);
    const settings = loadSettings({ REINS_HOME: store.home, HOME: s.home });
    const before = new Set(descendants().map((p) => p.pid));
    const seen: { pid: number; comm: string }[] = [];
    const request: TurnRequest = {
      agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
      prompt: "never runs",
      cwd: s.work,
      contextId: null,
      approval: "auto",
      budget: {},
      timeoutSeconds: null,
      parentRunId: null,
      trigger: "api",
      confine: true,
      // Attached before the agent starts: a file that is not there fails the turn there.
      attachments: [`${s.root}/missing.txt`],
    };
    try {
      const outcome = await runTurn(store, settings, request, {
        stop: new AbortController().signal,
        kill: new AbortController().signal,
      }, {
        // The run exists, the sandbox was started ahead: the turn waits here until it is all
        // there, bubblewrap and the bridge inside. Not noted at once: the process reins started
        // is setsid, then env, until each has exec'd the next; under load it can still be one of
        // them when the run is made, and the bridge not yet started.
        onCreated: async () => {
          const deadline = Date.now() + 10_000;
          let now = descendants().filter((p) => !before.has(p.pid));
          while (
            !(now.some((p) => p.comm === "bwrap") && now.some((p) => p.comm === "socat")) &&
            Date.now() < deadline
          ) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            now = descendants().filter((p) => !before.has(p.pid));
          }
          seen.push(...now);
        },
      });
      assert.equal(outcome.summary.status, "failed");
      assert.ok(seen.some((p) => p.comm === "bwrap"), JSON.stringify(seen));
      assert.ok(seen.some((p) => p.comm === "socat"), JSON.stringify(seen));
      // Only what this turn started: other test files run beside this one in the same process.
      assert.deepEqual(await stillAlive(seen), []);
    } finally {
      await Deno.remove(s.root, { recursive: true });
    }
  },
});
