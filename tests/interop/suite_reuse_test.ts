// `reins suite run --reuse SUITE_RUN` on the real Claude Code under the binary's sandbox: a suite
// played once against the fake Anthropic server, then again with --reuse against a fake that
// fails every call — every call is answered from the first suite run's recordings, the checks
// judge anew and pass; then with one scenario's prompt changed, that scenario's calls go to the
// model (they no longer match) while the other's are still reused, and the counts say so.
import assert from "node:assert/strict";
import { apiError, inOrder, text } from "../fixtures/fake_model_server.ts";
import { openStore } from "../../lib/store/store.ts";
import { reins, type ReinsOptions } from "../support/reins.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { withDeadline } from "./_suite.ts";
import { claudeSpec } from "./_specs.ts";

const installed = await ensureCli("claude");

function suiteFile(writePrompt: string): string {
  return [
    "suite: claude-reuse",
    "driver: claude",
    "approve: auto",
    "workdir: ./shop",
    "timeouts: {turnSeconds: 120}",
    "scenarios:",
    "  - key: recall",
    "    turns: ['remember the word kiwi', 'which word was it']",
    "    checks:",
    "      - {name: remembers, regex: '(?i)kiwi', in: final}",
    "  - key: writes-a-file",
    `    turns: ['${writePrompt}']`,
    "    checks:",
    "      - {name: wrote, file: out.txt, contains: tool-ran}",
    "      - {name: answered, regex: Written, in: final}",
  ].join("\n");
}

