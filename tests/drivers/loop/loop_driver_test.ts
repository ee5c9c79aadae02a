import assert from "node:assert/strict";
import { createLoopDriver } from "../../../lib/drivers/loop/loop_driver.ts";
import type { LoopHooks, ModelCall } from "../../../lib/drivers/loop/hooks.ts";
import type { Message, Model } from "../../../lib/model/model.ts";
import { driverInput, fakeDecisions, MemorySink, withTempDir, writeScript } from "./_helpers.ts";

const neverAborted = () => new AbortController().signal;

/** Keeps what the model was sent on each call. */
function captureCalls(): { hooks: LoopHooks; calls: ModelCall[] } {
  const calls: ModelCall[] = [];
  return { hooks: { beforeModel: (call) => void calls.push(call) }, calls };
}

function lastToolMessage(history: readonly Message[]): Extract<Message, { role: "tool" }> {
  const found = history.findLast((message) => message.role === "tool");
  assert.ok(found, "no tool message in the history");
  return found as Extract<Message, { role: "tool" }>;
}

Deno.test("createLoopDriver() runs a mock script's tool calls and records the turn", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.txt`, "alpha");
    const script = await writeScript(dir, [
      { toolCalls: [{ id: "c1", name: "list_files", args: { path: "." } }] },
      { toolCalls: [{ id: "c2", name: "write_file", args: { path: "out.md", content: "hi" } }] },
      { text: "All done.", usage: { inputTokens: 50, outputTokens: 5, costUsd: 0.001 } },
    ]);
    const sink = new MemorySink();
    const driver = createLoopDriver();
    assert.equal(driver.name, "loop");
    assert.equal(driver.harness, "reins");
    const result = await driver.start(
      driverInput(dir, { model: `mock:${script}`, prompt: "tidy up" }),
      sink,
      neverAborted(),
    );
    assert.deepEqual(result, {
      status: "completed",
      reason: null,
      result: "All done.",
      exitCode: null,
    });
    assert.deepEqual(sink.types(), [
      "message.completed",
      "heartbeat",
      "model.requested",
      "model.completed",
      "usage.updated",
      "tool.started",
      "tool.completed",
      "heartbeat",
      "model.requested",
      "model.completed",
      "usage.updated",
      "tool.started",
      "tool.completed",
      "heartbeat",
      "model.requested",
      "model.completed",
      "usage.updated",
      "message.completed",
    ]);
    assert.deepEqual(sink.ofType("message.completed").map((e) => e.payload), [
      { role: "user", text: "tidy up" },
      { role: "assistant", text: "All done." },
    ]);
    assert.deepEqual(sink.ofType("heartbeat").map((e) => e.payload.iteration), [0, 1, 2]);
    assert.deepEqual(sink.ofType("model.requested")[0].payload, {
      historyLength: 2,
      toolCount: 5, // the four tools of the working directory, and ask_user
      purpose: "turn",
      model: `mock:${script}`,
    });
    assert.deepEqual(sink.ofType("tool.started")[0].payload, {
      callId: "c1",
      tool: "list_files",
      args: { path: "." },
    });
    const [listed, wrote] = sink.ofType("tool.completed").map((e) => e.payload);
    assert.equal(listed.ok, true);
    assert.equal(listed.result, "a.txt\nscript.json");
    assert.ok(Date.parse(listed.startedAt!) <= Date.parse(listed.finishedAt!));
    assert.equal(wrote.result, "Wrote 2 bytes to out.md");
    assert.equal(await Deno.readTextFile(`${dir}/out.md`), "hi");
    assert.deepEqual(sink.ofType("usage.updated").at(-1)!.payload, {
      inputTokens: 50,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: 0.001,
      requests: 3,
    });
  });
});

Deno.test("createLoopDriver() gives the model a tool error for a path outside the directory", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [
      { toolCalls: [{ id: "c1", name: "read_file", args: { path: "../../etc/passwd" } }] },
      { text: "I may not read that." },
    ]);
    const { hooks, calls } = captureCalls();
    const sink = new MemorySink();
    const result = await createLoopDriver({ hooks: [hooks] }).start(
      driverInput(dir, { model: `mock:${script}` }),
      sink,
      neverAborted(),
    );
    assert.equal(result.status, "completed");
    const error = 'Cannot use "../../etc/passwd": it resolves outside the working directory';
    assert.equal(sink.ofType("tool.completed")[0].payload.error, error);
    assert.deepEqual(lastToolMessage(calls[1].history), {
      role: "tool",
      callId: "c1",
      name: "read_file",
      ok: false,
      content: `Error: ${error}`,
    });
  });
});

Deno.test("createLoopDriver() calls hooks around each model and tool call, in order", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [
      { toolCalls: [{ id: "c1", name: "list_files" }] },
      { text: "ok" },
    ]);
    const seen: string[] = [];
    const hooks: LoopHooks = {
      beforeModel: (call) => void seen.push(`beforeModel ${call.purpose} ${call.iteration}`),
      afterModel: (_call, output) => void seen.push(`afterModel ${output.stopReason}`),
      beforeTool: (call) => void seen.push(`beforeTool ${call.name}`),
      afterTool: (call, outcome) => void seen.push(`afterTool ${call.name} ${outcome.ok}`),
    };
    await createLoopDriver({ hooks: [hooks] }).start(
      driverInput(dir, { model: `mock:${script}` }),
      new MemorySink(),
      neverAborted(),
    );
    assert.deepEqual(seen, [
      "beforeModel turn 0",
      "afterModel tool_use",
      "beforeTool list_files",
      "afterTool list_files true",
      "beforeModel turn 1",
      "afterModel end_turn",
    ]);
  });
});

const writeScriptFor = (dir: string) =>
  writeScript(dir, [
    { toolCalls: [{ id: "w1", name: "write_file", args: { path: "x.txt", content: "x" } }] },
    { text: "finished" },
  ]);

Deno.test("createLoopDriver() runs tools without asking when approval is auto", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScriptFor(dir);
    const sink = new MemorySink();
    await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, approval: "auto" }),
      sink,
      neverAborted(),
    );
    assert.equal(sink.ofType("approval.requested").length, 0);
    assert.equal(await Deno.readTextFile(`${dir}/x.txt`), "x");
  });
});

Deno.test("createLoopDriver() refuses every tool with 'denied by policy' when approval is deny", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScriptFor(dir);
    const { hooks, calls } = captureCalls();
    const sink = new MemorySink();
    const result = await createLoopDriver({ hooks: [hooks] }).start(
      driverInput(dir, { model: `mock:${script}`, approval: "deny" }),
      sink,
      neverAborted(),
    );
    assert.equal(result.status, "completed");
    assert.equal(sink.ofType("approval.requested").length, 0);
    const completed = sink.ofType("tool.completed")[0].payload;
    assert.equal(completed.ok, false);
    assert.equal(completed.error, "denied by policy");
    assert.equal(lastToolMessage(calls[1].history).content, "Error: denied by policy");
    await assert.rejects(Deno.stat(`${dir}/x.txt`), Deno.errors.NotFound);
  });
});

Deno.test("createLoopDriver() asks and runs the tool when the answer is allow", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScriptFor(dir);
    const sink = new MemorySink();
    const { decisions, asked } = fakeDecisions(() => {
      // the request is recorded before the loop waits
      assert.equal(sink.types().at(-1), "approval.requested");
      return { decision: "allow", by: "alice", reason: null };
    });
    await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, approval: "ask", decisions }),
      sink,
      neverAborted(),
    );
    assert.deepEqual(asked, ["approval-1"]);
    assert.deepEqual(sink.ofType("approval.requested")[0].payload, {
      approvalId: "approval-1",
      tool: "write_file",
      args: { path: "x.txt", content: "x" },
    });
    const types = sink.types();
    assert.ok(types.indexOf("approval.requested") < types.indexOf("tool.started"));
    assert.equal(sink.ofType("tool.completed")[0].payload.ok, true);
    assert.equal(await Deno.readTextFile(`${dir}/x.txt`), "x");
  });
});

Deno.test("createLoopDriver() asks and gives the model the refusal when the answer is deny", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScriptFor(dir);
    const { hooks, calls } = captureCalls();
    const sink = new MemorySink();
    const { decisions } = fakeDecisions(() => ({
      decision: "deny",
      by: "alice",
      reason: "not on Fridays",
    }));
    const result = await createLoopDriver({ hooks: [hooks] }).start(
      driverInput(dir, { model: `mock:${script}`, approval: "ask", decisions }),
      sink,
      neverAborted(),
    );
    assert.equal(result.status, "completed");
    assert.equal(sink.ofType("tool.completed")[0].payload.error, "denied by alice: not on Fridays");
    assert.equal(
      lastToolMessage(calls[1].history).content,
      "Error: denied by alice: not on Fridays",
    );
    await assert.rejects(Deno.stat(`${dir}/x.txt`), Deno.errors.NotFound);
  });
});

/** A script of `n` tool-calling responses, then a final answer. */
function toolLoopScript(n: number, usage?: Record<string, number>): unknown[] {
  return [
    ...Array.from({ length: n }, (_, i) => ({
      toolCalls: [{ id: `t${i}`, name: "list_files" }],
      ...(usage ? { usage } : {}),
    })),
    { text: "summing up what I have", ...(usage ? { usage } : {}) },
  ];
}

// regression: --max-turns 3 made four model calls, --max-tokens and --max-usd one past the limit:
// the loop asked for a tool-less "final answer" once the budget was reached. A budget is a ceiling.
Deno.test("createLoopDriver() warns at 80 % of --max-turns and starts no call past it", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, toolLoopScript(5));
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxTurns: 5 } }),
      sink,
      neverAborted(),
    );
    assert.deepEqual(result, {
      status: "failed",
      reason: "budget exhausted: --max-turns 5 (5 of 5 model calls)",
      result: null,
      exitCode: null,
      code: "budget_exhausted",
    });
    assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
      { ratio: 0.8, limit: "turns" },
      { ratio: 1, limit: "turns" },
    ]);
    const requested = sink.ofType("model.requested").map((e) => e.payload);
    assert.equal(requested.length, 5);
    assert.ok(requested.every((p) => p.purpose === "turn"));
    // the warning comes as the fourth call starts, the last as the fifth does
    const types = sink.types();
    const warnings = types.flatMap((type, i) => type === "budget.warning" ? [i] : []);
    const requests = types.flatMap((type, i) => type === "model.requested" ? [i] : []);
    assert.ok(requests[2] < warnings[0] && warnings[0] < requests[3]);
    assert.ok(requests[3] < warnings[1] && warnings[1] < requests[4]);
  });
});

Deno.test("createLoopDriver() with --max-turns 3 makes three model calls", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, toolLoopScript(5));
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxTurns: 3 } }),
      sink,
      neverAborted(),
    );
    assert.equal(result.reason, "budget exhausted: --max-turns 3 (3 of 3 model calls)");
    assert.equal(sink.ofType("model.requested").length, 3);
    assert.equal(sink.ofType("usage.updated").at(-1)!.payload.requests, 3);
  });
});

Deno.test("createLoopDriver() completes a turn whose last allowed call answers", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, toolLoopScript(2));
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxTurns: 3 } }),
      sink,
      neverAborted(),
    );
    assert.deepEqual([result.status, result.reason, result.result], [
      "completed",
      null,
      "summing up what I have",
    ]);
  });
});

Deno.test("createLoopDriver() holds --max-tokens: no call starts once the totals reach it", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, toolLoopScript(4, { inputTokens: 25, outputTokens: 5 }));
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxTokens: 100 } }),
      sink,
      neverAborted(),
    );
    // 30, 60, 90 (warning), 120 (reached): four calls, the fifth refused
    assert.equal(result.reason, "budget exhausted: --max-tokens 100 (120 of 100 tokens)");
    assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
      { ratio: 0.9, limit: "tokens" },
      { ratio: 1.2, limit: "tokens" },
    ]);
    assert.equal(sink.ofType("model.requested").length, 4);
  });
});

Deno.test("createLoopDriver() holds --max-usd, warning at 80 % of it", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, toolLoopScript(5, { costUsd: 0.005 }));
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxUsd: 0.025 } }),
      sink,
      neverAborted(),
    );
    // 0.005 a call: 0.02 is 80 %, 0.025 reached; the sixth call never starts
    assert.equal(result.reason, "budget exhausted: --max-usd 0.025 ($0.025 of $0.025)");
    assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
      { ratio: 0.8, limit: "usd" },
      { ratio: 1, limit: "usd" },
    ]);
    assert.equal(sink.ofType("model.requested").length, 5);
  });
});

Deno.test("createLoopDriver() completes normally when the model answers within the budget", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [{ text: "quick" }]);
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, budget: { maxTurns: 1 } }),
      sink,
      neverAborted(),
    );
    assert.deepEqual(result, {
      status: "completed",
      reason: null,
      result: "quick",
      exitCode: null,
    });
    // Its one call reached the limit (said once), and it needed no other.
    assert.deepEqual(sink.ofType("budget.warning").map((e) => e.payload), [
      { ratio: 1, limit: "turns" },
    ]);
  });
});

Deno.test("createLoopDriver() continues the conversation of earlier runs from their events", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/a.txt`, "alpha");
    const first = await writeScript(dir, [
      { toolCalls: [{ id: "r1", name: "read_file", args: { path: "a.txt" } }] },
      { text: "It says alpha." },
    ]);
    const earlier = new MemorySink();
    await createLoopDriver().start(
      driverInput(dir, { model: `mock:${first}`, prompt: "what is in a.txt?" }),
      earlier,
      neverAborted(),
    );
    const second = `${dir}/second.json`;
    await Deno.writeTextFile(second, JSON.stringify([{ text: "You asked about a.txt." }]));
    const { hooks, calls } = captureCalls();
    const result = await createLoopDriver({ hooks: [hooks], systemPrompt: "be brief" }).start(
      driverInput(dir, {
        model: `mock:${second}`,
        prompt: "what did I ask?",
        history: earlier.events,
      }),
      new MemorySink(),
      neverAborted(),
    );
    assert.equal(result.status, "completed");
    assert.deepEqual(calls[0].history, [
      { role: "system", text: "be brief" },
      { role: "user", text: "what is in a.txt?" },
      {
        role: "assistant",
        text: null,
        toolCalls: [{ id: "r1", name: "read_file", args: { path: "a.txt" } }],
      },
      { role: "tool", callId: "r1", name: "read_file", ok: true, content: "alpha" },
      { role: "assistant", text: "It says alpha.", toolCalls: [] },
      { role: "user", text: "what did I ask?" },
    ]);
  });
});

