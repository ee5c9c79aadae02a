import assert from "node:assert/strict";
import type { EventInput, RunEvent } from "../../lib/store/contracts.ts";
import { pendingDecisions } from "../../lib/store/decisions.ts";
import type { Store } from "../../lib/store/store.ts";
import { runInit, storeHome } from "./_helpers.ts";

const usage = (inputTokens: number, costUsd: number | null): EventInput => ({
  type: "usage.updated",
  payload: {
    inputTokens,
    outputTokens: 1,
    cacheReadTokens: null,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    costUsd,
    requests: 1,
  },
});

function run(store: Store, parentRunId: string | null, events: EventInput[], settle = true) {
  const writer = store.createRun(runInit({ parentRunId }));
  for (const event of events) writer.append(event);
  if (settle) writer.append({ type: "completed", payload: { reason: null, result: null } });
  writer.close();
  return writer.runId;
}

Deno.test("runFamily() gathers a root and all its descendants, oldest first, from any member", async () => {
  await using home = await storeHome();
  const root = run(home.store, null, [usage(10, 0.5)]);
  const child = run(home.store, root, [usage(5, 0.25), usage(7, 0.25)]);
  const grandchild = run(home.store, child, [usage(1, 0.125)]);
  const sibling = run(home.store, root, [usage(2, 0.125)]);
  run(home.store, null, [usage(100, 1)]); // not of the family
  for (const member of [root, grandchild]) {
    const family = home.store.runFamily(member);
    assert.equal(family.rootRunId, root);
    assert.deepEqual(family.runs.map((m) => m.record.id), [root, child, grandchild, sibling]);
    assert.deepEqual(family.runs.map((m) => m.usage?.inputTokens), [10, 7, 1, 2]);
    assert.deepEqual(family.usage, {
      inputTokens: 20,
      outputTokens: 4,
      cacheReadTokens: null,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: 1,
      requests: 4,
    });
    assert.equal(family.settled, true);
  }
});

Deno.test("runFamily() sums a counter as null when any member lacks it, and says when one is active", async () => {
  await using home = await storeHome();
  const root = run(home.store, null, [usage(10, 0.5)]);
  run(home.store, root, [], false);
  const family = home.store.runFamily(root);
  assert.equal(family.runs[1].usage, null);
  assert.equal(family.usage.inputTokens, null);
  assert.equal(family.settled, false);
});

Deno.test("runFamily() ignores usage that arrived after a run settled", async () => {
  await using home = await storeHome();
  const root = run(home.store, null, [usage(10, 0.5)]);
  home.store.appendToRun(root, usage(999, 9));
  assert.equal(home.store.runFamily(root).usage.inputTokens, 10);
});

Deno.test("runFamily() stops at a cycle of parents instead of looping", async () => {
  await using home = await storeHome();
  const a = run(home.store, null, []);
  const b = run(home.store, a, []);
  const c = run(home.store, b, []);
  home.store.updateRun(a, { parentRunId: c });
  for (const member of [a, b, c]) {
    const family = home.store.runFamily(member);
    assert.deepEqual(new Set(family.runs.map((m) => m.record.id)), new Set([a, b, c]));
  }
  assert.throws(() => home.store.runFamily("01900000-0000-7000-8000-000000000000"), {
    name: "NotFoundError",
  });
});

Deno.test("sessionEvents() returns a session's events oldest run first, without ignored ones", async () => {
  await using home = await storeHome();
  const say = (text: string): EventInput => ({
    type: "message.completed",
    payload: { role: "user", text },
  });
  const first = home.store.createRun(runInit({ sessionId: "conv" }));
  first.append(say("one"));
  first.append({ type: "completed", payload: { reason: null, result: null } });
  first.append(say("late"));
  first.close();
  const other = home.store.createRun(runInit({ sessionId: "elsewhere" }));
  other.append(say("other"));
  other.close();
  using second = home.store.createRun(runInit({ sessionId: "conv" }));
  second.append(say("two"));
  const texts = (events: RunEvent[]) =>
    events.filter((e) => e.type === "message.completed").map((e) =>
      (e.payload as { text: string }).text
    );
  assert.deepEqual(texts(home.store.sessionEvents("conv")), ["one", "two"]);
  assert.deepEqual(
    texts(home.store.sessionEvents("conv", { excludeRunId: second.runId })),
    ["one"],
  );
  assert.deepEqual(home.store.sessionEvents("nobody"), []);
});

Deno.test("pendingDecisions() lists unanswered approvals and questions, oldest first", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  const ask = (approvalId: string): EventInput => ({
    type: "approval.requested",
    payload: { approvalId, tool: "write_file", args: { path: approvalId } },
  });
  writer.append(ask("a1"));
  writer.append({ type: "question.requested", payload: { questionId: "q1", text: "why?" } });
  writer.append(ask("a2"));
  writer.append(ask("a1"));
  writer.append({ type: "question.requested", payload: { questionId: "q2", text: "how?" } });
  home.store.appendToRun(writer.runId, {
    type: "approval.resolved",
    payload: { approvalId: "a2", decision: "deny", by: "cli" },
  });
  home.store.appendToRun(writer.runId, {
    type: "question.answered",
    payload: { questionId: "q2", answer: "so" },
  });
  const pending = pendingDecisions(home.store.readEvents(writer.runId).events);
  assert.deepEqual(pending.map((d) => [d.kind, d.id, d.sequence]), [
    ["approval", "a1", 1],
    ["question", "q1", 2],
  ]);
  assert.deepEqual(pending[0].payload, {
    approvalId: "a1",
    tool: "write_file",
    args: { path: "a1" },
  });
});

Deno.test("pendingDecisions() counts neither requests nor answers that arrived after the outcome", async () => {
  await using home = await storeHome();
  using writer = home.store.createRun(runInit());
  writer.append({ type: "question.requested", payload: { questionId: "q1", text: "?" } });
  writer.append({ type: "failed", payload: { reason: "stopped", result: null } });
  writer.append({ type: "question.answered", payload: { questionId: "q1", answer: "late" } });
  writer.append({ type: "question.requested", payload: { questionId: "q2", text: "late?" } });
  const pending = pendingDecisions(home.store.readEvents(writer.runId).events);
  assert.deepEqual(pending.map((d) => d.id), ["q1"]);
});
