// The opencode driver against the real opencode (pinned in _install.ts) and a fake Chat
// Completions server. opencode asks the model for a title first: that call is answered apart.
import assert from "node:assert/strict";
import { apiError, inOrder } from "../fixtures/fake_model_server.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { driveTurn, registerCommonChecks, withDeadline } from "./_suite.ts";
import { opencodeSpec } from "./_specs.ts";

const installed = await ensureCli("opencode");
registerCommonChecks(opencodeSpec, installed);

interopTest(
  installed,
  "opencode driver start() fails naming opencode when it retries a 500 until the idle timeout (real opencode)",
  async (program) => {
    await withDeadline(150, async (signal) => {
      await using server = opencodeSpec.serve(inOrder(apiError(500, "the fake is down")));
      await using scratch = await makeScratch("opencode", server.url);
      const { result } = await driveTurn(opencodeSpec, program, scratch, {
        idleTimeoutSeconds: 30,
        signal,
      });
      assert.equal(result.status, "failed");
      assert.match(result.reason ?? "", /^opencode said nothing for 30 s and was stopped/);
      // It was retrying, not stuck before its first call.
      assert.ok(server.requests.filter(opencodeSpec.isTurnCall).length >= 2);
    });
  },
);
