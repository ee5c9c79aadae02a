// The codex driver against a scripted stand-in printing lines recorded from Codex 0.171.0; the
// real CLI is driven in tests/interop/codex_test.ts.
import assert from "node:assert/strict";
import {
  codexArgs,
  codexModel,
  createCodexDriver,
  earlierThreadTotals,
} from "../../lib/drivers/codex.ts";
import type { DriverInput } from "../../lib/drivers/driver.ts";
import type { EventInput } from "../../lib/store/contracts.ts";
import { type Step, writeFakeCli } from "./_fake_cli.ts";
import { driverInput, MemorySink, scratchDir, testSettings } from "./_helpers.ts";

const THREAD = "01a227be-1e94-7e03-9e6f-b684a4c305c4";
const PRICE = { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 10 };

const command = (status: string, exitCode: number | null, output: string) => ({
  id: "item_0",
  type: "command_execution",
  command: "/bin/bash -lc 'echo done'",
  aggregated_output: output,
  exit_code: exitCode,
  status,
});
const turnCompleted = (input: number, cached: number, output: number) => ({
  type: "turn.completed",
  usage: {
    input_tokens: input,
    cached_input_tokens: cached,
    cache_write_input_tokens: 0,
    output_tokens: output,
    reasoning_output_tokens: 0,
  },
});

async function runFake(dir: string, steps: Step[], fields: Partial<DriverInput> = {}) {
  const fake = await writeFakeCli(dir, { steps });
  const settings = testSettings(dir, { codex: { program: fake.program, model: "gpt-test" } }, {
    "gpt-test": PRICE,
  });
  const sink = new MemorySink();
  const result = await createCodexDriver().start(
    driverInput({ harness: "codex", settings, cwd: dir, env: fake.env, ...fields }),
    sink,
    new AbortController().signal,
  );
  return { result, sink, recorded: await fake.recorded() };
}

Deno.test("codexArgs() starts a thread with exec and continues one with exec resume", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, { codex: { args: ["--ephemeral"] } });
  const base = driverInput({ harness: "codex", settings, cwd: dir.path });
  assert.deepEqual(codexArgs(base), [
    "exec",
    "--json",
    "--skip-git-repo-check",
    "-c",
    'sandbox_mode="workspace-write"',
    "-c",
    'approval_policy="never"',
    "--ephemeral",
    "-",
  ]);
  assert.deepEqual(
    codexArgs({ ...base, approval: "deny", resume: { sessionId: "s", nativeSessionId: THREAD } }),
    [
      "exec",
      "resume",
      "--json",
      "--skip-git-repo-check",
      "-c",
      'sandbox_mode="read-only"',
      "-c",
      'approval_policy="never"',
      "--ephemeral",
      THREAD,
      "-",
    ],
  );
});

Deno.test("codexModel() takes the configured model, else one named in the extra arguments", async () => {
  await using dir = await scratchDir();
  const model = (codex: { model?: string; args: string[] }) =>
    codexModel(driverInput({ settings: testSettings(dir.path, { codex }), cwd: dir.path }));
  assert.equal(model({ model: "gpt-a", args: ["-m", "gpt-b"] }), "gpt-a");
  assert.equal(model({ args: ["-m", "gpt-b"] }), "gpt-b");
  assert.equal(model({ args: ["--model=gpt-c"] }), "gpt-c");
  assert.equal(model({ args: ["-c", 'model="gpt-d"'] }), "gpt-d");
  assert.equal(model({ args: [] }), null);
});

Deno.test("codex driver start() maps a turn with a command to events and estimates its cost", async () => {
  await using dir = await scratchDir();
  const { result, sink, recorded } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    { out: { type: "turn.started" } },
    { out: { type: "item.started", item: command("in_progress", null, "") } },
    { out: { type: "item.completed", item: command("completed", 0, "done\n") } },
    { out: { type: "item.completed", item: { id: "item_1", type: "reasoning", text: "hm" } } },
    {
      out: {
        type: "item.completed",
        item: { id: "item_2", type: "agent_message", text: "All done." },
      },
    },
    { out: turnCompleted(2000, 400, 100) },
  ], { prompt: "-starts with a dash" });
  assert.deepEqual(result, { status: "completed", reason: null, result: "All done.", exitCode: 0 });
  // (1600 × $2 + 400 × $0.5 + 100 × $10) / 1M
  const cost = (1600 * 2 + 400 * 0.5 + 100 * 10) / 1e6;
  assert.deepEqual(sink.plain(), [
    { type: "message.completed", payload: { role: "user", text: "-starts with a dash" } },
    { type: "session.linked", payload: { nativeSessionId: THREAD } },
    {
      type: "tool.started",
      payload: {
        callId: "item_0",
        tool: "command_execution",
        args: { command: "/bin/bash -lc 'echo done'" },
      },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "item_0",
        ok: true,
        result: "done\n",
        startedAt: "<time>",
        finishedAt: "<time>",
      },
    },
    { type: "message.completed", payload: { role: "assistant", text: "All done." } },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 2000,
        outputTokens: 100,
        cacheReadTokens: 400,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        costUsd: cost,
        requests: null,
        costEstimated: true,
      },
    },
  ]);
  // The prompt went in on stdin, never as an argument a dash could turn into a flag.
  assert.deepEqual(recorded.stdin, ["-starts with a dash"]);
  assert.equal(recorded.argv.at(-1), "-");
});

