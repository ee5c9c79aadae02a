// `reins run --driver <cli>` end to end: main.ts under the binary's own sandbox, the real CLI
// (allowed by path, as REINS_<CLI>_BIN), a fake model server. Two turns on one context give one
// context and two runs and the second resumes; for claude, an approval is answered from a second
// process with `reins approve`, and SIGINT leaves an interrupted run whose session resumes.
import assert from "node:assert/strict";
import type { HarnessDriver } from "../../lib/core/config.ts";
import type { RunRecord } from "../../lib/store/contracts.ts";
import { inOrder, stall, text, toolCall } from "../fixtures/fake_model_server.ts";
import { reins, type ReinsOptions, spawnReins } from "../support/reins.ts";
import { ensureCli, type Installed, interopTest } from "./_install.ts";
import { makeScratch, type Scratch } from "./_scratch.ts";
import { type HarnessSpec, withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec, geminiSpec, opencodeSpec } from "./_specs.ts";

const SPECS: HarnessSpec[] = [claudeSpec, codexSpec, geminiSpec, opencodeSpec];
const installed: Record<string, Installed> = {};
for (const spec of SPECS) installed[spec.driver] = await ensureCli(spec.driver);

/** How `reins` is run for one CLI: its scratch world in the environment, the CLI allowed. */
async function reinsFor(
  driver: HarnessDriver,
  program: string,
  scratch: Scratch,
): Promise<ReinsOptions> {
  await Deno.mkdir(scratch.reinsHome, { recursive: true });
  await Deno.writeTextFile(
    `${scratch.reinsHome}/config.json`,
    JSON.stringify({ drivers: { [driver]: { args: scratch.args, idleTimeoutSeconds: 90 } } }),
  );
  return {
    home: scratch.reinsHome,
    cwd: scratch.cwd,
    env: { ...scratch.env, [`REINS_${driver.toUpperCase()}_BIN`]: program },
    allowRun: [program],
  };
}

