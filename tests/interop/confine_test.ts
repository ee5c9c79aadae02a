// The real Claude Code under `reins run --confine`, driven by the fake model server: its Bash tool
// tries the ways out the command agent's test tries (tests/e2e/confine_test.ts) and fails at
// each, while the working directory is writable and the model (through the gateway's bridge) is
// reachable; the session resumes across two confined turns of one context.
import assert from "node:assert/strict";
import { inOrder, text, toolCall } from "../fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../fixtures/fake_anthropic.ts";
import { openStore } from "../../lib/store/store.ts";
import { reins, type ReinsOptions } from "../support/reins.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { withDeadline } from "./_suite.ts";
import { codexSpec, geminiSpec, opencodeSpec } from "./_specs.ts";

const installed = await ensureCli("claude");
const HAVE_BWRAP = await new Deno.Command("bwrap", {
  args: ["--unshare-all", "--ro-bind", "/", "/", "--", "true"],
  stdout: "null",
  stderr: "null",
}).output().then((out) => out.success, () => false);
if (!HAVE_BWRAP) {
  console.error(
    "%c!! tests/interop/confine_test.ts SKIPPED: bubblewrap is missing or cannot make namespaces",
    "color: red",
  );
}

interopTest(
  HAVE_BWRAP ? installed : { program: null, dir: null, skip: "bubblewrap is missing" },
  "reins run --driver claude --confine: the Bash tool's escapes fail, the session resumes (real Claude Code)",
  async (program) => {
    await withDeadline(240, async () => {
      // A secret outside /tmp (the sandbox's /tmp is private anyway), hidden by the config.
      const outside = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "reins-confine-claude-" });
      await Deno.mkdir(`${outside}/keys`);
      await Deno.writeTextFile(`${outside}/keys/id_rsa`, "PRIVATE KEY\n");
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const loopbackPort = (listener.addr as Deno.NetAddr).port;
      const probe = [
        `try() { n=$1; shift; if "$@" >/dev/null 2>&1; then echo "$n:yes"; else echo "$n:no"; fi; }`,
        `try read-hidden cat ${outside}/keys/id_rsa`,
        "try read-home-ssh cat $HOME/.ssh/id_rsa",
        "try list-other-context ls REINS_HOME_DIR/contexts/other",
        "try signal-reins kill -0 REINS_PID",
        `try loopback curl -sf -m 3 --noproxy '*' http://127.0.0.1:${loopbackPort}/`,
        "try outside curl -sf -m 3 --noproxy '*' http://1.1.1.1/",
        "try write-cwd touch written-by-claude",
        "echo probe-done",
      ].join("\n");
      try {
        // The probe (a script in the working directory: Claude Code's acceptEdits mode asks before
        // a command line with a shell function in it).
        const replies = [
          () => text("Other context."),
          () => toolCall("Bash", { command: "sh probe.sh", description: "probe" }),
          () => text("First."),
          () => text("Second."),
        ];
        let asked = 0;
        await using server = startFakeAnthropic(() =>
          replies[Math.min(asked++, replies.length - 1)]()
        );
        await using scratch = await makeScratch("claude", server.url);
        await Deno.mkdir(`${scratch.home}/.ssh`, { recursive: true });
        await Deno.writeTextFile(`${scratch.home}/.ssh/id_rsa`, "PRIVATE KEY\n");
        await Deno.mkdir(scratch.reinsHome, { recursive: true });
        await Deno.writeTextFile(
          `${scratch.reinsHome}/config.json`,
          JSON.stringify({
            // Bash allowed outright: the probe is the point, not the approval.
            drivers: {
              claude: { args: [...scratch.args, "--allowedTools", "Bash"], idleTimeoutSeconds: 90 },
            },
            confine: { hide: [`${outside}/keys`] },
          }),
        );
        const options: ReinsOptions = {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, REINS_CLAUDE_BIN: program },
          allowRun: [program, "bwrap", "env", "socat", "ls"],
          allowPaths: [outside],
        };
        const run = async (context: string, prompt: string) => {
          const result = await reins(
            ["run", "--driver", "claude", "--confine", "--context", context, "--json", prompt],
            options,
          );
          assert.equal(result.code, 0, result.stderr);
          return JSON.parse(result.stdout) as { status: string; result: string; sessionId: string };
        };
        assert.equal((await run("other", "hello")).status, "completed");
        // The probe names the data root and a pid that is not in the sandbox's pid namespace:
        // this test's own, which is as good as reins's (neither is there).
        await Deno.writeTextFile(
          `${scratch.cwd}/probe.sh`,
          probe.replace("REINS_HOME_DIR", scratch.reinsHome).replace("REINS_PID", String(Deno.pid)),
        );
        const first = await run("ticket", "probe");
        assert.deepEqual([first.status, first.result], ["completed", "First."]);
        const second = await run("ticket", "again");
        assert.deepEqual([second.status, second.result], ["completed", "Second."]);
        assert.equal(second.sessionId, first.sessionId);

        // The tool's output went back to the model, through the gateway: each escape failed.
        const calls = server.modelCalls();
        const afterTool = JSON.stringify(
          (calls[2].body as { messages: { content: unknown }[] }).messages.at(-1)?.content,
        );
        for (const line of ["read-hidden:no", "read-home-ssh:no", "list-other-context:no"]) {
          assert.ok(afterTool.includes(line), `${line} in ${afterTool}`);
        }
        for (const line of ["signal-reins:no", "loopback:no", "outside:no", "write-cwd:yes"]) {
          assert.ok(afterTool.includes(line), `${line} in ${afterTool}`);
        }
        assert.ok((await Deno.stat(`${scratch.cwd}/written-by-claude`)).isFile);
        // Resumed: the second turn's call carries the first turn's conversation.
        assert.match(JSON.stringify(calls[3].body), /First\./);
        // The sessions are kept per context under the data root, apart.
        using store = openStore(scratch.reinsHome);
        const projects = (context: string) =>
          `${store.layout.harnessState(context, "claude")}/.claude/projects`;
        assert.ok((await Deno.stat(projects("ticket"))).isDirectory);
        assert.ok((await Deno.stat(projects("other"))).isDirectory);
      } finally {
        listener.close();
        await Deno.remove(outside, { recursive: true });
      }
    });
  },
);

