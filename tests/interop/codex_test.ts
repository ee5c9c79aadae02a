// The codex driver against the real Codex CLI (pinned in _install.ts) and a fake OpenAI
// Responses server: the common checks, the cost estimate, and the dead model server Codex
// waits on forever, ended by the idle timeout.
import assert from "node:assert/strict";
import { startFakeResponses } from "../fixtures/fake_responses.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { driveTurn, registerCommonChecks, withDeadline } from "./_suite.ts";
import { codexSpec } from "./_specs.ts";

const installed = await ensureCli("codex");
registerCommonChecks(codexSpec, installed);

interopTest(
  installed,
  "codex driver start() estimates the turn's cost from the configured price (real Codex)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = startFakeResponses(inOrder(text("Priced.")));
      await using scratch = await makeScratch("codex", server.url);
      const { result, sink } = await driveTurn(codexSpec, program, scratch, {
        model: scratch.model,
        prices: {
          [scratch.model]: { inputPerMillion: 5, cachedInputPerMillion: 0.5, outputPerMillion: 30 },
        },
        signal,
      });
      assert.equal(result.status, "completed", result.reason ?? "");
      // One call of the fake: 1000 input tokens (200 cached) and 50 output tokens.
      const usage = sink.ofType("usage.updated").at(-1)!.payload;
      assert.deepEqual(
        [
          usage.inputTokens,
          usage.cacheReadTokens,
          usage.outputTokens,
          usage.costUsd,
          usage.costEstimated,
        ],
        [1000, 200, 50, (800 * 5 + 200 * 0.5 + 50 * 30) / 1e6, true],
      );
      // The model went to Codex as -m, and Codex asked the server for it.
      assert.equal((server.modelCalls()[0].body as { model: string }).model, scratch.model);
    });
  },
);

interopTest(
  installed,
  "codex driver start() fails naming Codex when it hangs on a dead model server (real Codex)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      // A port that was just free: Codex connects, fails, and waits forever (INTEROP.md).
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      await using scratch = await makeScratch("codex", `http://127.0.0.1:${port}`);
      const started = performance.now();
      const { result } = await driveTurn(codexSpec, program, scratch, {
        idleTimeoutSeconds: 4,
        signal,
      });
      assert.equal(result.status, "failed");
      assert.match(
        result.reason ?? "",
        /^Codex said nothing for 4 s and was stopped \(it (exited with code \d+|was ended by SIG\w+)\); the last thing it said: .+/,
      );
      assert.ok(performance.now() - started < 30_000);
    });
  },
);
