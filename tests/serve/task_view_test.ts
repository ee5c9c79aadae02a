// TaskView: a run's events folded into an A2A Task and the stream items they cause. Real events,
// recorded through the store into a temp data root and read back, as GetTask reads them.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { EventInput } from "../../lib/store/contracts.ts";
import { openStore } from "../../lib/store/store.ts";
import { CANCEL_REASON, TaskView } from "../../lib/serve/task_view.ts";
import type { StreamResponse } from "../../lib/serve/a2a/wire.ts";

async function recorded(
  events: EventInput[],
  body: (view: TaskView, items: StreamResponse[]) => void,
) {
  const dir = await Deno.makeTempDir({ prefix: "reins-view-" });
  try {
    using store = openStore(`${dir}/home`);
    const writer = store.createRun({
      sessionId: "s",
      contextId: "c",
      harness: "command",
      driver: "command",
      trigger: "a2a",
      cwd: dir,
      goal: "the prompt",
    });
    const live = new TaskView(store.loadRun(writer.runId));
    const items = live.apply(writer.started);
    for (const event of events) items.push(...live.apply(writer.append(event)));
    writer.close();
    const fromDisk = TaskView.fromRecord(
      store.loadRun(writer.runId),
      store.readEvents(writer.runId).events,
    );
    assert.deepEqual(fromDisk.snapshot(), live.snapshot(), "live and recorded views agree");
    body(fromDisk, items);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const textOf = (items: StreamResponse[]) =>
  items.flatMap((item) => "artifactUpdate" in item ? item.artifactUpdate.artifact.parts : [])
    .map((part) => part.text ?? "").join("");

const message = fc.oneof(
  fc.array(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }).map(
    (deltas) => ({ deltas, completed: deltas.join("") }),
  ),
  fc.string({ minLength: 1, maxLength: 12 }).map((text) => ({ deltas: [], completed: text })),
);

Deno.test("TaskView streams assistant text that reassembles to the artifact GetTask gives", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(message, { maxLength: 5 }), async (messages) => {
      const events: EventInput[] = [];
      for (const m of messages) {
        for (const text of m.deltas) {
          events.push({ type: "message.delta", payload: { role: "assistant", text } });
        }
        events.push({
          type: "message.completed",
          payload: { role: "assistant", text: m.completed },
        });
      }
      events.push({ type: "completed", payload: { reason: null, result: null } });
      await recorded(events, (view, items) => {
        const task = view.snapshot();
        assert.equal(task.status.state, "TASK_STATE_COMPLETED");
        const artifact = task.artifacts?.[0].parts[0].text ?? "";
        assert.equal(textOf(items), artifact);
        // Every message's text is there, in order.
        let at = 0;
        for (const m of messages) {
          const found = artifact.indexOf(m.completed, at);
          assert.ok(found >= 0, `${JSON.stringify(m.completed)} in ${JSON.stringify(artifact)}`);
          at = found + m.completed.length;
        }
        const chunks = items.filter((item) => "artifactUpdate" in item);
        if (chunks.length > 0) {
          const last = chunks.at(-1) as Extract<StreamResponse, { artifactUpdate: unknown }>;
          assert.equal(last.artifactUpdate.lastChunk, true);
        }
        const final = items.at(-1) as Extract<StreamResponse, { statusUpdate: unknown }>;
        assert.equal(final.statusUpdate.status.state, "TASK_STATE_COMPLETED");
      });
    }),
    { numRuns: 40 },
  );
});

Deno.test("TaskView: the loop's streamed model calls are each a piece of the artifact, the final answer once", async () => {
  const call = (text: string, tools: boolean): EventInput[] => [
    { type: "model.requested", payload: { historyLength: 2, toolCount: 5 } },
    { type: "message.delta", payload: { role: "assistant", text: text.slice(0, 3) } },
    { type: "message.delta", payload: { role: "assistant", text: text.slice(3) } },
    {
      type: "model.completed",
      payload: {
        text,
        toolCalls: tools ? [{ id: "c1", name: "list_files", args: {} }] : [],
        stopReason: tools ? "tool_use" : "end_turn",
        usage: null,
        reasoning: null,
      },
    },
  ];
  await recorded([
    ...call("Let me look.", true),
    {
      type: "tool.started",
      payload: { callId: "c1", tool: "list_files", args: {} },
    },
    {
      type: "tool.completed",
      payload: { callId: "c1", ok: true, result: "a.txt", startedAt: null, finishedAt: null },
    },
    ...call("Done: one file.", false),
    { type: "message.completed", payload: { role: "assistant", text: "Done: one file." } },
    { type: "completed", payload: { reason: null, result: "Done: one file." } },
  ], (view, items) => {
    const artifact = view.snapshot().artifacts?.[0].parts[0].text ?? "";
    assert.equal(artifact, "Let me look.\nDone: one file.");
    assert.equal(textOf(items), artifact);
  });
});

