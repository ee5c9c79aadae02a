// What a new user meets with the real CLIs, end to end through `reins run` (main.ts under the
// binary's sandbox) and fake model servers: Claude Code's questions answered with `reins answer`
// from another process, and one context carried across Claude Code and Codex, each resuming its
// own session when the context comes back to it.
import assert from "node:assert/strict";
import { inOrder, text, toolCall } from "../fixtures/fake_model_server.ts";
import { reins, type ReinsOptions, spawnReins } from "../support/reins.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec } from "./_specs.ts";

const claude = await ensureCli("claude");
const codex = await ensureCli("codex");

function parseJson<T>(result: { code: number; stdout: string; stderr: string }): T {
  assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function runEvents(home: string, runId: string) {
  return (await Deno.readTextFile(`${home}/runs/${runId}/events.jsonl`)).trim().split("\n")
    .map((line) => JSON.parse(line) as { type: string; payload: Record<string, unknown> });
}

const ASK = toolCall("AskUserQuestion", {
  questions: [{
    question: "Which colour should the button be?",
    header: "Colour",
    options: [{ label: "Red", description: "warm" }, { label: "Blue", description: "cool" }],
    multiSelect: false,
  }],
});

for (const approval of ["auto", "ask"] as const) {
  interopTest(
    claude,
    `reins answer from another process reaches Claude Code's AskUserQuestion (--approve ${approval}, real Claude Code)`,
    async (program) => {
      await withDeadline(180, async (signal) => {
        await using server = claudeSpec.serve(inOrder(ASK, text("Blue it is.")));
        await using scratch = await makeScratch("claude", server.url);
        await Deno.mkdir(scratch.reinsHome, { recursive: true });
        await Deno.writeTextFile(
          `${scratch.reinsHome}/config.json`,
          JSON.stringify({ drivers: { claude: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
        );
        const options: ReinsOptions = {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, REINS_CLAUDE_BIN: program },
          allowRun: [program],
        };
        const child = spawnReins(
          ["run", "--driver", "claude", "--approve", approval, "--json", "style the button"],
          options,
        );
        const output = child.output();
        let runId: string | null = null;
        while (runId === null) {
          if (signal.aborted) throw new Error("The run never asked its question");
          await new Promise((resolve) => setTimeout(resolve, 200));
          const waiting = JSON.parse(
            (await reins(["runs", "--status", "waiting", "--json"], options)).stdout || "[]",
          ) as { runId: string }[];
          runId = waiting[0]?.runId ?? null;
        }
        const answered = await reins(["answer", runId, "question-1", "Blue, please"], options);
        assert.equal(answered.code, 0, answered.stderr);
        const done = await output;
        assert.equal(done.code, 0, new TextDecoder().decode(done.stderr));
        const summary = JSON.parse(new TextDecoder().decode(done.stdout));
        assert.deepEqual([summary.status, summary.result], ["completed", "Blue it is."]);
        // Claude Code handed the model the answer as the tool's result.
        const last = server.modelCalls().at(-1)!;
        assert.match(JSON.stringify(last.body), /Blue, please/);
        const events = await runEvents(scratch.reinsHome, runId);
        const asked = events.find((e) => e.type === "question.requested")!;
        assert.equal(
          asked.payload.text,
          "Which colour should the button be? (Red: warm · Blue: cool)",
        );
        assert.deepEqual(events.filter((e) => e.type === "approval.requested"), []);
      });
    },
  );
}

interopTest(
  claude,
  "reins run --driver claude --max-turns 1 is held by the gateway: the run fails, budget exhausted (real Claude Code)",
  async (program) => {
    await withDeadline(180, async () => {
      // The model would go on calling tools for ever.
      await using server = claudeSpec.serve(
        inOrder(toolCall("Bash", { command: "echo again", description: "Again" })),
      );
      await using scratch = await makeScratch("claude", server.url);
      await Deno.mkdir(scratch.reinsHome, { recursive: true });
      await Deno.writeTextFile(
        `${scratch.reinsHome}/config.json`,
        JSON.stringify({ drivers: { claude: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
      );
      const result = await reins(
        ["run", "--driver", "claude", "--max-turns", "1", "--json", "keep going"],
        {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, REINS_CLAUDE_BIN: program },
          allowRun: [program],
        },
      );
      assert.equal(result.code, 1, result.stderr);
      // Only the run's own failure and Claude Code's report of the refused call (an API error,
      // kept as a problem): nothing of the budget was said to go unenforced.
      assert.deepEqual(
        result.stderr.trimEnd().split("\n").filter((line) =>
          !/ failed: budget exhausted|problem was kept/.test(line)
        ),
        [],
      );
      const summary = JSON.parse(result.stdout);
      assert.equal(summary.status, "failed");
      assert.equal(summary.reason, "budget exhausted: --max-turns 1 (1 of 1 model calls)");
      assert.equal(server.modelCalls().length, 1);
    });
  },
);

if (claude.skip === null && codex.skip === null) {
  Deno.test("reins run on one context: claude, codex, claude — each resumes its own session (real Claude Code and Codex)", async () => {
    await withDeadline(300, async () => {
      await using claudeServer = claudeSpec.serve(
        inOrder(text("Claude: noted kiwi."), text("Claude: it was kiwi.")),
      );
      await using codexServer = codexSpec.serve(inOrder(text("Codex: fixed it.")));
      await using claudeWorld = await makeScratch("claude", claudeServer.url);
      await using codexWorld = await makeScratch("codex", codexServer.url);
      const home = claudeWorld.reinsHome;
      await Deno.mkdir(home, { recursive: true });
      await Deno.writeTextFile(
        `${home}/config.json`,
        JSON.stringify({
          drivers: {
            claude: { args: claudeWorld.args, idleTimeoutSeconds: 90 },
            codex: { args: codexWorld.args, idleTimeoutSeconds: 90 },
          },
        }),
      );
      const options: ReinsOptions = {
        home,
        cwd: claudeWorld.cwd,
        // Each CLI keeps its sessions in its own config dir (CLAUDE_CONFIG_DIR, CODEX_HOME).
        env: {
          ...codexWorld.env,
          ...claudeWorld.env,
          REINS_CLAUDE_BIN: claude.program,
          REINS_CODEX_BIN: codex.program,
        },
        allowRun: [claude.program, codex.program],
      };
      const turn = (driver: string, prompt: string) =>
        reins(["run", "--driver", driver, "--context", "ticket-9", "--json", prompt], options);
      const one = parseJson<{ runId: string; sessionId: string }>(
        await turn("claude", "remember the word kiwi"),
      );
      const two = parseJson<{ runId: string; sessionId: string; result: string }>(
        await turn("codex", "fix the typo"),
      );
      assert.equal(two.result, "Codex: fixed it.");
      assert.notEqual(two.sessionId, one.sessionId);
      const three = parseJson<{ runId: string; sessionId: string; result: string }>(
        await turn("claude", "which word was it"),
      );
      assert.equal(three.result, "Claude: it was kiwi.");
      assert.equal(three.sessionId, one.sessionId, "claude's own session, resumed");
      // Claude Code continued its first conversation: the model sees the first turn.
      const calls = claudeServer.modelCalls();
      const history = claudeSpec.transcript(calls[calls.length - 1]).join("\n");
      assert.match(history, /remember the word kiwi/);
      assert.match(history, /Claude: noted kiwi\./);
      assert.doesNotMatch(history, /fix the typo/, "Codex's turn is not Claude Code's");

      const shown = parseJson<{ record: { relation: string; resumedFromRunId: string } }>(
        await reins(["show", three.runId, "--json"], options),
      );
      assert.deepEqual(
        [shown.record.relation, shown.record.resumedFromRunId],
        ["resume", one.runId],
      );
      const [context] = parseJson<{ driver: string; sessions: { driver: string }[] }[]>(
        await reins(["contexts", "--json"], options),
      );
      assert.equal(context.driver, "claude");
      assert.deepEqual(context.sessions.map((s) => s.driver), ["claude", "codex"]);
    });
  });
} else {
  console.warn("interop: SKIPPED the claude + codex context test: a CLI could not be installed");
  Deno.test({
    name: "reins run on one context: claude, codex, claude [SKIPPED: a CLI is not installed]",
    ignore: true,
    fn: () => {},
  });
}
