// One recorded run (made with the real store) as one platform scenario.
import assert from "node:assert/strict";
import { Layout } from "../../lib/core/layout.ts";
import { openStore } from "../../lib/store/store.ts";
import { resultOf } from "../../lib/platform/payloads.ts";
import { runReportOf, scenarioKeyOf } from "../../lib/platform/run_outcome.ts";
import { tempDir } from "../support/reins.ts";
import { conversation, makeRun } from "./_runs.ts";

Deno.test("runReportOf() turns a completed run into a passed scenario with its transcript", async () => {
  await using dir = await tempDir();
  const { record, events } = await makeRun(dir.path, {
    outcome: { status: "completed", result: "The tests pass now.\nDetails follow." },
  });
  const report = runReportOf(record, events, { runDir: new Layout(dir.path).run(record.id) });
  const key = scenarioKeyOf(record);
  assert.match(key, /^fix-the-failing-test-[0-9a-f]{8}$/);
  assert.deepEqual(report.scenario, {
    name: key,
    scenarioKey: key,
    useCase: "Fix the failing test.",
    tests: "",
    instruction: "Fix the failing test.",
    persona: {},
  });
  const result = resultOf(report.outcome);
  assert.deepEqual(result.status, "completed");
  assert.deepEqual(result.call_summary, `${key}: passed (0/0)`);
  assert.deepEqual(result.call_metadata.reins_answer, "The tests pass now.\nDetails follow.");
  assert.deepEqual([result.call_metadata.harness_met, result.call_metadata.harness_of], [0, 0]);
  assert.deepEqual(result.ended_reason, "completed");
  assert.deepEqual(result.transcript, [
    { speaker_role: "user", content: "Fix the failing test." },
    { speaker_role: "tool_calls", content: 'run_command({"cmd": "deno test", "cwd": "."})' },
    { speaker_role: "tool_call_result", content: "ok | 3 passed | 0 failed" },
    { speaker_role: "assistant", content: "The tests pass now." },
  ]);
  assert.deepEqual(result.call_metadata.harness_passed, true);
  assert.deepEqual(result.call_metadata.harness_spent_usd, 0.0123);
  assert.deepEqual(result.call_metadata.reins_run_id, record.id);
  assert.deepEqual(result.call_metadata.reins_harness, "claude-code");
  assert.deepEqual(report.recordings, []);
});

Deno.test("runReportOf() reports a run that never got going as failed, with why", async () => {
  await using dir = await tempDir();
  const { record, events } = await makeRun(dir.path, {
    events: [],
    outcome: { status: "failed", reason: "claude: program not found" },
  });
  const result = resultOf(runReportOf(record, events, { runDir: "/x" }).outcome);
  assert.deepEqual(result.status, "failed");
  assert.deepEqual(result.error_message, "the run never got going: claude: program not found");
  assert.deepEqual(result.duration_seconds, 0);
  assert.deepEqual(result.call_metadata.harness_passed, false);
  // The goal is still what the user said.
  assert.deepEqual(result.transcript, [{ speaker_role: "user", content: "Fix the failing test." }]);
});

// regression: a run that could not finish arrived as `completed`, its reason only in ended_reason
Deno.test("runReportOf() reports a run that ran and then failed or was interrupted as failed, with why", async () => {
  await using dir = await tempDir();
  for (
    const [status, reason, said] of [
      [
        "failed",
        "The model endpoint failed with 503",
        "the run failed: The model endpoint failed with 503",
      ],
      ["failed", "timed out after 30 s", "the run failed: timed out after 30 s"],
      ["interrupted", "stopped by SIGINT", "the run was interrupted: stopped by SIGINT"],
      ["interrupted", null, "the run was interrupted: no reason was recorded"],
    ] as const
  ) {
    const { record, events } = await makeRun(dir.path, { outcome: { status, reason } });
    const report = runReportOf(record, events, { runDir: "/x" });
    const result = resultOf(report.outcome);
    assert.deepEqual(result.status, "failed", status);
    assert.deepEqual(result.error_message, said);
    assert.deepEqual(result.ended_reason, reason ?? status);
    assert.deepEqual(result.call_summary, `${report.scenario.name}: error (0/0)`);
    assert.deepEqual(result.call_metadata.harness_passed, false);
  }
});

