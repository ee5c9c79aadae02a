// What replay reads from a recording and how it compares a replay with it, over recorded runs.
// Replaying for real is tested end to end in tests/e2e/replay_test.ts.
import assert from "node:assert/strict";
import { UsageError } from "../../lib/core/errors.ts";
import type { RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { parseEventLog } from "../../lib/store/event_log.ts";
import {
  canonicalJson,
  compareReplay,
  copyWorkingDirectory,
  recordedOutputs,
  replayPlan,
} from "../../lib/session/replay.ts";

const FIXTURES = new URL("../fixtures/session/", import.meta.url).pathname;

function loadFixture(name: string): { record: RunRecord; events: RunEvent[] } {
  const record = JSON.parse(Deno.readTextFileSync(`${FIXTURES}${name}/run.json`)) as RunRecord;
  const read = parseEventLog(Deno.readTextFileSync(`${FIXTURES}${name}/events.jsonl`), record.id);
  return { record, events: read.events };
}

Deno.test("recordedOutputs() returns the model.completed payloads in order", () => {
  const { events } = loadFixture("loop_tools");
  const outputs = recordedOutputs(events);
  assert.deepEqual(
    outputs,
    events.filter((event) => event.type === "model.completed").map((event) => event.payload),
  );
  assert.deepEqual(outputs.map((output) => output.toolCalls.map((call) => call.id)), [
    ["call_list", "call_notes"],
    ["call_missing", "call_check"],
    ["call_write"],
    ["call_cat"],
    [],
  ]);
});

Deno.test("replayPlan() takes the prompt and runs tools freely when the recording asked nothing", () => {
  const { record, events } = loadFixture("loop_tools");
  const plan = replayPlan(record, events);
  assert.equal(plan.prompt, "look at the notes");
  assert.equal(plan.approval, "auto");
  assert.equal(plan.outputs.length, 5);
  assert.equal(plan.decisions.size, 0);
});

Deno.test("replayPlan() answers approvals as the recording answered them", () => {
  const { record, events } = loadFixture("approval_denied");
  const plan = replayPlan(record, events);
  assert.equal(plan.approval, "ask");
  assert.deepEqual([...plan.decisions], [
    ["approval-1", { decision: "deny", by: "cli", reason: "not in this fixture" }],
  ]);
});

Deno.test("replayPlan() refuses a run of another driver than the loop", () => {
  const { record, events } = loadFixture("command_agent");
  assert.throws(() => replayPlan(record, events), (error: unknown) => {
    assert.ok(error instanceof UsageError);
    assert.match(error.message, /it ran the command driver, not the built-in loop/);
    return true;
  });
});

/** The recording's events as a replay would record them: new ids and times, same contents. */
function asReplay(events: RunEvent[]): RunEvent[] {
  return events.map((event) => ({ ...event, id: `${event.id}-replay`, runId: "replay-run" }));
}

Deno.test("compareReplay() finds no divergence when every tool result and output matches", () => {
  const { events } = loadFixture("loop_tools");
  assert.deepEqual(compareReplay(events, asReplay(events)), {
    diverged: false,
    divergences: [],
    modelOutputs: { recorded: 5, served: 5 },
    toolResults: { recorded: 6, replayed: 6, differing: 0 },
  });
});

Deno.test("compareReplay() says at which event and tool call a result first differed", () => {
  const { events } = loadFixture("loop_tools");
  const replayed = asReplay(events).map((event) =>
    event.type === "tool.completed" && event.payload.callId === "call_notes"
      ? { ...event, payload: { ...event.payload, result: "changed\n" } }
      : event
  );
  const verdict = compareReplay(events, replayed);
  assert.equal(verdict.diverged, true);
  assert.equal(verdict.toolResults.differing, 1);
  assert.deepEqual(verdict.divergences, [{
    kind: "tool-result",
    sequence: 9,
    recordedSequence: 9,
    callId: "call_notes",
    tool: "read_file",
    recorded: { ok: true, result: "first line\nsecond line\n\tindented third\n" },
    replayed: { ok: true, result: "changed\n" },
  }]);
});

Deno.test("compareReplay() ignores tool timings and key order", () => {
  const { events } = loadFixture("loop_tools");
  const replayed = asReplay(events).map((event) =>
    event.type === "tool.completed"
      ? {
        ...event,
        payload: Object.fromEntries(
          Object.entries({
            ...event.payload,
            startedAt: "2030-01-01T00:00:00.000Z",
            finishedAt: "2030-01-01T00:00:09.000Z",
          }).reverse(),
        ),
      } as RunEvent
      : event
  );
  assert.equal(compareReplay(events, replayed).diverged, false);
});

Deno.test("compareReplay() says the script ran out when the replay asked for one output more", () => {
  const { events } = loadFixture("loop_tools");
  const lastAnswer = events.findLast((event) => event.type === "model.completed")!;
  const recording = events.filter((event) => event !== lastAnswer);
  const asked = events.findLast((event) => event.type === "model.requested")!;
  const replayed = [
    ...asReplay(events.slice(0, events.indexOf(asked) + 1)),
    {
      ...events.at(-1)!,
      sequence: asked.sequence + 1,
      type: "failed",
      payload: { reason: "Cannot replay model call 5", result: null },
    } as RunEvent,
  ];
  const verdict = compareReplay(recording, replayed);
  assert.deepEqual(verdict.divergences, [
    { kind: "script-ran-out", sequence: asked.sequence, modelCall: 5, recordedOutputs: 4 },
    { kind: "outcome", sequence: asked.sequence + 1, recorded: "completed", replayed: "failed" },
  ]);
});

Deno.test("compareReplay() says when the replay settled before using every recorded output", () => {
  const { events } = loadFixture("loop_tools");
  const firstAnswer = events.findIndex((event) => event.type === "model.completed");
  const replayed = [
    ...asReplay(events.slice(0, firstAnswer + 1)),
    { ...events.at(-1)!, sequence: events[firstAnswer].sequence + 1 } as RunEvent,
  ];
  const verdict = compareReplay(events, replayed);
  assert.deepEqual(verdict.divergences, [{
    kind: "unused-outputs",
    sequence: events[firstAnswer].sequence + 1,
    served: 1,
    recordedOutputs: 5,
  }]);
});

Deno.test("canonicalJson() writes equal values alike whatever their key order", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("copyWorkingDirectory() copies files, directories and links into a new temp dir", async () => {
  const from = await Deno.makeTempDir({ prefix: "reins-copy-from-" });
  let to = "";
  try {
    Deno.mkdirSync(`${from}/sub/deeper`, { recursive: true });
    Deno.writeTextFileSync(`${from}/a.txt`, "a");
    Deno.writeTextFileSync(`${from}/sub/deeper/b.sh`, "echo b", { mode: 0o755 });
    Deno.chmodSync(`${from}/sub/deeper/b.sh`, 0o755);
    Deno.symlinkSync("a.txt", `${from}/link`);
    to = await copyWorkingDirectory(from);
    assert.notEqual(to, from);
    assert.equal(Deno.readTextFileSync(`${to}/a.txt`), "a");
    assert.equal(Deno.readTextFileSync(`${to}/sub/deeper/b.sh`), "echo b");
    assert.equal(Deno.statSync(`${to}/sub/deeper/b.sh`).mode! & 0o777, 0o755);
    assert.equal(Deno.readLinkSync(`${to}/link`), "a.txt");
  } finally {
    await Deno.remove(from, { recursive: true });
    if (to) await Deno.remove(to, { recursive: true });
  }
});

Deno.test("copyWorkingDirectory() says so when the recorded directory is gone", async () => {
  await assert.rejects(copyWorkingDirectory("/nonexistent/reins-recorded-cwd"), (error) => {
    assert.ok(error instanceof UsageError);
    assert.match(error.message, /it is gone/);
    assert.equal(error.hint, "give the directory to replay in with --cwd DIR");
    return true;
  });
});
