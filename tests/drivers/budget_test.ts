// --max-turns, --max-tokens and --max-usd with the harness drivers, against scripted stand-ins of
// the CLIs: each limit is passed to the CLI that has a flag for it, watched live where the CLI
// reports usage as it goes (and the CLI stopped once it is crossed), checked at the end where it
// reports usage only then — and what cannot be enforced is said before the turn, never ignored.
import assert from "node:assert/strict";
import { claudeArgs, createClaudeDriver } from "../../lib/drivers/claude.ts";
import { createCodexDriver } from "../../lib/drivers/codex.ts";
import type { Budget, DriverInput } from "../../lib/drivers/driver.ts";
import { createGeminiDriver } from "../../lib/drivers/gemini.ts";
import { createOpencodeDriver } from "../../lib/drivers/opencode.ts";
import { type Step, writeFakeCli } from "./_fake_cli.ts";
import { driverInput, MemorySink, scratchDir, testSettings } from "./_helpers.ts";

const OPENCODE_SESSION = "ses_dd83ffcaffferPCP4OFQD0I2Af";
const opencodeLine = (type: string, part: Record<string, unknown>) => ({
  type,
  timestamp: 1795963229368,
  sessionID: OPENCODE_SESSION,
  part: { sessionID: OPENCODE_SESSION, messageID: "msg_1", ...part },
});
const stepStart = opencodeLine("step_start", { type: "step-start" });
const stepFinish = (cost: number) =>
  opencodeLine("step_finish", {
    type: "step-finish",
    reason: "tool-calls",
    tokens: { total: 46, input: 40, output: 6, reasoning: 0, cache: { write: 0, read: 0 } },
    cost,
  });

// regression: --max-usd (like --max-turns and --max-tokens) was silently ignored by every
// harness driver.
Deno.test("opencode driver start() stops opencode once the cost it reports crosses --max-usd", async () => {
  await using dir = await scratchDir();
  // Step after step, each costing a cent, until it is stopped (it never ends by itself).
  const steps: Step[] = [{ out: stepStart }];
  for (let i = 0; i < 10; i++) steps.push({ out: stepFinish(0.01) }, { sleepMs: 50 });
  steps.push({ hang: true });
  const fake = await writeFakeCli(dir.path, { steps });
  const settings = testSettings(dir.path, { opencode: { program: fake.program } });
  const sink = new MemorySink();
  const input = driverInput({
    harness: "opencode",
    settings,
    cwd: dir.path,
    env: fake.env,
    budget: { maxUsd: 0.025 },
  });
  assert.deepEqual(createOpencodeDriver().budgetNotes?.(input), []);
  const result = await createOpencodeDriver().start(input, sink, new AbortController().signal);
  assert.equal(result.status, "failed");
  assert.equal(
    result.reason,
    "budget exhausted: --max-usd 0.025 ($0.03 of $0.025)",
  );
  assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
    { ratio: 0.8, limit: "usd" },
    { ratio: 1.2, limit: "usd" },
  ]);
  assert.equal(sink.ofType("usage.updated").length, 3, "stopped at the step that crossed it");
});

Deno.test("claudeArgs() passes --max-turns and --max-usd to Claude Code's own flags", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path);
  const input = driverInput({ settings, cwd: dir.path, budget: { maxTurns: 3, maxUsd: 0.5 } });
  const args = claudeArgs(input);
  assert.deepEqual(args.slice(args.indexOf("--max-turns"), args.indexOf("--max-turns") + 4), [
    "--max-turns",
    "3",
    "--max-budget-usd",
    "0.5",
  ]);
  assert.deepEqual(createClaudeDriver().budgetNotes?.(input), []);
});

const CLAUDE_SESSION = "0190a0b0-0000-7000-8000-00000000abcd";
const claudeInit = { type: "system", subtype: "init", session_id: CLAUDE_SESSION, tools: [] };
const claudeMessage = (id: string, input: number, output: number) => ({
  type: "assistant",
  message: {
    id,
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [{ type: "text", text: `message ${id}` }],
    usage: { input_tokens: input, output_tokens: output },
  },
  parent_tool_use_id: null,
  session_id: CLAUDE_SESSION,
});