Deno.test("codex driver start() counts only this run's share of the thread's usage on resume", async () => {
  await using dir = await scratchDir();
  const history: EventInput[] = [{
    type: "usage.updated",
    payload: {
      inputTokens: 2000,
      outputTokens: 100,
      cacheReadTokens: 400,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: 0.0044,
      requests: null,
    },
    native: turnCompleted(2000, 400, 100),
  }];
  assert.deepEqual(earlierThreadTotals(history), {
    input: 2000,
    cached: 400,
    output: 100,
    reasoning: 0,
  });
  const { sink, recorded } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    {
      out: {
        type: "item.completed",
        item: { id: "item_0", type: "agent_message", text: "Again." },
      },
    },
    { out: turnCompleted(3000, 600, 150) },
  ], { resume: { sessionId: "s", nativeSessionId: THREAD }, history });
  const usage = sink.ofType("usage.updated")[0].payload;
  assert.deepEqual(
    { input: usage.inputTokens, cached: usage.cacheReadTokens, output: usage.outputTokens },
    { input: 1000, cached: 200, output: 50 },
  );
  assert.deepEqual(sink.ofType("problem"), []);
  assert.deepEqual(recorded.argv.slice(0, 2), ["exec", "resume"]);
});

Deno.test("codex driver start() says so when a resumed thread's earlier usage is unknown", async () => {
  await using dir = await scratchDir();
  const { sink } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    { out: turnCompleted(3000, 600, 150) },
  ], { resume: { sessionId: "s", nativeSessionId: THREAD } });
  assert.equal(sink.ofType("usage.updated")[0].payload.inputTokens, 3000);
  assert.match(sink.ofType("problem")[0].payload.reason, /whole thread's usage/);
});

Deno.test("codex driver start() fails with the message of turn.failed", async () => {
  await using dir = await scratchDir();
  const message =
    "unexpected status 401 Unauthorized: bad key, url: http://127.0.0.1:1/v1/responses";
  const { result, sink } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    { out: { type: "turn.started" } },
    { out: { type: "error", message } },
    { out: { type: "turn.failed", error: { message } } },
    { exit: 1 },
  ]);
  assert.deepEqual(result, {
    status: "failed",
    reason: `Codex failed: ${message}`,
    result: null,
    exitCode: 1,
  });
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload.reason), [
    `Codex reports: ${message}`,
  ]);
});

Deno.test("codex driver start() records a failed command as a failed tool call", async () => {
  await using dir = await scratchDir();
  const { sink } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    // Only completed, never started: the driver still records both ends.
    { out: { type: "item.completed", item: command("failed", 2, "no such file\n") } },
    { out: turnCompleted(10, 0, 1) },
  ]);
  assert.deepEqual(sink.plain().filter((event) => event.type.startsWith("tool.")), [
    {
      type: "tool.started",
      payload: {
        callId: "item_0",
        tool: "command_execution",
        args: { command: "/bin/bash -lc 'echo done'" },
      },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "item_0",
        ok: false,
        error: "exit code 2: no such file\n",
        startedAt: "<time>",
        finishedAt: "<time>",
      },
    },
  ]);
});

Deno.test("codex driver start() says --approve ask cannot be forwarded and runs read-only", async () => {
  await using dir = await scratchDir();
  const { sink, recorded } = await runFake(dir.path, [
    { readAll: true },
    { out: { type: "thread.started", thread_id: THREAD } },
    { out: turnCompleted(10, 0, 1) },
  ], { approval: "ask" });
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload), [{
    source: "codex",
    reason: "Codex cannot ask reins before a tool runs: --approve ask runs it in the read-only " +
      "sandbox, as --approve deny does",
  }]);
  assert.ok(recorded.argv.includes('sandbox_mode="read-only"'));
});

// A line whose fields are not what reins acts on is refused whole, by its wire schema, instead of
// being read in part (the str/num/obj helpers took a mistyped field as absent and went on).
Deno.test("codex driver start() keeps a line that fails its wire schema as a problem and reads none of it", async () => {
  await using dir = await scratchDir();
  const { result, sink } = await runFake(dir.path, [
    { out: { type: "thread.started", thread_id: THREAD } },
    { out: { type: "item.completed", item: { ...command("completed", 0, "x"), exit_code: "0" } } },
    { out: { type: "item.completed", item: { id: "item_2", type: "agent_message", text: "Ok." } } },
    { out: turnCompleted(10, 0, 2) },
    { exit: 0 },
  ]);
  assert.deepEqual(sink.ofType("problem").map((event) => event.payload.reason), [
    "Codex wrote an item.completed line reins cannot read (Invalid input: expected number, received string at item.exit_code); it was skipped",
  ]);
  assert.deepEqual(sink.ofType("tool.started"), [], "nothing of the refused line was used");
  assert.equal(result.status, "completed");
  assert.equal(result.result, "Ok.");
});
