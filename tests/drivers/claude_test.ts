// The claude driver against a scripted stand-in that prints lines recorded from Claude Code
// 2.1.328 and speaks its stdin protocol; the real CLI is driven in tests/interop/claude_test.ts.
import { cycleThrough, moduleGraph } from "../support/module_graph.ts";
import assert from "node:assert/strict";
import { claudeArgs, createClaudeDriver } from "../../lib/drivers/claude.ts";
import type { Decision } from "../../lib/drivers/driver.ts";
import { type Step, writeFakeCli } from "./_fake_cli.ts";
import { driverInput, fakeDecisions, MemorySink, scratchDir, testSettings } from "./_helpers.ts";

const SESSION = "0190a0b0-0000-7000-8000-00000000abcd";

const init = {
  type: "system",
  subtype: "init",
  cwd: "/work",
  session_id: SESSION,
  tools: ["Bash", "Read"],
  model: "claude-sonnet-4-5",
  permissionMode: "default",
  claude_code_version: "2.1.328",
};
const assistant = (content: unknown[], id = "msg_1") => ({
  type: "assistant",
  message: { id, type: "message", role: "assistant", model: "claude-sonnet-4-5", content },
  parent_tool_use_id: null,
  session_id: SESSION,
});
const toolUse = assistant([{
  type: "tool_use",
  id: "toolu_1",
  name: "Bash",
  input: { command: "echo done", description: "say done" },
}]);
const toolResult = (content: string, isError = false) => ({
  type: "user",
  message: {
    role: "user",
    content: [{ tool_use_id: "toolu_1", type: "tool_result", content, is_error: isError }],
  },
  session_id: SESSION,
});
const resultLine = (fields: Record<string, unknown> = {}) => ({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "All done.",
  session_id: SESSION,
  num_turns: 2,
  total_cost_usd: 0.000376,
  usage: {
    input_tokens: 24,
    cache_creation_input_tokens: 5,
    cache_read_input_tokens: 100,
    output_tokens: 14,
    output_tokens_details: { thinking_tokens: 0 },
  },
  permission_denials: [],
  terminal_reason: "completed",
  ...fields,
});
const canUseTool = {
  type: "control_request",
  request_id: "req-1",
  request: {
    subtype: "can_use_tool",
    tool_name: "Bash",
    input: { command: "echo done", description: "say done" },
    tool_use_id: "toolu_1",
  },
};

async function runFake(
  dir: string,
  steps: Step[],
  fields: Partial<Parameters<typeof driverInput>[0]> = {},
  options: { onSigint?: "ignore" | Step[] } = {},
) {
  const fake = await writeFakeCli(dir, { steps, ...options });
  const settings = testSettings(dir, { claude: { program: fake.program } });
  const sink = new MemorySink();
  const input = driverInput({ settings, cwd: dir, env: fake.env, sessionId: SESSION, ...fields });
  const result = await createClaudeDriver().start(input, sink, new AbortController().signal);
  return { result, sink, recorded: await fake.recorded() };
}

Deno.test("claudeArgs() passes a new session's id with --session-id and later ones with --resume", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, {
    claude: { args: ["--max-turns", "3"], model: "opus" },
  });
  const base = driverInput({ settings, cwd: dir.path, sessionId: SESSION });
  const common = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
  ];
  assert.deepEqual(claudeArgs(base), [
    ...common,
    "--session-id",
    SESSION,
    "--permission-mode",
    "acceptEdits",
    "--permission-prompt-tool",
    "stdio",
    "--model",
    "opus",
    "--max-turns",
    "3",
  ]);
  assert.deepEqual(
    claudeArgs({
      ...base,
      approval: "ask",
      resume: { sessionId: SESSION, nativeSessionId: "n-1" },
    }),
    [
      ...common,
      "--resume",
      "n-1",
      "--permission-prompt-tool",
      "stdio",
      "--model",
      "opus",
      "--max-turns",
      "3",
    ],
  );
  // Never confirmed by Claude Code: started again under the same id.
  assert.deepEqual(
    claudeArgs({ ...base, approval: "deny", resume: { sessionId: "s-0", nativeSessionId: null } })
      .slice(6, 10),
    ["--session-id", "s-0", "--permission-prompt-tool", "stdio"],
  );
});

