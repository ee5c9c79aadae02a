// The trace of one run (lib/otel/spans.ts): span names, kinds, parents, times, attribute names and
// types, events, statuses, content only on request, ids derived from the run.
import assert from "node:assert/strict";
import fc from "fast-check";
import { runSpans } from "../../lib/otel/spans.ts";
import { rootSpanIdOf, traceIdOf } from "../../lib/otel/ids.ts";
import { SpanKind, StatusCode } from "../../lib/otel/wire.ts";
import { eventInput } from "../store/_arbitraries.ts";
import { attr, byName, jsonAttr, plainAttrs, recordedRun, START_MS } from "./_runs.ts";

const nanos = (ms: number) => `${BigInt(START_MS + ms) * 1_000_000n}`;

const usage = (input: number, output: number, extra: Record<string, number> = {}) => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadTokens: extra.cacheRead ?? 0,
  cacheWriteTokens: extra.cacheWrite ?? 0,
  reasoningTokens: 0,
  costUsd: extra.cost ?? 0.25,
  requests: extra.requests ?? 1,
});

/** A loop run: one model call asking for a tool, the tool, a final answer. */
function loopRun(options: { contextId?: string | null; model?: string } = {}) {
  const model = options.model ?? "openai:gpt-4o-mini";
  return recordedRun({
    contextId: options.contextId ?? "ticket-42",
    events: [
      { type: "message.completed", payload: { role: "user", text: "do it" } },
      { type: "model.requested", payload: { historyLength: 2, toolCount: 4, model } },
      {
        type: "model.completed",
        payload: {
          text: null,
          toolCalls: [{ id: "c1", name: "read_file", args: { path: "a.txt" } }],
          stopReason: "tool_use",
          usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.1 },
          reasoning: null,
        },
      },
      { type: "usage.updated", payload: usage(100, 20, { cost: 0.1 }) },
      {
        type: "tool.started",
        payload: { callId: "c1", tool: "read_file", args: { path: "a.txt" } },
      },
      {
        type: "tool.completed",
        payload: {
          callId: "c1",
          ok: true,
          result: "alpha",
          startedAt: new Date(START_MS + 45).toISOString(),
          finishedAt: new Date(START_MS + 48).toISOString(),
        },
      },
      { type: "model.requested", payload: { historyLength: 4, toolCount: 4, model } },
      {
        type: "model.completed",
        payload: {
          text: "It says alpha.",
          toolCalls: [],
          stopReason: "end_turn",
          usage: { inputTokens: 150, outputTokens: 10, costUsd: 0.15 },
          reasoning: null,
        },
      },
      { type: "usage.updated", payload: usage(250, 30, { cost: 2, requests: 2 }) },
      { type: "completed", payload: { reason: null, result: "It says alpha." } },
    ],
  });
}

Deno.test("runSpans() makes the root span invoke_agent {agent}, INTERNAL, with the GenAI and reins attributes", () => {
  const { record, events } = loopRun();
  const [root] = runSpans(record, events, { content: false });
  assert.equal(root.name, "invoke_agent reins");
  assert.equal(root.kind, SpanKind.internal);
  assert.equal(root.parentSpanId, undefined);
  assert.equal(root.traceId, record.id.replaceAll("-", ""));
  assert.equal(root.startTimeUnixNano, nanos(0));
  assert.equal(root.endTimeUnixNano, nanos(100));
  assert.deepEqual(root.status, { code: StatusCode.unset });
  assert.deepEqual(plainAttrs(root.attributes), {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": "openai",
    "gen_ai.agent.name": "reins",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.conversation.id": "ticket-42",
    "gen_ai.usage.input_tokens": 250,
    "gen_ai.usage.output_tokens": 30,
    "gen_ai.usage.cache_read.input_tokens": 0,
    "gen_ai.usage.cache_creation.input_tokens": 0,
    "gen_ai.usage.reasoning.output_tokens": 0,
    "reins.run.id": record.id,
    "reins.session.id": record.sessionId,
    "reins.harness": "reins",
    "reins.driver": "loop",
    "reins.trigger": "cli",
    "reins.status": "completed",
    "reins.cost_usd": 2,
    "reins.model.requests": 2,
  });
  // Types as OTLP carries them: counts are intValue, dollars doubleValue even when whole.
  assert.deepEqual(attr(root.attributes, "gen_ai.usage.input_tokens"), { intValue: 250 });
  assert.deepEqual(attr(root.attributes, "reins.cost_usd"), { doubleValue: 2 });
  assert.equal(
    attr(root.attributes, "gen_ai.system"),
    undefined,
    "the deprecated name is not used",
  );
});