Deno.test("createLoopDriver() returns interrupted promptly when the signal aborts mid model call", async () => {
  await withTempDir(async (dir) => {
    const hanging: Model = { name: "hanging", complete: () => new Promise(() => {}) };
    const controller = new AbortController();
    setTimeout(() => controller.abort("stopped by SIGINT"), 50);
    const started = Date.now();
    const result = await createLoopDriver({ model: hanging }).start(
      driverInput(dir),
      new MemorySink(),
      controller.signal,
    );
    assert.ok(Date.now() - started < 1_000);
    assert.deepEqual(result, {
      status: "interrupted",
      reason: "stopped by SIGINT",
      result: null,
      exitCode: null,
    });
  });
});

Deno.test("createLoopDriver() stops a running command and returns interrupted on abort", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [
      { toolCalls: [{ id: "s1", name: "run_command", args: { command: "sleep 20" } }] },
      { text: "never reached" },
    ]);
    const controller = new AbortController();
    const sink = new MemorySink();
    const hooks: LoopHooks = {
      beforeTool: () => void setTimeout(() => controller.abort(), 50),
    };
    const started = Date.now();
    const result = await createLoopDriver({ hooks: [hooks] }).start(
      driverInput(dir, { model: `mock:${script}` }),
      sink,
      controller.signal,
    );
    assert.ok(Date.now() - started < 3_000, "the command was not stopped");
    assert.equal(result.status, "interrupted");
    assert.equal(result.reason, "interrupted");
    // the stopped tool is still recorded, and nothing after it
    assert.equal(sink.ofType("tool.completed")[0].payload.ok, false);
    assert.equal(sink.types().at(-1), "tool.completed");
  });
});