interopTest(
  installed,
  "reins suite run --reuse answers matching calls from a suite run's recordings, the rest from the model (real Claude Code)",
  async (program) => {
    await withDeadline(400, async () => {
      await using scratch = await makeScratch("claude", "http://127.0.0.1:9");
      await Deno.mkdir(scratch.reinsHome, { recursive: true });
      await Deno.writeTextFile(
        `${scratch.reinsHome}/config.json`,
        JSON.stringify({ drivers: { claude: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
      );
      await Deno.mkdir(`${scratch.cwd}/shop`);
      await Deno.writeTextFile(`${scratch.cwd}/shop/README.md`, "the shop\n");
      const play = async (serverUrl: string, file: string, extra: string[]) => {
        await Deno.writeTextFile(`${scratch.cwd}/suite.yaml`, file);
        const options: ReinsOptions = {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, ANTHROPIC_BASE_URL: serverUrl, REINS_CLAUDE_BIN: program },
          allowRun: [program],
        };
        const result = await reins(
          ["suite", "run", "suite.yaml", "--jobs", "1", "--json", ...extra],
          options,
        );
        return { ...result, run: result.stdout ? JSON.parse(result.stdout) : null };
      };
      const statuses = (run: { scenarios: { key: string; status: string }[] }) =>
        run.scenarios.map((s) => [s.key, s.status]);

      let first;
      {
        await using server = claudeSpec.serve(inOrder(
          text("First answer."),
          text("The word was kiwi."),
          claudeSpec.shellTool,
          text("Written."),
        ));
        first = await play(server.url, suiteFile("write out.txt"), []);
        assert.equal(first.code, 0, `${first.stderr}\n${first.stdout}`);
      }
      const recorded = first.run.scenarios.flatMap((s: { runIds: string[] }) => s.runIds);
      assert.equal(recorded.length, 3);

      // Every call reused: a fake that fails every call is never asked.
      {
        await using failing = claudeSpec.serve(inOrder(apiError(401, "the fake says no")));
        const again = await play(failing.url, suiteFile("write out.txt"), [
          "--reuse",
          first.run.suiteRunId,
        ]);
        assert.equal(again.code, 0, `${again.stderr}\n${again.stdout}`);
        assert.deepEqual(statuses(again.run), [["recall", "passed"], ["writes-a-file", "passed"]]);
        assert.equal(failing.modelCalls().length, 0);
        assert.equal(again.run.reuse.from, first.run.suiteRunId);
        assert.equal(again.run.reuse.passedOn, 0);
        assert.ok(again.run.reuse.matched >= 4, JSON.stringify(again.run.reuse));
        assert.match(again.stderr, /reused \d+ of \d+ model calls from suite run /);
        // New runs, judged anew: not the first suite run's.
        const runIds = again.run.scenarios.flatMap((s: { runIds: string[] }) => s.runIds);
        assert.equal(runIds.filter((id: string) => recorded.includes(id)).length, 0);
      }

      // One prompt changed: its calls no longer match and go to the model; the other's are reused.
      {
        await using server = claudeSpec.serve(inOrder(claudeSpec.shellTool, text("Written.")));
        const changed = await play(server.url, suiteFile("write out.txt now"), [
          "--reuse",
          first.run.suiteRunId,
        ]);
        assert.equal(changed.code, 0, `${changed.stderr}\n${changed.stdout}`);
        assert.deepEqual(statuses(changed.run), [["recall", "passed"], [
          "writes-a-file",
          "passed",
        ]]);
        assert.ok(changed.run.reuse.matched >= 2, JSON.stringify(changed.run.reuse));
        assert.ok(changed.run.reuse.passedOn >= 2, JSON.stringify(changed.run.reuse));
        assert.equal(server.modelCalls().length, changed.run.reuse.passedOn);
      }
    });
  },
);

// regression: a recorded call whose answer's body was gone from wire/ was still taken as reused,
// and answered 502 "not on disk" (a failure, which Claude Code retries or gives up on); now the
// call goes to the model as one the recording has not
interopTest(
  installed,
  "reins suite run --reuse passes a call on to the model when its recorded answer is not on disk (real Claude Code)",
  async (program) => {
    await withDeadline(300, async () => {
      await using scratch = await makeScratch("claude", "http://127.0.0.1:9");
      await Deno.mkdir(scratch.reinsHome, { recursive: true });
      await Deno.writeTextFile(
        `${scratch.reinsHome}/config.json`,
        JSON.stringify({ drivers: { claude: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
      );
      await Deno.mkdir(`${scratch.cwd}/shop`);
      const file = [
        "suite: claude-reuse-damaged",
        "driver: claude",
        "workdir: ./shop",
        "timeouts: {turnSeconds: 120}",
        "scenarios:",
        "  - key: greets",
        "    turns: ['say hello']",
        "    checks:",
        "      - {name: greeted, regex: Hello, in: final}",
      ].join("\n");
      await Deno.writeTextFile(`${scratch.cwd}/suite.yaml`, file);
      const play = async (serverUrl: string, extra: string[]) => {
        const result = await reins(["suite", "run", "suite.yaml", "--json", ...extra], {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: { ...scratch.env, ANTHROPIC_BASE_URL: serverUrl, REINS_CLAUDE_BIN: program },
          allowRun: [program],
        });
        return { ...result, run: result.stdout ? JSON.parse(result.stdout) : null };
      };
      let first;
      {
        await using server = claudeSpec.serve(inOrder(text("Hello once.")));
        first = await play(server.url, []);
        assert.equal(first.code, 0, `${first.stderr}\n${first.stdout}`);
      }
      // The recorded answers of its generations are lost.
      const [runId] = first.run.scenarios[0].runIds;
      using store = openStore(scratch.reinsHome);
      const events = store.readEvents(runId).events;
      const generations = new Set(
        events.flatMap((event) =>
          event.type === "model.call.started" && event.payload.generates
            ? [event.payload.callId]
            : []
        ),
      );
      let lost = 0;
      for (const event of events) {
        if (event.type !== "model.call.completed" || !generations.has(event.payload.callId)) {
          continue;
        }
        if (event.payload.body === null) continue;
        await Deno.remove(store.layout.wireBody(runId, event.payload.body.sha256));
        lost++;
      }
      assert.ok(lost >= 1);
      await using server = claudeSpec.serve(inOrder(text("Hello again.")));
      const again = await play(server.url, ["--reuse", first.run.suiteRunId]);
      assert.equal(again.code, 0, `${again.stderr}\n${again.stdout}`);
      assert.ok(again.run.reuse.passedOn >= 1, JSON.stringify(again.run.reuse));
      const [replayed] = again.run.scenarios[0].runIds;
      const statuses = store.readEvents(replayed).events.flatMap((event) =>
        event.type === "model.call.completed" ? [event.payload.status] : []
      );
      assert.ok(!statuses.includes(502), JSON.stringify(statuses));
      assert.ok(server.modelCalls().length >= 1);
    });
  },
);