Deno.test("runSpans() makes a chat {model} CLIENT span per model call and an execute_tool span per tool call, children of the root", () => {
  const { record, events } = loopRun();
  const spans = runSpans(record, events, { content: false });
  assert.deepEqual(spans.map((s) => [s.name, s.kind]), [
    ["invoke_agent reins", SpanKind.internal],
    ["chat gpt-4o-mini", SpanKind.client],
    ["execute_tool read_file", SpanKind.internal],
    ["chat gpt-4o-mini", SpanKind.client],
  ]);
  const rootId = rootSpanIdOf(record.id);
  for (const span of spans.slice(1)) {
    assert.equal(span.parentSpanId, rootId);
    assert.equal(span.traceId, spans[0].traceId);
  }
  assert.equal(new Set(spans.map((s) => s.spanId)).size, spans.length, "span ids are distinct");
  const [, firstChat, tool] = spans;
  // From model.requested to model.completed; the tool's own times.
  assert.equal(firstChat.startTimeUnixNano, nanos(20));
  assert.equal(firstChat.endTimeUnixNano, nanos(30));
  assert.equal(tool.startTimeUnixNano, nanos(45));
  assert.equal(tool.endTimeUnixNano, nanos(48));
  assert.deepEqual(plainAttrs(firstChat.attributes), {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.conversation.id": "ticket-42",
    "gen_ai.response.finish_reasons": ["tool_call"],
    "gen_ai.usage.input_tokens": 100,
    "gen_ai.usage.output_tokens": 20,
    "reins.cost_usd": 0.1,
  });
  assert.deepEqual(plainAttrs(tool.attributes), {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "read_file",
    "gen_ai.tool.call.id": "c1",
  });
  assert.deepEqual(tool.status, { code: StatusCode.unset });
});

Deno.test("runSpans() leaves prompts, answers and tool text out unless content is asked for", () => {
  const { record, events } = loopRun();
  const without = JSON.stringify(runSpans(record, events, { content: false }));
  for (const text of ["do it", "alpha", "It says alpha.", "a.txt"]) {
    assert.ok(!without.includes(text), `${JSON.stringify(text)} is not exported by default`);
  }
  const spans = runSpans(record, events, { content: true });
  const [root, firstChat, tool, lastChat] = spans;
  assert.deepEqual(jsonAttr(root.attributes, "gen_ai.input.messages"), [
    { role: "user", parts: [{ type: "text", content: "do it" }] },
  ]);
  assert.deepEqual(jsonAttr(root.attributes, "gen_ai.output.messages"), [
    {
      role: "assistant",
      parts: [{ type: "text", content: "It says alpha." }],
      finish_reason: "stop",
    },
  ]);
  assert.deepEqual(jsonAttr(firstChat.attributes, "gen_ai.output.messages"), [{
    role: "assistant",
    parts: [{ type: "tool_call", id: "c1", name: "read_file", arguments: { path: "a.txt" } }],
    finish_reason: "tool_call",
  }]);
  assert.equal(
    (jsonAttr(lastChat.attributes, "gen_ai.output.messages") as {
      parts: { content: string }[];
    }[])[0].parts[0].content,
    "It says alpha.",
  );
  assert.deepEqual(attr(tool.attributes, "gen_ai.tool.call.arguments"), {
    stringValue: '{"path":"a.txt"}',
  });
  assert.deepEqual(attr(tool.attributes, "gen_ai.tool.call.result"), { stringValue: "alpha" });
});