Deno.test("claude driver start() maps a turn with a tool call to events", async () => {
  await using dir = await scratchDir();
  const { result, sink, recorded } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: toolUse },
    { out: toolResult("done") },
    { out: assistant([{ type: "text", text: "All done." }], "msg_2") },
    { out: resultLine() },
    { readAll: true },
  ], { prompt: "run it" });
  assert.deepEqual(result, { status: "completed", reason: null, result: "All done.", exitCode: 0 });
  assert.deepEqual(sink.plain(), [
    { type: "message.completed", payload: { role: "user", text: "run it" } },
    {
      type: "session.linked",
      payload: {
        nativeSessionId: SESSION,
        agent: { model: "claude-sonnet-4-5", version: "2.1.328" },
      },
    },
    {
      type: "tool.started",
      payload: {
        callId: "toolu_1",
        tool: "Bash",
        args: { command: "echo done", description: "say done" },
        modelCall: { id: "msg_1", model: "claude-sonnet-4-5" },
      },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "toolu_1",
        ok: true,
        result: "done",
        startedAt: "<time>",
        finishedAt: "<time>",
      },
    },
    {
      type: "message.completed",
      payload: {
        role: "assistant",
        text: "All done.",
        modelCall: { id: "msg_2", model: "claude-sonnet-4-5" },
      },
    },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 24,
        outputTokens: 14,
        cacheReadTokens: 100,
        cacheWriteTokens: 5,
        reasoningTokens: 0,
        costUsd: 0.000376,
        requests: 2,
      },
    },
  ]);
  // The prompt went in as a stream-json user message, and stdin was closed after the result.
  assert.deepEqual(recorded.stdin, [
    JSON.stringify({ type: "user", message: { role: "user", content: "run it" } }),
    "",
  ]);
  assert.deepEqual(sink.events[1].native, init);
});

Deno.test("claude driver start() denies a tool under --approve deny and records the decision", async () => {
  await using dir = await scratchDir();
  const { result, sink, recorded } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: toolUse },
    { out: canUseTool },
    { readLine: true },
    {
      ifRead: '"behavior":"deny"',
      then: [{ out: toolResult("Denied by policy: --approve deny", true) }],
      else: [{ out: toolResult("done") }],
    },
    { out: resultLine({ result: "I could not." }) },
    { readAll: true },
  ], { approval: "deny" });
  assert.equal(result.status, "completed");
  assert.deepEqual(
    sink.plain().filter((event) =>
      event.type.startsWith("approval") || event.type === "tool.completed"
    ),
    [
      {
        type: "approval.requested",
        payload: {
          approvalId: "approval-1",
          tool: "Bash",
          args: { command: "echo done", description: "say done" },
          callId: "toolu_1",
        },
      },
      {
        type: "approval.resolved",
        payload: {
          approvalId: "approval-1",
          decision: "deny",
          by: "policy",
          reason: "--approve deny",
        },
      },
      {
        type: "tool.completed",
        payload: {
          callId: "toolu_1",
          ok: false,
          error: "Denied by policy: --approve deny",
          startedAt: "<time>",
          finishedAt: "<time>",
        },
      },
    ],
  );
  assert.deepEqual(JSON.parse(recorded.stdin[1]), {
    type: "control_response",
    response: {
      subtype: "success",
      request_id: "req-1",
      response: { behavior: "deny", message: "Denied by policy: --approve deny" },
    },
  });
});

Deno.test("claude driver start() waits for the decision under --approve ask, without an idle timeout", async () => {
  await using dir = await scratchDir();
  const { decisions, asked } = fakeDecisions(async (): Promise<Decision> => {
    // Longer than the idle timeout: waiting for a person is not a hung CLI.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    return { decision: "allow", by: "cli", reason: null };
  });
  const { result, sink, recorded } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: toolUse },
    { out: canUseTool },
    { readLine: true },
    {
      ifRead: '"behavior":"allow"',
      then: [{ out: toolResult("done") }],
      else: [{ out: toolResult("denied", true) }],
    },
    { out: resultLine() },
    { readAll: true },
  ], { approval: "ask", decisions, idleTimeoutSeconds: 1 });
  assert.equal(result.status, "completed");
  assert.deepEqual(asked, ["approval-1"]);
  // Resolved by `reins approve` in the run's log, so the driver writes no approval.resolved.
  assert.deepEqual(sink.ofType("approval.resolved"), []);
  assert.deepEqual(sink.ofType("tool.completed")[0].payload.ok, true);
  assert.deepEqual(JSON.parse(recorded.stdin[1]).response.response, {
    behavior: "allow",
    updatedInput: { command: "echo done", description: "say done" },
  });
});

