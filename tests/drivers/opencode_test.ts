// The opencode driver against a scripted stand-in printing lines recorded from opencode 1.18.33;
// the real CLI is driven in tests/interop/opencode_test.ts.
import assert from "node:assert/strict";
import type { DriverInput } from "../../lib/drivers/driver.ts";
import {
  createOpencodeDriver,
  OPENCODE_DENY_PERMISSION,
  opencodeArgs,
  opencodeEnv,
  opencodeFacts,
} from "../../lib/drivers/opencode.ts";
import { type Step, writeFakeCli } from "./_fake_cli.ts";
import { driverInput, MemorySink, scratchDir, testSettings } from "./_helpers.ts";

const SESSION = "ses_dd83ffcaffferPCP4OFQD0I2Af";
const line = (type: string, part: Record<string, unknown>) => ({
  type,
  timestamp: 1795963229368,
  sessionID: SESSION,
  part: { sessionID: SESSION, messageID: "msg_1", ...part },
});
const stepFinish = (reason: string, cost: number) =>
  line("step_finish", {
    type: "step-finish",
    reason,
    tokens: { total: 46, input: 40, output: 6, reasoning: 0, cache: { write: 0, read: 8 } },
    cost,
  });

async function runFake(dir: string, steps: Step[], fields: Partial<DriverInput> = {}) {
  const fake = await writeFakeCli(dir, { steps });
  const settings = testSettings(dir, { opencode: { program: fake.program } });
  const sink = new MemorySink();
  const result = await createOpencodeDriver().start(
    driverInput({ harness: "opencode", settings, cwd: dir, env: fake.env, ...fields }),
    sink,
    new AbortController().signal,
  );
  return { result, sink, recorded: await fake.recorded() };
}

Deno.test("opencodeArgs() puts the prompt after -- and resumes with --session", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, { opencode: { model: "fake/m", args: ["--pure"] } });
  const base = driverInput({ harness: "opencode", settings, cwd: dir.path, prompt: "-x" });
  assert.deepEqual(opencodeArgs(base), [
    "run",
    "--format",
    "json",
    "--model",
    "fake/m",
    "--auto",
    "--pure",
    "--",
    "-x",
  ]);
  assert.deepEqual(
    opencodeArgs({
      ...base,
      approval: "deny",
      resume: { sessionId: "s", nativeSessionId: SESSION },
    }),
    ["run", "--format", "json", "--model", "fake/m", "--session", SESSION, "--pure", "--", "-x"],
  );
  assert.deepEqual(opencodeEnv(base), {});
  assert.deepEqual(opencodeEnv({ ...base, approval: "ask" }), {
    OPENCODE_PERMISSION: JSON.stringify(OPENCODE_DENY_PERMISSION),
  });
});

Deno.test("opencode driver start() maps a turn with a tool call to events and sums its steps", async () => {
  await using dir = await scratchDir();
  const { result, sink, recorded } = await runFake(dir.path, [
    { out: line("step_start", { type: "step-start" }) },
    {
      out: line("tool_use", {
        type: "tool",
        tool: "bash",
        callID: "call_1",
        state: {
          status: "completed",
          input: { command: "echo done" },
          output: "done\n",
          time: { start: 1795963227241, end: 1795963229281 },
        },
      }),
    },
    { out: stepFinish("tool-calls", 0.001) },
    { out: line("step_start", { type: "step-start" }) },
    { out: line("text", { type: "text", text: "All done." }) },
    { out: stepFinish("stop", 0.002) },
  ], { approval: "deny" });
  assert.deepEqual(result, { status: "completed", reason: null, result: "All done.", exitCode: 0 });
  const usage = {
    outputTokens: 6,
    cacheReadTokens: 8,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
  assert.deepEqual(sink.plain(), [
    { type: "message.completed", payload: { role: "user", text: "say hello" } },
    { type: "session.linked", payload: { nativeSessionId: SESSION } },
    {
      type: "tool.started",
      payload: { callId: "call_1", tool: "bash", args: { command: "echo done" } },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "call_1",
        ok: true,
        result: "done\n",
        startedAt: "<time>",
        finishedAt: "<time>",
      },
    },
    {
      type: "usage.updated",
      payload: { inputTokens: 40, ...usage, costUsd: 0.001, requests: 1 },
    },
    { type: "message.completed", payload: { role: "assistant", text: "All done." } },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 80,
        ...usage,
        outputTokens: 12,
        cacheReadTokens: 16,
        costUsd: 0.003,
        requests: 2,
      },
    },
  ]);
  // The tool's own times, from opencode's state.time.
  const completed = sink.ofType("tool.completed")[0].payload;
  assert.deepEqual([completed.startedAt, completed.finishedAt], [
    new Date(1795963227241).toISOString(),
    new Date(1795963229281).toISOString(),
  ]);
  assert.equal(recorded.env.OPENCODE_PERMISSION, JSON.stringify(OPENCODE_DENY_PERMISSION));
});

Deno.test("opencode driver start() fails with the API error opencode reports", async () => {
  await using dir = await scratchDir();
  const { result } = await runFake(dir.path, [
    {
      out: {
        type: "error",
        timestamp: 1795963316778,
        sessionID: SESSION,
        error: {
          name: "APIError",
          data: { message: "bad key", statusCode: 401, isRetryable: false },
        },
      },
    },
    { exit: 1 },
  ]);
  assert.deepEqual(result, {
    status: "failed",
    reason: "opencode failed: bad key (HTTP 401)",
    result: null,
    exitCode: 1,
  });
});

// A line whose fields are not what reins acts on is refused whole, by its wire schema, instead of
// being read in part (the str/num/obj helpers took a mistyped field as absent and went on).
Deno.test("opencode driver start() keeps a line that fails its wire schema as a problem and reads none of it", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: line("step_start", { type: "step-start" }) },
    { out: line("step_finish", { type: "step-finish", tokens: { input: "40" }, cost: 0.5 }) },
    { out: line("text", { type: "text", text: "Done." }) },
    { out: stepFinish("stop", 0.25) },
    { exit: 0 },
  ]);
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload.reason), [
    "opencode wrote a step_finish line reins cannot read (Invalid input: expected number, received string at part.tokens.input); it was skipped",
  ]);
  const usage = sink.ofType("usage.updated").map((event) => event.payload.costUsd);
  assert.deepEqual(usage, [0.25], "nothing of the refused line was used");
  assert.equal(result.status, "completed");
  assert.equal(result.result, "Done.");
});

Deno.test("opencodeFacts() takes the provider and model from the configured PROVIDER/MODEL", async () => {
  await using dir = await scratchDir();
  const facts = (model?: string) =>
    opencodeFacts({
      settings: testSettings(dir.path, { opencode: { model } }),
      agent: { kind: "harness", driver: "opencode", idleTimeoutSeconds: null },
    });
  const counting = { inputExcludesCache: true, inProcess: false };
  assert.deepEqual(facts(), { provider: "opencode", ...counting });
  assert.deepEqual(facts("anthropic/claude-sonnet-4-5"), {
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    ...counting,
  });
  assert.deepEqual(facts("google/gemini-2.5-pro"), {
    provider: "gcp.gemini",
    model: "gemini-2.5-pro",
    ...counting,
  });
  // A provider the conventions do not name is opencode's own name for it.
  assert.deepEqual(facts("ollama/qwen3"), { provider: "ollama", model: "qwen3", ...counting });
  assert.deepEqual(facts("bare-model"), { provider: "opencode", model: "bare-model", ...counting });
  assert.deepEqual(facts("anthropic/"), { provider: "anthropic", ...counting });
});