function parseJson<T>(result: { code: number; stdout: string; stderr: string }): T {
  assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

for (const spec of SPECS) {
  interopTest(
    installed[spec.driver],
    `reins run --driver ${spec.driver} --context X twice gives one context and two runs (real ${spec.cli})`,
    async (program) => {
      await withDeadline(240, async () => {
        await using server = spec.serve(inOrder(text("First answer."), text("Second answer.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        const options = await reinsFor(spec.driver, program, scratch);
        const run = (prompt: string) =>
          reins(
            ["run", "--driver", spec.driver, "--context", "ticket-7", "--json", prompt],
            options,
          );

        const first = parseJson<{ status: string; result: string; sessionId: string }>(
          await run("remember the word kiwi"),
        );
        assert.deepEqual([first.status, first.result], ["completed", "First answer."]);
        const second = parseJson<{ status: string; result: string; sessionId: string }>(
          await run("which word was it"),
        );
        assert.deepEqual([second.status, second.result], ["completed", "Second answer."]);
        assert.equal(second.sessionId, first.sessionId);

        const contexts = parseJson<
          { contextId: string; native_session_id: string; driver: string }[]
        >(
          await reins(["contexts", "--json"], options),
        );
        assert.equal(contexts.length, 1);
        assert.equal(contexts[0].contextId, "ticket-7");
        assert.equal(contexts[0].driver, spec.driver);
        assert.ok(contexts[0].native_session_id, "the CLI's own session id is kept");

        const runs = parseJson<RunRecord[]>(
          await reins(["runs", "--context", "ticket-7", "--json"], options),
        );
        assert.equal(runs.length, 2);
        assert.deepEqual(runs.map((record) => record.status), ["completed", "completed"]);
        assert.deepEqual(
          new Set(runs.map((record) => record.nativeSessionId)),
          new Set([contexts[0].native_session_id]),
        );

        // The second turn reached the model with the first one's history.
        const calls = server.requests.filter(spec.isTurnCall);
        const history = spec.transcript(calls[calls.length - 1]).join("\n");
        assert.match(history, /remember the word kiwi/);
        assert.match(history, /First answer\./);
      });
    },
  );
}

interopTest(
  installed.claude,
  "reins run --driver claude --approve ask waits for reins approve from another process (real Claude Code)",
  async (program) => {
    await withDeadline(180, async (signal) => {
      await using server = claudeSpec.serve(inOrder(
        toolCall("Bash", { command: "echo tool-ran > out.txt; echo done", description: "Write" }),
        text("Written."),
      ));
      await using scratch = await makeScratch("claude", server.url);
      const options = await reinsFor("claude", program, scratch);
      const child = spawnReins(
        ["run", "--driver", "claude", "--approve", "ask", "--json", "write the file"],
        options,
      );
      const output = child.output();
      // The run waits; find it and what it waits for from a second process.
      let runId: string | null = null;
      while (runId === null) {
        if (signal.aborted) throw new Error("The run never asked for approval");
        await new Promise((resolve) => setTimeout(resolve, 200));
        const waiting = JSON.parse(
          (await reins(["runs", "--status", "waiting", "--json"], options)).stdout || "[]",
        ) as RunRecord[];
        runId = waiting[0]?.id ?? null;
      }
      await assert.rejects(Deno.stat(`${scratch.cwd}/out.txt`), Deno.errors.NotFound);
      const approved = await reins(["approve", runId, "approval-1", "--json"], options);
      assert.equal(approved.code, 0, approved.stderr);

      const done = await output;
      const stdout = new TextDecoder().decode(done.stdout);
      assert.equal(done.code, 0, new TextDecoder().decode(done.stderr));
      assert.deepEqual(
        (({ status, result }) => ({ status, result }))(JSON.parse(stdout)),
        { status: "completed", result: "Written." },
      );
      assert.equal(await Deno.readTextFile(`${scratch.cwd}/out.txt`), "tool-ran\n");
      const events = (await Deno.readTextFile(`${scratch.reinsHome}/runs/${runId}/events.jsonl`))
        .trim().split("\n").map((line) => JSON.parse(line));
      const types = events.map((event) => event.type);
      assert.ok(
        types.indexOf("approval.requested") < types.indexOf("approval.resolved") &&
          types.indexOf("approval.resolved") < types.indexOf("tool.completed"),
        types.join(", "),
      );
      assert.deepEqual(
        events.find((event) => event.type === "approval.resolved").payload,
        { approvalId: "approval-1", decision: "allow", by: "cli", reason: null },
      );
    });
  },
);

interopTest(
  installed.claude,
  "reins run --driver claude ends interrupted on SIGINT and the context resumes (real Claude Code)",
  async (program) => {
    await withDeadline(180, async (signal) => {
      let stalled = true;
      await using server = claudeSpec.serve(() => stalled ? stall() : text("Back again."));
      await using scratch = await makeScratch("claude", server.url);
      const options = await reinsFor("claude", program, scratch);
      const child = spawnReins(
        ["run", "--driver", "claude", "--context", "c1", "--json", "take your time"],
        options,
      );
      while (!server.requests.some(claudeSpec.isTurnCall)) {
        if (signal.aborted) throw new Error("Claude Code never called the model");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill("SIGINT");
      const done = await child.output();
      assert.equal(done.code, 1);
      const summary = JSON.parse(new TextDecoder().decode(done.stdout));
      assert.equal(summary.status, "interrupted");

      stalled = false;
      const again = parseJson<{ status: string; result: string }>(
        await reins(["run", "--driver", "claude", "--context", "c1", "--json", "go on"], options),
      );
      assert.deepEqual([again.status, again.result], ["completed", "Back again."]);
      const calls = server.requests.filter(claudeSpec.isTurnCall);
      assert.match(claudeSpec.transcript(calls[calls.length - 1]).join("\n"), /take your time/);
    });
  },
);

interopTest(
  installed.codex,
  "reins run --driver codex --timeout fails a Codex that hangs on a dead model server (real Codex)",
  async (program) => {
    await withDeadline(120, async () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      await using scratch = await makeScratch("codex", `http://127.0.0.1:${port}`);
      const options = await reinsFor("codex", program, scratch);
      const started = performance.now();
      // Without the gateway, which answers for a dead upstream at once (below).
      const result = await reins(
        ["run", "--driver", "codex", "--no-gateway", "--timeout", "3", "--json", "hello?"],
        options,
      );
      assert.equal(result.code, 1, result.stderr);
      const summary = JSON.parse(result.stdout);
      assert.equal(summary.status, "failed");
      assert.match(summary.reason, /timed out after 3 s/);
      assert.ok(performance.now() - started < 30_000);
    });
  },
);

// regression: Codex waited for ever on a dead model server (only the idle timeout or --timeout
// ended it); through the gateway the dead upstream is a 502 it gives up on at once.
interopTest(
  installed.codex,
  "reins run --driver codex fails at once, naming it, when the model server is dead (real Codex)",
  async (program) => {
    await withDeadline(120, async () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      await using scratch = await makeScratch("codex", `http://127.0.0.1:${port}`);
      const options = await reinsFor("codex", program, scratch);
      const started = performance.now();
      const result = await reins(["run", "--driver", "codex", "--json", "hello?"], options);
      assert.equal(result.code, 1, result.stderr);
      const summary = JSON.parse(result.stdout);
      assert.equal(summary.status, "failed");
      assert.match(summary.reason, new RegExp(`cannot reach 127\\.0\\.0\\.1:${port}`));
      assert.match(result.stderr, /reins: the model server answered 502/);
      assert.ok(performance.now() - started < 30_000);
    });
  },
);