Deno.test("runSpans() marks a failed tool call ERROR with error.type tool_error, and a refused one denied", () => {
  const { record, events } = recordedRun({
    events: [
      { type: "tool.started", payload: { callId: "c1", tool: "run_command", args: { cmd: "x" } } },
      {
        type: "tool.completed",
        payload: { callId: "c1", ok: false, error: "exit 2", startedAt: null, finishedAt: null },
      },
      // The loop's --approve deny refuses without asking.
      { type: "tool.started", payload: { callId: "c2", tool: "write_file", args: {} } },
      {
        type: "tool.completed",
        payload: {
          callId: "c2",
          ok: false,
          error: "denied by policy",
          startedAt: null,
          finishedAt: null,
        },
      },
      { type: "completed", payload: { reason: null, result: "gave up" } },
    ],
  });
  const spans = runSpans(record, events, { content: false });
  const failed = byName(spans, "execute_tool run_command");
  const denied = byName(spans, "execute_tool write_file");
  assert.deepEqual(failed.status, { code: StatusCode.error });
  assert.deepEqual(attr(failed.attributes, "error.type"), { stringValue: "tool_error" });
  assert.deepEqual(denied.status, { code: StatusCode.error });
  assert.deepEqual(attr(denied.attributes, "error.type"), { stringValue: "denied" });
  // The tool's error text is the tool's output: content.
  const withContent = byName(
    runSpans(record, events, { content: true }),
    "execute_tool run_command",
  );
  assert.deepEqual(withContent.status, { code: StatusCode.error, message: "exit 2" });
});

Deno.test("runSpans() puts an approval on the tool call it gated, which starts when it was asked", () => {
  // The loop under --approve ask: approval first (no call id), then the call, refused.
  const { record, events } = recordedRun({
    events: [
      {
        type: "approval.requested",
        payload: { approvalId: "approval-1", tool: "write_file", args: { path: "x" } },
        atMs: 10,
      },
      {
        type: "approval.resolved",
        payload: { approvalId: "approval-1", decision: "deny", by: "cli", reason: "not now" },
        atMs: 500,
      },
      { type: "tool.started", payload: { callId: "c1", tool: "write_file", args: {} }, atMs: 510 },
      {
        type: "tool.completed",
        payload: {
          callId: "c1",
          ok: false,
          error: "denied by cli: not now",
          startedAt: null,
          finishedAt: null,
        },
        atMs: 511,
      },
      { type: "completed", payload: { reason: null, result: "ok" }, atMs: 520 },
    ],
  });
  const spans = runSpans(record, events, { content: false });
  const tool = byName(spans, "execute_tool write_file");
  assert.equal(tool.startTimeUnixNano, nanos(10));
  assert.equal(tool.endTimeUnixNano, nanos(511));
  assert.deepEqual(tool.events.map((e) => [e.name, e.timeUnixNano, plainAttrs(e.attributes)]), [
    ["reins.approval.requested", nanos(10), {
      "reins.approval.id": "approval-1",
      "gen_ai.tool.name": "write_file",
    }],
    ["reins.approval.resolved", nanos(500), {
      "reins.approval.id": "approval-1",
      "reins.approval.decision": "deny",
      "reins.approval.by": "cli",
      "reins.approval.reason": "not now",
    }],
  ]);
  assert.deepEqual(attr(tool.attributes, "error.type"), { stringValue: "denied" });
  assert.deepEqual(spans[0].events, [], "nothing of it is left on the root");
});

Deno.test("runSpans() adds questions, compactions, budget warnings and problems as root span events", () => {
  const { record, events } = recordedRun({
    events: [
      { type: "question.requested", payload: { questionId: "q1", text: "Which file?" } },
      { type: "question.answered", payload: { questionId: "q1", answer: "b.txt" } },
      { type: "compaction.started", payload: { stage: "trim" } },
      { type: "compaction.completed", payload: { stage: "trim", before: 9000, after: 3000 } },
      { type: "budget.warning", payload: { ratio: 1, limit: "turns" } },
      { type: "problem", payload: { source: "claude", reason: "a bad line", text: "{oops" } },
      { type: "completed", payload: { reason: null, result: "done" } },
    ],
  });
  const [root] = runSpans(record, events, { content: false });
  assert.deepEqual(root.events.map((e) => [e.name, plainAttrs(e.attributes)]), [
    ["reins.question.requested", { "reins.question.id": "q1" }],
    ["reins.question.answered", { "reins.question.id": "q1" }],
    ["reins.compaction.started", { "reins.compaction.stage": "trim" }],
    ["reins.compaction.completed", {
      "reins.compaction.stage": "trim",
      "reins.compaction.before": 9000,
      "reins.compaction.after": 3000,
    }],
    ["reins.budget.warning", { "reins.budget.ratio": 1, "reins.budget.limit": "turns" }],
    ["reins.problem", { "reins.problem.source": "claude", "reins.problem.reason": "a bad line" }],
  ]);
  assert.deepEqual(
    attr(root.events[4].attributes, "reins.budget.ratio"),
    { doubleValue: 1 },
    "a ratio is a double",
  );
  assert.deepEqual(attr(root.attributes, "reins.problems"), { intValue: 1 });
  const [withContent] = runSpans(record, events, { content: true });
  assert.deepEqual(attr(withContent.events[0].attributes, "reins.question.text"), {
    stringValue: "Which file?",
  });
  assert.deepEqual(attr(withContent.events[1].attributes, "reins.question.answer"), {
    stringValue: "b.txt",
  });
});

