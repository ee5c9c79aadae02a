// fast-check arbitraries for the store's property tests: valid event inputs of every type, run
// patches, and values to put where a valid one was.
import fc from "fast-check";
import type { EventInput, EventType } from "../../lib/store/contracts.ts";
import { EVENT_TYPES, RUN_STATUSES } from "../../lib/store/contracts.ts";

const text = fc.string({ maxLength: 40 });
const id = fc.string({ minLength: 1, maxLength: 12 });
const count = fc.nat({ max: 1_000_000 });
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const iso = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString());
const role = fc.constantFrom("user" as const, "assistant" as const, "system" as const);
const json = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.parse(JSON.stringify(value)));
const usage = fc.record({
  inputTokens: nullable(count),
  outputTokens: nullable(count),
  cacheReadTokens: nullable(count),
  cacheWriteTokens: nullable(count),
  reasoningTokens: nullable(count),
  costUsd: nullable(fc.double({ min: 0, max: 1000, noNaN: true, noDefaultInfinity: true })),
  requests: nullable(count),
});

/** What a driver knows of its agent: any of the fields, or none. */
const agent = fc.record({
  provider: id,
  model: id,
  version: id,
  inputExcludesCache: fc.boolean(),
  inProcess: fc.boolean(),
}, { requiredKeys: [] });
const wireBody = fc.record({
  sha256: fc.stringMatching(/^[0-9a-f]{64}$/),
  bytes: count,
});
const modelCall = fc.record({
  id,
  model: id,
  stopReason: nullable(text),
  usage: fc.record({ inputTokens: count, cacheReadTokens: count }, { requiredKeys: [] }),
}, { requiredKeys: ["id"] });

const payloads: { [T in EventType]: fc.Arbitrary<Extract<EventInput, { type: T }>["payload"]> } = {
  "run.started": fc.record({
    harness: text,
    driver: text,
    cwd: text,
    goal: nullable(text),
    contextId: nullable(text),
    resumeOf: nullable(text),
    agent,
  }, { requiredKeys: ["harness", "driver", "cwd", "goal", "contextId", "resumeOf"] }),
  "session.linked": fc.record({ nativeSessionId: id, agent }, {
    requiredKeys: ["nativeSessionId"],
  }),
  "message.delta": fc.record({ role, text }),
  "message.completed": fc.record({ role, text, modelCall }, { requiredKeys: ["role", "text"] }),
  "model.requested": fc.record({ historyLength: count, toolCount: count }),
  "model.completed": fc.record({
    text: nullable(text),
    toolCalls: fc.array(fc.record({ id, name: id, args: json }), { maxLength: 2 }),
    stopReason: nullable(text),
    usage: nullable(fc.record({ inputTokens: count, outputTokens: count }, { requiredKeys: [] })),
    reasoning: nullable(text),
  }),
  "model.call.started": fc.record({
    callId: id,
    wire: fc.constantFrom("anthropic.messages" as const, "openai.chat" as const, "opaque" as const),
    generates: fc.boolean(),
    route: text,
    method: fc.constantFrom("POST", "GET"),
    path: text,
    model: nullable(text),
    stream: nullable(fc.boolean()),
    headers: fc.dictionary(id, text, { maxKeys: 3 }),
    body: nullable(wireBody),
  }),
  "model.call.completed": fc.record({
    callId: id,
    outcome: fc.constantFrom(
      "ok" as const,
      "error" as const,
      "refused" as const,
      "failed" as const,
      "aborted" as const,
    ),
    status: nullable(fc.integer({ min: 100, max: 599 })),
    headers: fc.dictionary(id, text, { maxKeys: 3 }),
    body: nullable(wireBody),
    chunks: fc.array(fc.tuple(count, fc.nat({ max: 100_000 })).map(([a, b]) => [a, b]), {
      maxLength: 4,
    }),
    model: nullable(text),
    stopReason: nullable(text),
    usage: nullable(fc.record({ inputTokens: count, outputTokens: count }, { requiredKeys: [] })),
    firstByteMs: nullable(fc.nat({ max: 100_000 })),
    durationMs: fc.nat({ max: 100_000 }),
  }),
  "tool.started": fc.record({ callId: id, tool: text, args: json, modelCall }, {
    requiredKeys: ["callId", "tool", "args"],
  }),
  "tool.completed": fc.record({
    callId: id,
    ok: fc.boolean(),
    result: json,
    startedAt: nullable(iso),
    finishedAt: nullable(iso),
  }),
  "approval.requested": fc.record({ approvalId: id, tool: text, args: json }),
  "approval.resolved": fc.record({
    approvalId: id,
    decision: fc.constantFrom("allow" as const, "deny" as const),
    by: text,
  }),
  "question.requested": fc.record({ questionId: id, text }),
  "question.answered": fc.record({ questionId: id, answer: text }),
  "usage.updated": usage,
  "compaction.started": fc.record({ stage: text }),
  "compaction.completed": fc.record({ stage: text, before: count, after: count }),
  "budget.warning": fc.record({ ratio: fc.double({ min: 0, max: 2, noNaN: true }) }),
  "heartbeat": fc.record({ iteration: count }),
  "network.connection": fc.record({
    host: id,
    port: fc.integer({ min: 1, max: 65535 }),
    allowed: fc.boolean(),
    bytesSent: count,
    bytesReceived: count,
  }),
  "attachment.added": fc.record({
    name: id,
    path: id,
    contentType: text,
    bytes: count,
    sha256: fc.stringMatching(/^[0-9a-f]{64}$/),
  }),
  "status.changed": fc.record({ status: fc.constantFrom(...RUN_STATUSES), reason: nullable(text) }),
  "problem": fc.record({ source: text, reason: text }),
  "completed": fc.record({ reason: nullable(text), result: json }),
  "failed": fc.record({ reason: nullable(text), result: json }),
};

/** Any valid event input (settling ones rarer, so runs have a life before they settle). */
export const eventInput: fc.Arbitrary<EventInput> = fc.oneof(
  ...EVENT_TYPES.map((type) => ({
    weight: type === "completed" || type === "failed" || type === "status.changed" ? 1 : 3,
    arbitrary: payloads[type].map((payload) => ({ type, payload }) as EventInput),
  })),
);

/** A patch for RunAppender.update. */
export const runPatch = fc.record({
  exitCode: nullable(fc.integer({ min: -1, max: 255 })),
  goal: nullable(text),
  relation: nullable(text),
  status: fc.constantFrom(...RUN_STATUSES),
  terminalReason: nullable(text),
}, { requiredKeys: [] });

/** Any JSON value, to put where a valid field was. */
export const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 1 }),
  fc.constantFrom(null, "", -1, 1.5, "2026-13-01T00:00:00Z", "not a date", [], {}),
);
