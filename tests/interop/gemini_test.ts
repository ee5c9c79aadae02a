// The gemini driver against the real Gemini CLI (pinned in _install.ts) and a fake Gemini API.
import assert from "node:assert/strict";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { driveTurn, registerCommonChecks, withDeadline } from "./_suite.ts";
import { geminiSpec } from "./_specs.ts";

const installed = await ensureCli("gemini");
registerCommonChecks(geminiSpec, installed);

interopTest(
  installed,
  "gemini driver start() leaves the shell out under --approve deny (real Gemini CLI)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = geminiSpec.serve(inOrder(geminiSpec.shellTool, text("No shell.")));
      await using scratch = await makeScratch("gemini", server.url);
      const { result, sink } = await driveTurn(geminiSpec, program, scratch, {
        approval: "deny",
        signal,
      });
      assert.equal(result.status, "completed", result.reason ?? "");
      const completed = sink.ofType("tool.completed")[0].payload;
      assert.equal(completed.ok, false);
      assert.match(completed.error ?? "", /not found/);
      await assert.rejects(Deno.stat(`${scratch.cwd}/out.txt`), Deno.errors.NotFound);
    });
  },
);