Deno.test("TaskView: a pending approval is INPUT_REQUIRED with the question; the answer resumes WORKING", async () => {
  await recorded([
    {
      type: "approval.requested",
      payload: { approvalId: "a1", tool: "write_file", args: { path: "x" } },
    },
    { type: "status.changed", payload: { status: "waiting", reason: "waiting for approval a1" } },
    {
      type: "approval.resolved",
      payload: { approvalId: "a1", decision: "deny", by: "a2a", reason: "no" },
    },
    { type: "status.changed", payload: { status: "running", reason: null } },
    { type: "failed", payload: { reason: "the tool was refused", result: null } },
  ], (view, items) => {
    const states = items.flatMap((item) =>
      "statusUpdate" in item ? [item.statusUpdate.status.state] : []
    );
    assert.deepEqual(states, [
      "TASK_STATE_INPUT_REQUIRED",
      "TASK_STATE_WORKING",
      "TASK_STATE_FAILED",
    ]);
    const task = view.snapshot();
    assert.deepEqual(task.status.message?.parts, [{
      text: "The run failed: the tool was refused",
    }]);
    assert.deepEqual(task.history?.map((m) => [m.role, m.parts[0].text]), [
      ["ROLE_USER", "the prompt"],
      [
        "ROLE_AGENT",
        'The agent asks to use write_file with {"path":"x"}. Reply "allow" or "deny" on this task.',
      ],
      ["ROLE_USER", "deny: no"],
    ]);
    assert.equal(view.snapshot({ historyLength: 1 }).history?.length, 1);
    assert.equal("history" in view.snapshot({ historyLength: 0 }), false);
  });
});

Deno.test("TaskView: interrupted by CancelTask is CANCELED; interrupted otherwise is FAILED with why", async () => {
  await recorded([
    { type: "status.changed", payload: { status: "interrupted", reason: CANCEL_REASON } },
  ], (view) => assert.equal(view.state, "TASK_STATE_CANCELED"));
  await recorded([
    { type: "status.changed", payload: { status: "interrupted", reason: "reins serve stopped" } },
  ], (view) => {
    assert.equal(view.state, "TASK_STATE_FAILED");
    assert.equal(
      view.snapshot().status.message?.parts[0].text,
      "The run was interrupted: reins serve stopped",
    );
  });
});

Deno.test("TaskView: tool calls, usage and problems are WORKING updates with a data part", async () => {
  await recorded([
    { type: "tool.started", payload: { callId: "c", tool: "grep", args: { q: "x" } } },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 5,
        outputTokens: 2,
        cacheReadTokens: null,
        cacheWriteTokens: null,
        reasoningTokens: null,
        costUsd: 0.5,
        requests: 1,
      },
    },
    { type: "problem", payload: { source: "command", reason: "a bad line" } },
  ], (view, items) => {
    const parts = items.flatMap((item) =>
      "statusUpdate" in item ? item.statusUpdate.status.message?.parts ?? [] : []
    );
    assert.deepEqual(parts.map((p) => p.text ?? (p.data as { event: string }).event), [
      'running grep {"q":"x"}',
      "tool.started",
      "usage: 5 tokens in, 2 out, $0.5000",
      "usage.updated",
      "problem (command): a bad line",
      "problem",
    ]);
    const metadata = view.snapshot().metadata?.reins as { usage: { costUsd: number } };
    assert.equal(metadata.usage.costUsd, 0.5);
  });
});

// regression: a harness's answer came out twice ("First answer.\nFirst answer.") when the
// gateway's deltas of it were recorded after the harness's own message.completed (they follow the
// saving of the call's bodies): tests/interop/serve_test.ts under load
Deno.test("TaskView: a harness message reported before the gateway's deltas of it is in the artifact once", async () => {
  await recorded([
    { type: "message.completed", payload: { role: "assistant", text: "First answer." } },
    { type: "message.delta", payload: { role: "assistant", text: "First " } },
    { type: "message.delta", payload: { role: "assistant", text: "answer." } },
    { type: "completed", payload: { reason: null, result: "First answer." } },
  ], (view, items) => {
    const artifact = view.snapshot().artifacts?.[0].parts[0].text ?? "";
    assert.equal(artifact, "First answer.");
    assert.equal(textOf(items), artifact);
  });
});