Deno.test("runReportOf() refuses a run that is still running", async () => {
  await using dir = await tempDir();
  const { record, events } = await makeRun(dir.path, { outcome: "running" });
  assert.throws(() => runReportOf(record, events, { runDir: "/x" }), RangeError);
});

Deno.test("runReportOf() leaves out events marked ignored and flushes unfinished deltas", async () => {
  await using dir = await tempDir();
  const { record, events } = await makeRun(dir.path, {
    goal: null,
    events: [
      { type: "message.completed", payload: { role: "user", text: "hello" } },
      { type: "message.delta", payload: { role: "assistant", text: "Hi " } },
      { type: "message.delta", payload: { role: "assistant", text: "there" } },
      { type: "question.requested", payload: { questionId: "q1", text: "Which branch?" } },
      { type: "question.answered", payload: { questionId: "q1", answer: "main" } },
      {
        type: "approval.requested",
        payload: { approvalId: "c9", tool: "rm", args: { path: "/" } },
      },
      {
        type: "approval.resolved",
        payload: { approvalId: "c9", decision: "deny", by: "policy", reason: null },
      },
      { type: "tool.started", payload: { callId: "c9", tool: "rm", args: { path: "/" } } },
      {
        type: "tool.completed",
        payload: {
          callId: "c9",
          ok: false,
          error: "denied by policy",
          startedAt: null,
          finishedAt: null,
        },
      },
    ],
  });
  // A late message after the outcome is stored as ignored evidence.
  using store = openStore(dir.path);
  store.appendToRun(record.id, {
    type: "message.completed",
    payload: { role: "assistant", text: "too late" },
  });
  const all = store.readEvents(record.id).events;
  assert.ok(all.some((event) => event.ignored !== undefined));
  const result = resultOf(runReportOf(record, all, { runDir: "/x" }).outcome);
  assert.deepEqual(result.transcript, [
    { speaker_role: "user", content: "hello" },
    { speaker_role: "assistant", content: "Hi there" },
    { speaker_role: "assistant", content: "Which branch?" },
    { speaker_role: "user", content: "main" },
    { speaker_role: "tool_calls", content: 'rm({"path": "/"})' },
    { speaker_role: "tool_call_result", content: "refused: denied by policy" },
  ]);
  assert.ok(events.length > 0);
});

Deno.test("runReportOf() lists attachments as recordings with absolute paths", async () => {
  await using dir = await tempDir();
  const source = `${dir.path}/call.wav`;
  await Deno.writeFile(source, new Uint8Array([1, 2, 3]));
  const { record, events } = await makeRun(`${dir.path}/home`, {
    events: conversation(),
    attach: [source],
  });
  const report = runReportOf(record, events, {
    runDir: new Layout(`${dir.path}/home`).run(record.id),
  });
  assert.deepEqual(report.recordings, [{
    name: "call.wav",
    path: `${dir.path}/home/runs/${record.id}/attachments/call.wav`,
    contentType: "audio/wav",
    bytes: 3,
    sha256: "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81",
  }]);
});

Deno.test("scenarioKeyOf() is stable for the same goal and differs for another", async () => {
  await using dir = await tempDir();
  const a = await makeRun(dir.path, { goal: "Deploy the app" });
  const b = await makeRun(dir.path, { goal: "Deploy the app" });
  const c = await makeRun(dir.path, { goal: "Deploy the app to staging" });
  const d = await makeRun(dir.path, { goal: "Café — naïve ünïcödé" });
  assert.deepEqual(scenarioKeyOf(a.record), scenarioKeyOf(b.record));
  assert.notDeepEqual(scenarioKeyOf(a.record), scenarioKeyOf(c.record));
  assert.match(scenarioKeyOf(d.record), /^cafe-naive-unicode-[0-9a-f]{8}$/);
});
