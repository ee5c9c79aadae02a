// The sandbox's bridges as its setup starts them (profile.ts's inner script, under real
// bubblewrap and socat): the agent starts only once each bridge listens and the socket it leads
// to is there, so an agent that connects at once reaches the other end even when the socket
// outside is made after the sandbox started (socat outside is not waited for, network.ts).
import assert from "node:assert/strict";
import { confinedCommand, PROXY_SOCKET } from "../../lib/confine/profile.ts";
import { confinementProblem } from "../../lib/confine/probe.ts";

const PROBLEM = await confinementProblem();
if (PROBLEM !== null) {
  console.error(`!! tests/confine/bridge_test.ts SKIPPED: ${PROBLEM}`);
}

/** A scratch root with the sandbox's socket folder, working directory and data root. */
async function scratch() {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-bridge-" });
  const dirs = { root, socketDir: `${root}/net`, cwd: `${root}/work`, data: `${root}/data` };
  for (const dir of [dirs.socketDir, dirs.cwd, dirs.data]) await Deno.mkdir(dir);
  return dirs;
}

/** `program ARGS` confined with only the proxy's bridge (to 3128 inside), spawned. */
function spawnConfined(at: Awaited<ReturnType<typeof scratch>>, program: string, args: string[]) {
  const command = confinedCommand({ program, args, cwd: at.cwd, env: {} }, {
    dataRoot: at.data,
    hidden: [],
    binds: [],
    keepEnv: ["PATH"],
    inherited: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    network: { socketDir: at.socketDir, gatewayPort: null, proxyPort: 3128 },
  });
  return new Deno.Command(command.program, {
    args: command.args,
    cwd: command.cwd,
    env: command.env,
    clearEnv: command.clearEnv,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test({
  name: "the sandbox's setup waits for the socket outside before the agent starts",
  ignore: PROBLEM !== null,
  async fn() {
    const at = await scratch();
    try {
      // The agent connects at once to the proxy's port inside and prints what comes back.
      const child = spawnConfined(at, "socat", ["-T", "5", "-", "TCP:127.0.0.1:3128"]);
      // The socket outside comes late: well after the sandbox's own bridge listens.
      await new Promise((resolve) => setTimeout(resolve, 400));
      const listener = Deno.listen({ transport: "unix", path: `${at.socketDir}/${PROXY_SOCKET}` });
      const answered = (async () => {
        const conn = await listener.accept();
        await conn.write(new TextEncoder().encode("from outside\n"));
        conn.close();
      })();
      const output = await child.output();
      // An agent that never reached it leaves the accept waiting: closed, it ends.
      listener.close();
      await answered.catch(() => {});
      assert.equal(
        new TextDecoder().decode(output.stdout),
        "from outside\n",
        new TextDecoder().decode(output.stderr),
      );
      assert.equal(output.code, 0);
    } finally {
      await Deno.remove(at.root, { recursive: true });
    }
  },
});

// Opens 100 connections to the proxy's port at once and says how long the slowest connect took:
// the handshake is the kernel's, so it waits only when the listener's queue is full.
const BURST = `
import socket, sys, threading, time
took = []
def one():
    started = time.monotonic()
    conn = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    took.append(time.monotonic() - started)
    time.sleep(0.5)
    conn.close()
threads = [threading.Thread(target=one) for _ in range(100)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print(len(took), round(max(took) * 1000), sum(1 for t in took if t >= 0.9))
`;
const PYTHON = ["/usr/bin/python3", "/usr/local/bin/python3"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});
if (PROBLEM === null && PYTHON === undefined) {
  console.error("!! tests/confine/bridge_test.ts: the burst test SKIPPED: no python3 to open it");
}

// regression: socat listened with its default backlog of 5, so a burst of connections (npm's 15
// sockets through the proxy, a harness's parallel calls) lost SYNs and waited the kernel's 1 s
// retransmit: 18–34 of 200 at once, and 1 in 5 bursts of 16
Deno.test({
  name: "the sandbox's bridges take a burst of 100 connections at once without a 1 s stall",
  ignore: PROBLEM !== null || PYTHON === undefined,
  async fn() {
    const at = await scratch();
    const listener = Deno.listen({ transport: "unix", path: `${at.socketDir}/${PROXY_SOCKET}` });
    const accepting = (async () => {
      for await (const conn of listener) conn.close();
    })();
    try {
      const output = await spawnConfined(at, PYTHON!, ["-c", BURST]).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, stderr);
      const [connected, slowestMs, stalled] = new TextDecoder().decode(output.stdout).trim()
        .split(" ").map(Number);
      assert.equal(connected, 100, stderr);
      assert.equal(
        stalled,
        0,
        `${stalled} of 100 connects waited 0.9 s or more (the slowest ${slowestMs} ms)`,
      );
    } finally {
      listener.close();
      await accepting.catch(() => {});
      await Deno.remove(at.root, { recursive: true });
    }
  },
});