Deno.test("claude driver start() records a tool Claude Code's own permission mode denied", async () => {
  await using dir = await scratchDir();
  const { sink } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: toolUse },
    {
      out: {
        type: "system",
        subtype: "permission_denied",
        tool_name: "Bash",
        tool_use_id: "toolu_1",
        message: "Output redirection to '/etc/x' needs approval.",
      },
    },
    { out: toolResult("Output redirection to '/etc/x' needs approval.", true) },
    { out: resultLine() },
    { readAll: true },
  ]);
  assert.deepEqual(
    sink.plain().filter((event) => event.type.startsWith("approval")),
    [
      {
        type: "approval.requested",
        payload: { approvalId: "approval-1", tool: "Bash", args: null, callId: "toolu_1" },
      },
      {
        type: "approval.resolved",
        payload: {
          approvalId: "approval-1",
          decision: "deny",
          by: "claude-code",
          reason: "Output redirection to '/etc/x' needs approval.",
        },
      },
    ],
  );
});

Deno.test("claude driver start() fails with the result's text when Claude Code reports an API error", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    {
      out: {
        ...assistant([{ type: "text", text: "Failed to authenticate. API Error: 401 bad key" }]),
        is_api_error_message: true,
      },
    },
    {
      out: resultLine({
        is_error: true,
        result: "Failed to authenticate. API Error: 401 bad key",
        terminal_reason: "api_error",
        total_cost_usd: 0,
      }),
    },
    { readAll: true },
    { exit: 1 },
  ]);
  assert.deepEqual(result, {
    status: "failed",
    reason: "Claude Code failed (api_error): Failed to authenticate. API Error: 401 bad key",
    result: "Failed to authenticate. API Error: 401 bad key",
    exitCode: 1,
  });
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload), [{
    source: "claude",
    reason: "Claude Code reports: Failed to authenticate. API Error: 401 bad key",
  }]);
  assert.deepEqual(sink.ofType("message.completed").map((event) => event.payload.role), ["user"]);
});

Deno.test("claude driver start() fails with the exit code and stderr when no result line came", async () => {
  await using dir = await scratchDir();
  const { result } = await runFake(dir.path, [
    { err: "Error: Session ID 0190 is already in use." },
    { exit: 1 },
  ]);
  assert.deepEqual(result, {
    status: "failed",
    reason: "Claude Code exited with code 1: Error: Session ID 0190 is already in use.",
    result: null,
    exitCode: 1,
  });
});

Deno.test("claude driver start() returns interrupted when its signal aborts, although it exits 0", async () => {
  await using dir = await scratchDir();
  const fake = await writeFakeCli(dir.path, {
    steps: [{ out: init }, { readLine: true }, { hang: true }],
    // What Claude Code does on SIGINT: a user line, then exit 0.
    onSigint: [{
      out: {
        type: "user",
        message: {
          role: "user",
          content: [{ type: "text", text: "[Request interrupted by user]" }],
        },
      },
    }, { exit: 0 }],
  });
  const settings = testSettings(dir.path, { claude: { program: fake.program } });
  const controller = new AbortController();
  const sink = new MemorySink();
  const pending = createClaudeDriver().start(
    driverInput({ settings, cwd: dir.path, env: fake.env }),
    sink,
    controller.signal,
  );
  // Abort once Claude Code has said it is up.
  while (sink.ofType("session.linked").length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  controller.abort();
  const result = await pending;
  assert.equal(result.status, "interrupted");
  assert.equal(result.exitCode, 0);
  assert.match(
    result.reason ?? "",
    /^Claude Code was stopped \(it exited with code 0\); the last thing it said: /,
  );
});

Deno.test("claude driver start() fails naming Claude Code when the program is missing", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, { claude: { program: `${dir.path}/no-such-claude` } });
  const sink = new MemorySink();
  const result = await createClaudeDriver().start(
    driverInput({ settings, cwd: dir.path }),
    sink,
    new AbortController().signal,
  );
  assert.deepEqual(result, {
    status: "failed",
    reason: `Cannot start Claude Code: no program "${dir.path}/no-such-claude" on PATH: set ` +
      "drivers.claude.program in the config file or REINS_CLAUDE_BIN",
    result: null,
    exitCode: null,
  });
  // The user's message is kept with the run all the same.
  assert.deepEqual(sink.plain(), [{
    type: "message.completed",
    payload: { role: "user", text: "say hello" },
  }]);
});

