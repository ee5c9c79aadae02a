// The gemini driver against a scripted stand-in printing lines recorded from Gemini CLI 0.61.0;
// the real CLI is driven in tests/interop/gemini_test.ts.
import assert from "node:assert/strict";
import type { DriverInput } from "../../lib/drivers/driver.ts";
import { createGeminiDriver, geminiArgs } from "../../lib/drivers/gemini.ts";
import { type Step, writeFakeCli } from "./_fake_cli.ts";
import { driverInput, MemorySink, scratchDir, testSettings } from "./_helpers.ts";

const SESSION = "c2e84fcb-5139-4d0e-95a6-e188616417a1";
const stats = {
  total_tokens: 70,
  input_tokens: 60,
  output_tokens: 10,
  cached: 20,
  input: 40,
  duration_ms: 248,
  tool_calls: 1,
  models: {
    "gemini-test": { total_tokens: 70, input_tokens: 60, output_tokens: 10, cached: 20, input: 40 },
  },
};

async function runFake(dir: string, steps: Step[], fields: Partial<DriverInput> = {}) {
  const fake = await writeFakeCli(dir, { steps });
  const settings = testSettings(dir, { gemini: { program: fake.program } }, {
    "gemini-test": { inputPerMillion: 1, cachedInputPerMillion: 0.25, outputPerMillion: 4 },
  });
  const sink = new MemorySink();
  const result = await createGeminiDriver().start(
    driverInput({ harness: "gemini", settings, cwd: dir, env: fake.env, ...fields }),
    sink,
    new AbortController().signal,
  );
  return { result, sink, recorded: await fake.recorded() };
}

Deno.test("geminiArgs() maps --approve to an approval mode and resumes with --resume", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, {
    gemini: { model: "gemini-2.5-pro", args: ["--debug"] },
  });
  const base = driverInput({ harness: "gemini", settings, cwd: dir.path, prompt: "-x" });
  assert.deepEqual(geminiArgs(base), [
    "--prompt=-x",
    "--output-format",
    "stream-json",
    "--approval-mode",
    "yolo",
    "--model",
    "gemini-2.5-pro",
    "--debug",
  ]);
  assert.deepEqual(
    geminiArgs({ ...base, approval: "ask", resume: { sessionId: "s", nativeSessionId: SESSION } })
      .slice(3, 9),
    ["--approval-mode", "default", "--model", "gemini-2.5-pro", "--resume", SESSION],
  );
});

Deno.test("gemini driver start() maps a turn with a tool call to events and estimates its cost", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: { type: "init", session_id: SESSION, model: "gemini-test" } },
    { out: { type: "message", role: "user", content: "run it" } },
    {
      out: {
        type: "tool_use",
        tool_name: "run_shell_command",
        tool_id: "run_shell_command_1",
        parameters: { command: "echo done" },
      },
    },
    {
      out: {
        type: "tool_result",
        tool_id: "run_shell_command_1",
        status: "success",
        output: "done",
      },
    },
    { out: { type: "message", role: "assistant", content: "All ", delta: true } },
    { out: { type: "message", role: "assistant", content: "done.", delta: true } },
    { out: { type: "result", status: "success", stats } },
  ], { prompt: "run it" });
  assert.deepEqual(result, { status: "completed", reason: null, result: "All done.", exitCode: 0 });
  assert.deepEqual(sink.plain(), [
    { type: "message.completed", payload: { role: "user", text: "run it" } },
    {
      type: "session.linked",
      payload: { nativeSessionId: SESSION, agent: { model: "gemini-test" } },
    },
    {
      type: "tool.started",
      payload: {
        callId: "run_shell_command_1",
        tool: "run_shell_command",
        args: { command: "echo done" },
      },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "run_shell_command_1",
        ok: true,
        result: "done",
        startedAt: "<time>",
        finishedAt: "<time>",
      },
    },
    { type: "message.delta", payload: { role: "assistant", text: "All " } },
    { type: "message.delta", payload: { role: "assistant", text: "done." } },
    { type: "message.completed", payload: { role: "assistant", text: "All done." } },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 60,
        outputTokens: 10,
        cacheReadTokens: 20,
        cacheWriteTokens: null,
        reasoningTokens: null,
        // (40 × $1 + 20 × $0.25 + 10 × $4) / 1M
        costUsd: 0.000085,
        requests: null,
        costEstimated: true,
      },
    },
  ]);
});

Deno.test("gemini driver start() fails from the result line, not from the HTTP-status exit code", async () => {
  await using dir = await scratchDir();
  const message =
    '[API Error: {"error":{"code":401,"message":"bad key","status":"UNAUTHENTICATED"}}]';
  const { result } = await runFake(dir.path, [
    { out: { type: "init", session_id: SESSION, model: "gemini-test" } },
    { err: "Error when talking to Gemini API" },
    { out: { type: "result", status: "error", error: { type: "unknown", message }, stats } },
    { exit: 145 },
  ]);
  assert.deepEqual(result, {
    status: "failed",
    reason: `Gemini CLI failed: ${message}`,
    result: null,
    exitCode: 145,
  });
});

Deno.test("gemini driver start() explains a known exit code when no result line came", async () => {
  await using dir = await scratchDir();
  const { result } = await runFake(dir.path, [
    { err: "Gemini CLI is not running in a trusted directory." },
    { exit: 55 },
  ]);
  assert.equal(result.status, "failed");
  assert.equal(
    result.reason,
    "Gemini CLI exited with code 55: the working directory is not a trusted folder " +
      "(GEMINI_CLI_TRUST_WORKSPACE=true or --skip-trust); it said: " +
      "Gemini CLI is not running in a trusted directory.",
  );
});

Deno.test("gemini driver start() returns interrupted after a signal although Gemini CLI exits 0", async () => {
  await using dir = await scratchDir();
  const fake = await writeFakeCli(dir.path, {
    steps: [{ out: { type: "init", session_id: SESSION, model: "gemini-test" } }, { hang: true }],
    onSigint: [{ exit: 0 }],
  });
  const settings = testSettings(dir.path, { gemini: { program: fake.program } });
  const controller = new AbortController();
  const sink = new MemorySink();
  const pending = createGeminiDriver().start(
    driverInput({ harness: "gemini", settings, cwd: dir.path, env: fake.env }),
    sink,
    controller.signal,
  );
  while (sink.ofType("session.linked").length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  controller.abort();
  const result = await pending;
  assert.deepEqual({ status: result.status, exitCode: result.exitCode }, {
    status: "interrupted",
    exitCode: 0,
  });
});

// A line whose fields are not what reins acts on is refused whole, by its wire schema, instead of
// being read in part (the str/num/obj helpers took a mistyped field as absent and went on).
Deno.test("gemini driver start() keeps a line that fails its wire schema as a problem and reads none of it", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: { type: "init", session_id: SESSION, model: "gemini-test" } },
    { out: { type: "tool_use", tool_name: "ls", tool_id: 3, parameters: {} } },
    { out: { type: "message", role: "assistant", content: "Done." } },
    { out: { type: "result", status: "success", stats } },
    { exit: 0 },
  ]);
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload.reason), [
    "Gemini CLI wrote a tool_use line reins cannot read (Invalid input: expected string, received number at tool_id); it was skipped",
  ]);
  assert.deepEqual(sink.ofType("tool.started"), [], "nothing of the refused line was used");
  assert.equal(result.status, "completed");
  assert.equal(result.result, "Done.");
});
