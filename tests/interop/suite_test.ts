// `reins suite run` on the real Claude Code against the fake Anthropic server, under the binary's
// sandbox: a two-scenario suite — one that continues a session over two scripted turns, one that
// runs a tool — each scenario one context in its own copy of the workdir, judged by its checks.
import assert from "node:assert/strict";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { reins } from "../support/reins.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { withDeadline } from "./_suite.ts";
import { claudeSpec } from "./_specs.ts";

const installed = await ensureCli("claude");

interopTest(
  installed,
  "reins suite run plays a two-scenario suite on Claude Code: sessions continue, tools run, checks judge (real Claude Code)",
  async (program) => {
    await withDeadline(300, async () => {
      // jobs 1: the scenarios, and so the scripted answers, come in the file's order.
      await using server = claudeSpec.serve(inOrder(
        text("First answer."),
        text("The word was kiwi."),
        claudeSpec.shellTool,
        text("Written."),
      ));
      await using scratch = await makeScratch("claude", server.url);
      await Deno.mkdir(`${scratch.reinsHome}`, { recursive: true });
      await Deno.writeTextFile(
        `${scratch.reinsHome}/config.json`,
        JSON.stringify({ drivers: { claude: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
      );
      await Deno.mkdir(`${scratch.cwd}/shop`);
      await Deno.writeTextFile(`${scratch.cwd}/shop/README.md`, "the shop\n");
      await Deno.writeTextFile(
        `${scratch.cwd}/suite.yaml`,
        [
          "suite: claude-interop",
          "driver: claude",
          "approve: auto",
          "workdir: ./shop",
          "timeouts: {turnSeconds: 120}",
          "scenarios:",
          "  - key: recall",
          "    persona: {name: Kim}",
          "    turns: ['remember the word kiwi', 'which word was it']",
          "    checks:",
          "      - {name: remembers, regex: '(?i)kiwi', in: final}",
          "      - {name: no-shell, tool: Bash, absent: true}",
          "  - key: writes-a-file",
          "    turns: ['write out.txt']",
          "    checks:",
          "      - {name: wrote, file: out.txt, contains: tool-ran}",
          "      - {name: used-bash, tool: Bash}",
          "      - {name: answered, regex: Written, in: final}",
        ].join("\n"),
      );
      const result = await reins(["suite", "run", "suite.yaml", "--jobs", "1", "--json"], {
        home: scratch.reinsHome,
        cwd: scratch.cwd,
        env: { ...scratch.env, REINS_CLAUDE_BIN: program },
        allowRun: [program],
      });
      assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}\n${result.stdout}`);
      const run = JSON.parse(result.stdout);
      assert.deepEqual(
        run.scenarios.map((
          s: { key: string; status: string; met: number; of: number },
        ) => [s.key, s.status, s.met, s.of]),
        [["recall", "passed", 2, 2], ["writes-a-file", "passed", 3, 3]],
      );
      const recall = run.scenarios[0];
      const records = recall.runIds.map((id: string) =>
        JSON.parse(Deno.readTextFileSync(`${scratch.reinsHome}/runs/${id}/run.json`))
      );
      // One context, one Claude Code session: the second turn resumed the first.
      assert.equal(new Set(records.map((r: { contextId: string }) => r.contextId)).size, 1);
      assert.equal(new Set(records.map((r: { sessionId: string }) => r.sessionId)).size, 1);
      assert.ok(records[1].nativeSessionId, "Claude Code's own session id is kept");
      assert.equal(records[1].parentRunId, records[0].id);
      const calls = server.requests.filter(claudeSpec.isTurnCall);
      const second = claudeSpec.transcript(calls[1]).join("\n");
      assert.match(second, /remember the word kiwi/);
      assert.match(second, /First answer\./);
      // The tool ran in the scenario's own copy, not in the workdir.
      await assert.rejects(Deno.stat(`${scratch.cwd}/shop/out.txt`), Deno.errors.NotFound);
    });
  },
);