async function runClaude(dir: string, steps: Step[], budget: Budget) {
  const fake = await writeFakeCli(dir, { steps });
  const settings = testSettings(dir, { claude: { program: fake.program } });
  const sink = new MemorySink();
  const input = driverInput({ settings, cwd: dir, env: fake.env, budget });
  const result = await createClaudeDriver().start(input, sink, new AbortController().signal);
  return { result, sink };
}

Deno.test("claude driver start() says budget exhausted when Claude Code stops at its --max-turns", async () => {
  await using dir = await scratchDir();
  const { result } = await runClaude(dir.path, [
    { out: claudeInit },
    { readLine: true },
    { out: claudeMessage("msg_1", 10, 5) },
    {
      out: {
        type: "result",
        subtype: "error_max_turns",
        is_error: true,
        session_id: CLAUDE_SESSION,
        num_turns: 2,
        total_cost_usd: 0.001,
        usage: { input_tokens: 10, output_tokens: 5 },
      },
    },
    { readAll: true },
  ], { maxTurns: 1 });
  assert.equal(result.status, "failed");
  assert.equal(
    result.reason,
    "budget exhausted: Claude Code stopped at --max-turns 1 (error_max_turns)",
  );
});

Deno.test("claude driver start() counts tokens as Claude Code streams its messages and stops it at --max-tokens", async () => {
  await using dir = await scratchDir();
  const steps: Step[] = [{ out: claudeInit }, { readLine: true }];
  for (let i = 1; i <= 10; i++) {
    steps.push({ out: claudeMessage(`msg_${i}`, 100, 1) }, { sleepMs: 50 });
  }
  steps.push({ hang: true });
  const { result, sink } = await runClaude(dir.path, steps, { maxTokens: 250 });
  assert.equal(result.status, "failed");
  assert.equal(
    result.reason,
    "budget exhausted: --max-tokens 250 (303 of 250 tokens)",
  );
  assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload.limit), ["tokens", "tokens"]);
});

const turnCompleted = (input: number, output: number) => ({
  type: "turn.completed",
  usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output },
});

Deno.test("codex driver: the budget is said to be unenforceable before the turn, and checked when it ends", async () => {
  await using dir = await scratchDir();
  const fake = await writeFakeCli(dir.path, {
    steps: [
      { readAll: true },
      { out: { type: "thread.started", thread_id: "01a227be-1e94-7e03-9e6f-b684a4c305c4" } },
      { out: { type: "turn.started" } },
      { out: { type: "item.completed", item: { id: "i", type: "agent_message", text: "Done." } } },
      { out: turnCompleted(2_000_000, 100_000) },
    ],
  });
  const settings = testSettings(
    dir.path,
    { codex: { program: fake.program, model: "gpt-test" } },
    { "gpt-test": { inputPerMillion: 1, outputPerMillion: 10 } },
  );
  const input: DriverInput = driverInput({
    harness: "codex",
    settings,
    cwd: dir.path,
    env: fake.env,
    budget: { maxTurns: 2, maxUsd: 1 },
  });
  assert.deepEqual(createCodexDriver().budgetNotes?.(input), [
    "Codex reports its usage only when its turn ends: --max-usd cannot stop it; the usage is " +
    "checked then and a budget.warning recorded if it went over",
    "Codex does not report what --max-turns limits: it cannot be enforced",
  ]);
  const sink = new MemorySink();
  const result = await createCodexDriver().start(input, sink, new AbortController().signal);
  // $2 of input and $1 of output: over the dollar, recorded, though nothing could stop it.
  assert.equal(result.status, "completed");
  assert.equal(result.reason, "went over its budget: --max-usd 1: $3 used");
  assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
    { ratio: 3, limit: "usd" },
  ]);
});

Deno.test("gemini driver says before the turn that --max-tokens is only checked at the end", async () => {
  await using dir = await scratchDir();
  const input = driverInput({
    harness: "gemini",
    settings: testSettings(dir.path),
    cwd: dir.path,
    budget: { maxTokens: 10 },
  });
  assert.deepEqual(createGeminiDriver().budgetNotes?.(input), [
    "Gemini CLI reports its usage only when its turn ends: --max-tokens cannot stop it; the " +
    "usage is checked then and a budget.warning recorded if it went over",
  ]);
});