Deno.test("runSpans() marks a failed run ERROR with its reason, a timeout as error.type timeout, an interrupted one interrupted", () => {
  const cases = [
    [
      { type: "failed", payload: { reason: "the model endpoint answered 500", result: null } },
      "failed",
    ],
    [{ type: "failed", payload: { reason: "timed out after 5 s", result: null } }, "timeout"],
    [
      { type: "status.changed", payload: { status: "interrupted", reason: "stopped by SIGINT" } },
      "interrupted",
    ],
  ] as const;
  for (const [terminal, type] of cases) {
    const { record, events } = recordedRun({ events: [terminal] });
    const [root] = runSpans(record, events, { content: false });
    assert.deepEqual(root.status, { code: StatusCode.error, message: terminal.payload.reason });
    assert.deepEqual(attr(root.attributes, "error.type"), { stringValue: type });
    assert.deepEqual(attr(root.attributes, "reins.status"), {
      stringValue: type === "interrupted" ? "interrupted" : "failed",
    });
  }
});

Deno.test("runSpans() closes a model call that never answered and a tool call that never finished as ERROR incomplete", () => {
  const { record, events } = recordedRun({
    events: [
      { type: "tool.started", payload: { callId: "c1", tool: "run_command", args: {} } },
      { type: "model.requested", payload: { historyLength: 2, toolCount: 0, model: "demo" } },
      { type: "failed", payload: { reason: "the model endpoint went away", result: null } },
    ],
  });
  const spans = runSpans(record, events, { content: false });
  const tool = byName(spans, "execute_tool run_command");
  const chat = byName(spans, "chat demo");
  for (const span of [tool, chat]) {
    assert.equal(span.status.code, StatusCode.error);
    assert.deepEqual(attr(span.attributes, "error.type"), { stringValue: "incomplete" });
    assert.equal(span.endTimeUnixNano, spans[0].endTimeUnixNano);
  }
  // The demo model answers inside reins: INTERNAL, provider reins.
  assert.equal(chat.kind, SpanKind.internal);
  assert.deepEqual(attr(chat.attributes, "gen_ai.provider.name"), { stringValue: "reins" });
});

/**
 * A Claude Code run as its driver records it: its facts on run.started and session.linked, each
 * API message's model call on the events it produced — and the CLI's own lines as `native`, which
 * the export never reads (`legacy` leaves the rest out, as a run an older reins recorded).
 */