// The user's message is recorded once the CLI has been started (while it starts up): a log that
// cannot take it must not leave the CLI running unrecorded.
Deno.test("claude driver start() kills the CLI it started when the run's log cannot be written", async () => {
  await using dir = await scratchDir();
  const program = `${dir.path}/claude`;
  await Deno.writeTextFile(program, "#!/bin/sh\nsleep 30\n");
  await Deno.chmod(program, 0o755);
  const settings = testSettings(dir.path, { claude: { program } });
  let pid = 0;
  const input = driverInput({ settings, cwd: dir.path, onProcess: (agent) => pid = agent.pid });
  const unwritable = {
    emit() {
      throw new Error("the run's log is unwritable");
    },
  };
  await assert.rejects(
    () => createClaudeDriver().start(input, unwritable, new AbortController().signal),
    /the run's log is unwritable/,
  );
  assert.ok(pid > 0, "the CLI was started");
  const alive = await new Deno.Command("kill", { args: ["-0", String(pid)], stderr: "null" })
    .output();
  assert.equal(alive.success, false, `the CLI (pid ${pid}) is still running`);
});

// The can_use_tool request Claude Code 2.1.328 sends for its AskUserQuestion tool (recorded).
const askUserQuestion = {
  type: "control_request",
  request_id: "req-ask",
  request: {
    subtype: "can_use_tool",
    tool_name: "AskUserQuestion",
    display_name: "AskUserQuestion",
    input: {
      questions: [{
        question: "Which colour should the button be?",
        header: "Colour",
        options: [{ label: "Red", description: "warm" }, { label: "Blue", description: "cool" }],
        multiSelect: false,
      }],
    },
    tool_use_id: "toolu_ask",
    requires_user_interaction: true,
  },
};

for (const approval of ["auto", "ask", "deny"] as const) {
  Deno.test(`claude driver start() turns AskUserQuestion into a question answered with reins answer (--approve ${approval})`, async () => {
    await using dir = await scratchDir();
    const asked: string[] = [];
    const decisions = {
      waitForApproval: () => Promise.reject(new Error("no approval expected")),
      async waitForAnswer(questionId: string) {
        asked.push(questionId);
        // Longer than the idle timeout: waiting for a person is not a hung CLI.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return "Blue, please";
      },
    };
    const { result, sink, recorded } = await runFake(dir.path, [
      { out: init },
      { readLine: true },
      { out: askUserQuestion },
      { readLine: true },
      { out: resultLine() },
      { readAll: true },
    ], { approval, decisions, idleTimeoutSeconds: 1 });
    assert.equal(result.status, "completed", result.reason ?? "");
    assert.deepEqual(asked, ["question-1"]);
    assert.deepEqual(sink.ofType("question.requested").map((e) => e.payload), [{
      questionId: "question-1",
      text: "Which colour should the button be? (Red: warm · Blue: cool)",
      header: "Colour",
      options: ["Red", "Blue"],
      multiSelect: false,
    }]);
    assert.deepEqual(sink.ofType("approval.requested"), [], "a question is not an approval");
    assert.deepEqual(JSON.parse(recorded.stdin[1]), {
      type: "control_response",
      response: {
        subtype: "success",
        request_id: "req-ask",
        response: {
          behavior: "allow",
          updatedInput: {
            ...askUserQuestion.request.input,
            answers: { "Which colour should the button be?": "Blue, please" },
          },
        },
      },
    });
    assert.ok(recorded.argv.includes("--permission-prompt-tool"));
  });
}

Deno.test("claude driver start() under --approve auto refuses what acceptEdits asks about, as that mode would", async () => {
  await using dir = await scratchDir();
  const outside = {
    ...canUseTool,
    request: {
      ...canUseTool.request,
      tool_name: "Write",
      input: { file_path: "/etc/x", content: "x" },
      decision_reason: "Path is outside allowed working directories",
    },
  };
  const { result, sink, recorded } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: outside },
    { readLine: true },
    { out: resultLine() },
    { readAll: true },
  ], { approval: "auto" });
  assert.equal(result.status, "completed");
  const reason =
    "--approve auto runs Claude Code in acceptEdits mode, which asks before this (Path is outside allowed working directories)";
  assert.deepEqual(sink.ofType("approval.resolved").map((e) => e.payload), [{
    approvalId: "approval-1",
    decision: "deny",
    by: "policy",
    reason,
  }]);
  assert.deepEqual(JSON.parse(recorded.stdin[1]).response.response, {
    behavior: "deny",
    message: `Denied by policy: ${reason}`,
  });
});

