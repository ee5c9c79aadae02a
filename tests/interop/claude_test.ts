// The claude driver against the real Claude Code (pinned in _install.ts) and a fake Anthropic
// Messages server: the common checks, then approvals asked over Claude Code's stdio protocol.
import assert from "node:assert/strict";
import { startFakeAnthropic } from "../fixtures/fake_anthropic.ts";
import { inOrder, text, toolCall } from "../fixtures/fake_model_server.ts";
import { fakeDecisions } from "../drivers/_helpers.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { driveTurn, registerCommonChecks, withDeadline } from "./_suite.ts";
import { claudeSpec } from "./_specs.ts";

const installed = await ensureCli("claude");
registerCommonChecks(claudeSpec, installed);

const writeFile = toolCall("Bash", {
  command: "echo tool-ran > out.txt; echo done",
  description: "Write out.txt",
});

interopTest(
  installed,
  "claude driver start() asks for approval under --approve ask and runs the tool once allowed (real Claude Code)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = startFakeAnthropic(inOrder(writeFile, text("Written.")));
      await using scratch = await makeScratch("claude", server.url);
      const { decisions, asked } = fakeDecisions(async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { decision: "allow", by: "cli", reason: null };
      });
      const { result, sink } = await driveTurn(claudeSpec, program, scratch, {
        approval: "ask",
        decisions,
        signal,
      });
      assert.equal(result.status, "completed", result.reason ?? "");
      assert.deepEqual(asked, ["approval-1"]);
      const requested = sink.ofType("approval.requested")[0].payload;
      assert.equal(requested.tool, "Bash");
      assert.deepEqual(requested.args, {
        command: "echo tool-ran > out.txt; echo done",
        description: "Write out.txt",
      });
      assert.equal(sink.ofType("tool.completed")[0].payload.ok, true);
      assert.equal(await Deno.readTextFile(`${scratch.cwd}/out.txt`), "tool-ran\n");
    });
  },
);

interopTest(
  installed,
  "claude driver start() refuses the tool under --approve deny and the model reads why (real Claude Code)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = startFakeAnthropic(inOrder(writeFile, text("Could not write.")));
      await using scratch = await makeScratch("claude", server.url);
      const { result, sink } = await driveTurn(claudeSpec, program, scratch, {
        approval: "deny",
        signal,
      });
      assert.equal(result.status, "completed", result.reason ?? "");
      assert.deepEqual(sink.ofType("approval.resolved").map((event) => event.payload), [{
        approvalId: "approval-1",
        decision: "deny",
        by: "policy",
        reason: "--approve deny",
      }]);
      const completed = sink.ofType("tool.completed")[0].payload;
      assert.equal(completed.ok, false);
      assert.equal(completed.error, "Denied by policy: --approve deny");
      await assert.rejects(Deno.stat(`${scratch.cwd}/out.txt`), Deno.errors.NotFound);
      // The second model call carries the refusal as the tool's result.
      const last = server.modelCalls().at(-1)!;
      assert.match(JSON.stringify(last.body), /Denied by policy: --approve deny/);
    });
  },
);

interopTest(
  installed,
  "claude driver start() returns interrupted when stopped while an approval is pending (real Claude Code)",
  async (program) => {
    await withDeadline(120, async (deadline) => {
      await using server = startFakeAnthropic(inOrder(writeFile, text("Written.")));
      await using scratch = await makeScratch("claude", server.url);
      const stop = new AbortController();
      // Nobody answers, and this source of decisions never gives up: the driver must stop
      // waiting by itself when the run is stopped.
      const { decisions } = fakeDecisions(() => {
        stop.abort();
        return new Promise(() => {});
      });
      const { result, sink } = await driveTurn(claudeSpec, program, scratch, {
        approval: "ask",
        decisions,
        signal: AbortSignal.any([stop.signal, deadline]),
      });
      assert.equal(result.status, "interrupted", result.reason ?? "");
      assert.equal(sink.ofType("approval.requested").length, 1);
      assert.deepEqual(sink.ofType("tool.completed").filter((event) => event.payload.ok), []);
      await assert.rejects(Deno.stat(`${scratch.cwd}/out.txt`), Deno.errors.NotFound);
    });
  },
);