function claudeRun(options: { legacy?: boolean } = {}) {
  const legacy = options.legacy === true;
  const assistant = (id: string, content: unknown[], usage: Record<string, number>) => ({
    type: "assistant",
    session_id: "sess-1",
    parent_tool_use_id: null,
    message: {
      id,
      model: "claude-sonnet-4-5",
      role: "assistant",
      content,
      usage,
      stop_reason: null,
    },
  });
  const first = assistant("msg_1", [{ type: "tool_use", id: "toolu_1", name: "Bash", input: {} }], {
    input_tokens: 12,
    cache_read_input_tokens: 100,
    cache_creation_input_tokens: 5,
    output_tokens: 7,
  });
  const second = assistant("msg_2", [{ type: "text", text: "Done." }], {
    input_tokens: 30,
    cache_read_input_tokens: 117,
    cache_creation_input_tokens: 0,
    output_tokens: 3,
  });
  /** The model call of an API message, as the claude driver records it. */
  const call = (line: typeof first) =>
    legacy ? {} : {
      modelCall: {
        id: line.message.id,
        model: line.message.model,
        stopReason: line.message.stop_reason,
        usage: {
          inputTokens: line.message.usage.input_tokens,
          outputTokens: line.message.usage.output_tokens,
          cacheReadTokens: line.message.usage.cache_read_input_tokens,
          cacheWriteTokens: line.message.usage.cache_creation_input_tokens,
        },
      },
    };
  return recordedRun({
    harness: "claude-code",
    driver: "claude",
    agent: legacy
      ? undefined
      : { provider: "anthropic", inputExcludesCache: true, inProcess: false },
    events: [
      {
        type: "session.linked",
        payload: {
          nativeSessionId: "sess-1",
          ...(legacy ? {} : { agent: { model: "claude-sonnet-4-5", version: "2.1.328" } }),
        },
        native: {
          type: "system",
          subtype: "init",
          session_id: "sess-1",
          model: "claude-sonnet-4-5",
          claude_code_version: "2.1.328",
        },
      },
      {
        type: "tool.started",
        payload: { callId: "toolu_1", tool: "Bash", args: { command: "ls" }, ...call(first) },
        native: first,
        atMs: 40,
      },
      {
        type: "tool.completed",
        payload: {
          callId: "toolu_1",
          ok: true,
          result: "a.txt",
          startedAt: null,
          finishedAt: null,
        },
        atMs: 60,
      },
      {
        type: "message.completed",
        payload: { role: "assistant", text: "Done.", ...call(second) },
        native: second,
        atMs: 90,
      },
      {
        type: "usage.updated",
        payload: {
          inputTokens: 42,
          outputTokens: 10,
          cacheReadTokens: 217,
          cacheWriteTokens: 5,
          reasoningTokens: null,
          costUsd: 0.0123,
          requests: 2,
        },
        atMs: 95,
      },
      { type: "completed", payload: { reason: null, result: "Done." }, atMs: 100 },
    ],
  });
}

Deno.test("runSpans() maps a Claude Code run: provider anthropic, a chat span per API message, input counts the cache", () => {
  const { record, events } = claudeRun();
  const spans = runSpans(record, events, { content: false });
  assert.deepEqual(spans.map((s) => s.name), [
    "invoke_agent claude-code",
    "chat claude-sonnet-4-5",
    "execute_tool Bash",
    "chat claude-sonnet-4-5",
  ]);
  const [root, first, , second] = spans;
  const rootAttrs = plainAttrs(root.attributes);
  assert.equal(rootAttrs["gen_ai.provider.name"], "anthropic");
  assert.equal(rootAttrs["gen_ai.agent.version"], "2.1.328");
  assert.equal(rootAttrs["gen_ai.request.model"], "claude-sonnet-4-5");
  // Anthropic's input_tokens leaves the cache out; the conventions count it in.
  assert.equal(rootAttrs["gen_ai.usage.input_tokens"], 42 + 217 + 5);
  assert.equal(rootAttrs["gen_ai.usage.cache_read.input_tokens"], 217);
  assert.equal(rootAttrs["gen_ai.usage.cache_creation.input_tokens"], 5);
  assert.equal(rootAttrs["reins.cost_usd"], 0.0123);
  assert.equal(first.kind, SpanKind.client);
  assert.deepEqual(plainAttrs(first.attributes), {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-sonnet-4-5",
    "gen_ai.response.id": "msg_1",
    "gen_ai.response.model": "claude-sonnet-4-5",
    "gen_ai.usage.input_tokens": 117,
    "gen_ai.usage.output_tokens": 7,
    "gen_ai.usage.cache_read.input_tokens": 100,
    "gen_ai.usage.cache_creation.input_tokens": 5,
  });
  // From the event before the message to its last line.
  assert.equal(first.startTimeUnixNano, nanos(10));
  assert.equal(first.endTimeUnixNano, nanos(40));
  assert.equal(second.startTimeUnixNano, nanos(60));
  assert.equal(second.endTimeUnixNano, nanos(90));
  assert.deepEqual(attr(second.attributes, "gen_ai.usage.input_tokens"), { intValue: 147 });
});

