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

Deno.test({
  name: "the sandbox's setup waits for the socket outside before the agent starts",
  ignore: PROBLEM !== null,
  async fn() {
    const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-bridge-" });
    const socketDir = `${root}/net`;
    const cwd = `${root}/work`;
    for (const dir of [socketDir, cwd, `${root}/data`]) await Deno.mkdir(dir);
    try {
      // The agent connects at once to the proxy's port inside and prints what comes back.
      const command = confinedCommand({
        program: "socat",
        args: ["-T", "5", "-", "TCP:127.0.0.1:3128"],
        cwd,
        env: {},
      }, {
        dataRoot: `${root}/data`,
        hidden: [],
        binds: [],
        keepEnv: ["PATH"],
        inherited: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
        network: { socketDir, gatewayPort: null, proxyPort: 3128 },
      });
      const child = new Deno.Command(command.program, {
        args: command.args,
        cwd: command.cwd,
        env: command.env,
        clearEnv: command.clearEnv,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // The socket outside comes late: well after the sandbox's own bridge listens.
      await new Promise((resolve) => setTimeout(resolve, 400));
      const listener = Deno.listen({ transport: "unix", path: `${socketDir}/${PROXY_SOCKET}` });
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
      await Deno.remove(root, { recursive: true });
    }
  },
});