// A line whose fields are not what reins acts on is refused whole, by its wire schema, instead of
// being read in part (the str/num/obj helpers took a mistyped field as absent and went on).
Deno.test("claude driver start() keeps a line that fails its wire schema as a problem and reads none of it", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    { out: assistant([{ type: "tool_use", id: 7, name: "Bash", input: { command: "ls" } }]) },
    { out: assistant([{ type: "text", text: "Done." }], "msg_2") },
    { out: resultLine({ total_cost_usd: -1 }) },
    { out: resultLine({ result: "Done." }) },
    { readAll: true },
  ]);
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload.reason), [
    "Claude Code wrote an assistant line reins cannot read (Invalid input at message.content); it was skipped",
    "Claude Code wrote a result line reins cannot read (Too small: expected number to be >=0 at total_cost_usd); it was skipped",
  ]);
  assert.deepEqual(sink.ofType("tool.started"), [], "nothing of the refused line was used");
  assert.equal(result.status, "completed");
  assert.equal(result.result, "Done.");
});

// regression: claude_turn.ts, which claude.ts loads lazily, took its names from claude.ts: a circle
Deno.test("lib/drivers/claude.ts and claude_turn.ts import each other in one direction only (types included)", async () => {
  for (const file of ["lib/drivers/claude.ts", "lib/drivers/claude_turn.ts"]) {
    assert.equal(cycleThrough(await moduleGraph(file), file), null);
  }
});

Deno.test("claude driver start() names each API message's model call, its usage in reins's names, on the events it produced", async () => {
  await using dir = await scratchDir();
  const withUsage = (line: ReturnType<typeof assistant>, usage: unknown, stopReason: unknown) => ({
    ...line,
    message: { ...line.message, usage, stop_reason: stopReason },
  });
  const { sink } = await runFake(dir.path, [
    { out: init },
    { readLine: true },
    {
      out: withUsage(
        assistant([{ type: "text", text: "Let me look." }]),
        // Not a whole count: left out of the call's usage rather than recorded
        { input_tokens: 12, cache_read_input_tokens: 100, output_tokens: 0.5 },
        null,
      ),
    },
    {
      out: withUsage(toolUse, {
        input_tokens: 12,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 5,
        output_tokens: 7,
      }, "tool_use"),
    },
    { out: toolResult("done") },
    {
      out: {
        ...assistant([{ type: "text", text: "API Error: 529 overloaded" }], "msg_err"),
        is_api_error_message: true,
      },
    },
    { out: resultLine() },
    { readAll: true },
  ]);
  const calls = sink.events.flatMap((event) =>
    event.type === "message.completed" || event.type === "tool.started"
      ? [[event.type, event.payload.modelCall ?? null]]
      : []
  );
  assert.deepEqual(calls, [
    ["message.completed", null],
    ["message.completed", {
      id: "msg_1",
      model: "claude-sonnet-4-5",
      stopReason: null,
      usage: { inputTokens: 12, cacheReadTokens: 100 },
    }],
    ["tool.started", {
      id: "msg_1",
      model: "claude-sonnet-4-5",
      stopReason: "tool_use",
      usage: { inputTokens: 12, outputTokens: 7, cacheReadTokens: 100, cacheWriteTokens: 5 },
    }],
  ]);
  // The API error is a problem, never a model call.
  assert.equal(sink.ofType("problem").length, 1);
  assert.equal(sink.ofType("problem")[0].payload.modelCall, undefined);
});

Deno.test("the claude driver's agent facts: provider anthropic, input counted without the cache, the configured model", async () => {
  await using dir = await scratchDir();
  const agent = { kind: "harness", driver: "claude", idleTimeoutSeconds: null } as const;
  const driver = createClaudeDriver();
  assert.deepEqual(driver.agentFacts?.({ agent, settings: testSettings(dir.path) }), {
    provider: "anthropic",
    inputExcludesCache: true,
    inProcess: false,
  });
  const settings = testSettings(dir.path, { claude: { model: "opus" } });
  assert.deepEqual(driver.agentFacts?.({ agent, settings }), {
    provider: "anthropic",
    model: "opus",
    inputExcludesCache: true,
    inProcess: false,
  });
});