// The other harnesses: two confined turns of one context, the second resuming the first, and the
// harness's state kept in the context's directory under the data root.
for (const spec of [codexSpec, geminiSpec, opencodeSpec]) {
  const cli = await ensureCli(spec.driver);
  interopTest(
    HAVE_BWRAP ? cli : { program: null, dir: null, skip: "bubblewrap is missing" },
    `reins run --driver ${spec.driver} --confine twice on one context resumes (real ${spec.cli})`,
    async (program) => {
      await withDeadline(240, async () => {
        await using server = spec.serve(inOrder(text("First answer."), text("Second answer.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        await Deno.mkdir(scratch.reinsHome, { recursive: true });
        await Deno.writeTextFile(
          `${scratch.reinsHome}/config.json`,
          JSON.stringify({
            drivers: { [spec.driver]: { args: scratch.args, idleTimeoutSeconds: 90 } },
          }),
        );
        const options: ReinsOptions = {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, [`REINS_${spec.driver.toUpperCase()}_BIN`]: program },
          allowRun: [program, "bwrap", "env", "socat", "ls"],
        };
        const run = async (prompt: string) => {
          const result = await reins(
            ["run", "--driver", spec.driver, "--confine", "--context", "c", "--json", prompt],
            options,
          );
          assert.equal(result.code, 0, result.stderr);
          return JSON.parse(result.stdout) as { status: string; result: string; sessionId: string };
        };
        const first = await run("remember the word kiwi");
        assert.deepEqual([first.status, first.result], ["completed", "First answer."]);
        const second = await run("which word was it");
        assert.deepEqual([second.status, second.result], ["completed", "Second answer."]);
        assert.equal(second.sessionId, first.sessionId);
        // The second turn's call carries the first turn's conversation: resumed, not started anew.
        assert.match(JSON.stringify(server.modelCalls().at(-1)!.body), /First answer/);
        using store = openStore(scratch.reinsHome);
        const state = store.layout.harnessState("c", spec.driver);
        assert.ok((await Deno.readDir(state)[Symbol.asyncIterator]().next()).done === false);
      });
    },
  );
}