Deno.test("createLoopDriver() stops waiting for an approval when the signal aborts", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScriptFor(dir);
    const controller = new AbortController();
    const { decisions } = fakeDecisions(() => {
      setTimeout(() => controller.abort("stopped by SIGTERM"), 20);
      return new Promise(() => {});
    });
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, approval: "ask", decisions }),
      new MemorySink(),
      controller.signal,
    );
    assert.equal(result.status, "interrupted");
    assert.equal(result.reason, "stopped by SIGTERM");
  });
});

Deno.test("createLoopDriver() fails with the reason when the mock script runs out", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [{ toolCalls: [{ name: "list_files" }] }]);
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}` }),
      new MemorySink(),
      neverAborted(),
    );
    assert.equal(result.status, "failed");
    assert.match(
      result.reason!,
      new RegExp(`^The mock model ${script} has no response left for model call 2`),
    );
  });
});

Deno.test("createLoopDriver() fails with the file's problem when the mock script is bad", async () => {
  await withTempDir(async (dir) => {
    const script = await writeScript(dir, [{ text: 3 }]);
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { model: `mock:${script}`, prompt: "hello?" }),
      sink,
      neverAborted(),
    );
    // the request is kept, so a later turn knows what was asked
    assert.deepEqual(sink.events, [
      { type: "message.completed", payload: { role: "user", text: "hello?" } },
    ]);
    assert.equal(result.status, "failed");
    assert.match(
      result.reason!,
      /^Cannot use the mock model file .*: Invalid input: expected string, received number at \$\[0\]\.text/,
    );
  });
});

Deno.test("the loop driver's agent facts come from its model's spec, or from the model handed to it", () => {
  // Read from the spec alone: no directory, file or endpoint is looked at.
  const input = driverInput("/nonexistent", { model: "openai:gpt-4o" });
  assert.deepEqual(createLoopDriver().agentFacts?.(input), {
    provider: "openai",
    model: "gpt-4o",
    inputExcludesCache: false,
    inProcess: false,
  });
  const handed: Model = {
    name: "replay:0195f000",
    complete: () => Promise.reject(new Error("unused")),
  };
  assert.deepEqual(createLoopDriver({ model: handed }).agentFacts?.(input), {
    provider: "reins",
    model: "replay",
    inputExcludesCache: false,
    inProcess: true,
  });
});