Deno.test("runSpans() ends a Claude Code API call where the tool it asked for starts", () => {
  // regression: the driver stamps a tool's start a moment before the store stamps the event that
  // carries the message, and the chat span ran past the start of the tool it had asked for.
  const { record, events } = claudeRun();
  const completed = events.find((event) => event.type === "tool.completed")!;
  (completed.payload as { startedAt: string | null }).startedAt = new Date(START_MS + 37)
    .toISOString();
  const spans = runSpans(record, events, { content: false });
  const chat = byName(spans, "chat claude-sonnet-4-5");
  const tool = byName(spans, "execute_tool Bash");
  assert.equal(tool.startTimeUnixNano, nanos(37));
  assert.equal(chat.endTimeUnixNano, nanos(37));
});

Deno.test("runSpans() never reads a harness's own lines: a run's spans are the same without its natives", () => {
  const { record, events } = claudeRun();
  const withoutNatives = events.map(({ native: _native, ...event }) => event as typeof event);
  assert.ok(events.some((event) => event.native !== undefined));
  assert.deepEqual(
    runSpans(record, withoutNatives, { content: true }),
    runSpans(record, events, { content: true }),
  );
});

Deno.test("runSpans() exports a Claude Code run an older reins recorded with what its events give", () => {
  // No agent facts, no model calls: only the harness's own lines knew the rest.
  const { record, events } = claudeRun({ legacy: true });
  const spans = runSpans(record, events, { content: false });
  assert.deepEqual(spans.map((s) => s.name), ["invoke_agent claude-code", "execute_tool Bash"]);
  assert.deepEqual(plainAttrs(spans[0].attributes), {
    "gen_ai.operation.name": "invoke_agent",
    // The harness's name stands for the provider reins was not told.
    "gen_ai.provider.name": "claude-code",
    "gen_ai.agent.name": "claude-code",
    // As recorded: nothing says the count leaves the cache out.
    "gen_ai.usage.input_tokens": 42,
    "gen_ai.usage.output_tokens": 10,
    "gen_ai.usage.cache_read.input_tokens": 217,
    "gen_ai.usage.cache_creation.input_tokens": 5,
    "reins.run.id": record.id,
    "reins.session.id": record.sessionId,
    "reins.harness": "claude-code",
    "reins.driver": "claude",
    "reins.trigger": "cli",
    "reins.status": "completed",
    "reins.cost_usd": 0.0123,
    "reins.model.requests": 2,
  });
});

Deno.test("runSpans() reads a loop run's agent from run.started, and an older loop run's from its model spec", () => {
  for (const model of ["openai:gpt-4o-mini", "mock:/work/script.json", "demo"]) {
    const { record, events } = loopRun({ model });
    const recorded = structuredClone(events);
    const started = recorded[0].payload as Record<string, unknown>;
    started.agent = model.startsWith("openai:")
      ? { provider: "openai", model: "gpt-4o-mini", inputExcludesCache: false, inProcess: false }
      : {
        provider: "reins",
        model: model.split(":")[0],
        inputExcludesCache: false,
        inProcess: true,
      };
    const spans = runSpans(record, recorded, { content: false });
    assert.deepEqual(runSpans(record, events, { content: false }), spans, model);
    const chat = spans.find((span) => span.name.startsWith("chat"))!;
    assert.equal(chat.kind, model.startsWith("openai:") ? SpanKind.client : SpanKind.internal);
  }
});

Deno.test("runSpans() gives the same spans for the same run, and links a run to its family parent", () => {
  const parent = loopRun();
  const child = recordedRun({
    parentRunId: parent.record.id,
    events: [{ type: "completed", payload: { reason: null, result: "ok" } }],
  });
  const once = runSpans(parent.record, parent.events, { content: false });
  const again = runSpans(parent.record, structuredClone(parent.events), { content: false });
  assert.deepEqual(again, once);
  const [root] = runSpans(child.record, child.events, { content: false });
  assert.equal(root.traceId, traceIdOf(child.record.id));
  assert.notEqual(root.traceId, once[0].traceId);
  assert.deepEqual(attr(root.attributes, "reins.run.parent_id"), { stringValue: parent.record.id });
  assert.deepEqual(
    root.links.map((link) => [link.traceId, link.spanId, plainAttrs(link.attributes)]),
    [
      [once[0].traceId, once[0].spanId, {
        "reins.run.id": parent.record.id,
        "reins.link.relation": "parent",
      }],
    ],
  );
});

Deno.test("runSpans() leaves out what arrived after the run settled", () => {
  const { record, events } = loopRun();
  const late = {
    ...events[4],
    sequence: events.length,
    type: "tool.started" as const,
    payload: { callId: "late", tool: "late_tool", args: {} },
    ignored: "after the run settled",
  };
  const spans = runSpans(record, [...events, late], { content: false });
  assert.ok(!spans.some((span) => span.name === "execute_tool late_tool"));
});

// regression: a call the harness reported as model call "3" took the span id of the chat span of
// the model.requested event at sequence 3 (fast-check found it)
Deno.test("runSpans() gives a reported model call and the loop's own call at its id's sequence distinct span ids", () => {
  const { record, events } = recordedRun({
    events: [
      { type: "problem", payload: { source: "", reason: "" } },
      { type: "completed", payload: { reason: null, result: {} } },
      { type: "model.requested", payload: { historyLength: 0, toolCount: 0 } },
      {
        type: "tool.started",
        payload: { callId: " ", tool: "", args: null, modelCall: { id: "3" } },
      },
    ],
  });
  for (const content of [false, true]) {
    const spans = runSpans(record, events, { content });
    assert.equal(new Set(spans.map((span) => span.spanId)).size, spans.length);
  }
});

Deno.test("runSpans() makes well-formed spans of any recorded events (property)", () => {
  fc.assert(
    fc.property(fc.array(eventInput, { maxLength: 30 }), fc.boolean(), (inputs, content) => {
      const { record, events } = recordedRun({ events: inputs });
      const spans = runSpans(record, events, { content });
      const ids = new Set(spans.map((span) => span.spanId));
      assert.equal(ids.size, spans.length);
      assert.equal(spans[0].parentSpanId, undefined);
      for (const span of spans) {
        assert.match(span.traceId, /^[0-9a-f]{32}$/);
        assert.match(span.spanId, /^[0-9a-f]{16}$/);
        assert.ok(BigInt(span.startTimeUnixNano) <= BigInt(span.endTimeUnixNano));
        if (span !== spans[0]) assert.equal(span.parentSpanId, spans[0].spanId);
        for (const { value } of span.attributes) {
          assert.equal(Object.keys(value).length, 1, "one typed value per attribute");
        }
      }
    }),
    { numRuns: 300 },
  );
});

// regression: the gateway records model.call.started once the call is on its way (after the
// answer's first piece, lib/gateway/call.ts), a few ms after it arrived: the chat span starts at
// the arrival (the end less the call's durationMs), not at the started event. And its
// model.call.completed follows the saving of its bodies, by when the harness may have started the
// tool the answer asked for (tests/interop/otel_test.ts failed so under load): the span ends
// with the answer's last piece.
Deno.test("runSpans() starts a gateway call's chat span at its arrival, before its started event", () => {
  const { record, events } = recordedRun({
    harness: "claude-code",
    driver: "claude",
    events: [
      {
        type: "model.call.started",
        atMs: 28,
        payload: {
          callId: "call-1",
          wire: "anthropic.messages",
          generates: true,
          route: "anthropic",
          method: "POST",
          path: "/v1/messages",
          model: "claude-x",
          stream: true,
          headers: {},
          body: null,
        },
      },
      {
        type: "model.call.completed",
        atMs: 60,
        payload: {
          callId: "call-1",
          outcome: "ok",
          status: 200,
          headers: {},
          body: null,
          chunks: [[100, 7]],
          model: "claude-x",
          stopReason: "end_turn",
          usage: { inputTokens: 5, outputTokens: 2 },
          firstByteMs: 7,
          durationMs: 40,
        },
      },
      { type: "completed", atMs: 70, payload: { reason: null, result: "hi" } },
    ],
  });
  const chat = runSpans(record, events, { content: false }).find((s) => s.name.startsWith("chat"));
  assert.equal(chat?.startTimeUnixNano, nanos(20));
  // It ends with its answer's last piece (7 ms after the arrival), not when it was recorded.
  assert.equal(chat?.endTimeUnixNano, nanos(27));
});
