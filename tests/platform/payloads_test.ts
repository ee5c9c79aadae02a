// The seed's payload shapes, field for field. Expected values were worked out from platform.py's
// code (and the digest and display names printed by CPython running the same expressions).
import assert from "node:assert/strict";
import {
  agentNameOf,
  conversationSeconds,
  displayRunName,
  displayScenarioName,
  evaluationsOf,
  personaOf,
  pySlice,
  pyStrip,
  resultDigest,
  resultOf,
  type ScenarioOutcome,
  segmentsOf,
  selectorOf,
  verdictLine,
} from "../../lib/platform/payloads.ts";
import { ResultBody } from "../../lib/platform/wire.ts";

const AT = new Date(Date.UTC(2026, 0, 5, 14, 3, 59));

Deno.test("displayRunName() titles the agent and stamps the time as the seed does", () => {
  const cases: [string, string][] = [
    ["claude-code", "Claude Code · 05 Jan 2026 14:03 UTC"],
    ["openAI_codex", "Openai Codex · 05 Jan 2026 14:03 UTC"],
    ["", "Agent · 05 Jan 2026 14:03 UTC"],
    ["GPT-5 agent", "GPT 5 Agent · 05 Jan 2026 14:03 UTC"],
    ["  my__agent  ", "My Agent · 05 Jan 2026 14:03 UTC"],
    ["ÉCOLE bot", "ÉCOLE Bot · 05 Jan 2026 14:03 UTC"],
    ["日本 agent", "日本 Agent · 05 Jan 2026 14:03 UTC"],
  ];
  for (const [agent, expected] of cases) {
    assert.deepEqual(displayRunName(agent, AT), expected, agent);
  }
});

Deno.test("displayRunName() cuts at 255 code points, not UTF-16 units", () => {
  const name = displayRunName("😀".repeat(300), AT);
  assert.deepEqual([...name].length, 255);
});

Deno.test("displayScenarioName() prefers the use case, then the tests, then the slugged name", () => {
  assert.deepEqual(
    displayScenarioName({ name: "x", useCase: " Refund a ticket. ", tests: "t" }),
    "Refund a ticket",
  );
  assert.deepEqual(
    displayScenarioName({ name: "x", useCase: "", tests: "Checks refunds..." }),
    "Checks refunds",
  );
  assert.deepEqual(displayScenarioName({ name: "refund_flow-2" }), "Refund flow 2");
  assert.deepEqual(displayScenarioName({ name: "" }), "Scenario");
});

Deno.test("personaOf() and selectorOf() build the seed's persona and selector records", () => {
  const scenario = {
    name: "refund-flow",
    scenarioKey: "refund-flow-1a2b",
    useCase: "Refund a ticket",
    tests: "The refund is issued",
    instruction: "You bought a ticket and want your money back.",
    persona: { name: "Dana", occupation: "teacher", age: 41 },
  };
  assert.deepEqual(personaOf(scenario), {
    name: "Dana",
    scenario_key: "refund-flow-1a2b",
    scenario_name: "Refund a ticket",
    role: "teacher",
    situation: "You bought a ticket and want your money back.",
    outcome: "The refund is issued",
    persona: { name: "Dana", occupation: "teacher", age: 41 },
  });
  assert.deepEqual(selectorOf(scenario), { scenario_key: "refund-flow", persona_name: "Dana" });
  assert.deepEqual(personaOf({ name: "" }).name, "caller");
  assert.deepEqual(agentNameOf("Claude Code · 05 Jan 2026 14:03 UTC"), "Claude Code");
  assert.deepEqual(agentNameOf("nightly"), "nightly");
});

Deno.test("segmentsOf() maps speakers and writes tool calls as call and result rows", () => {
  const rows = segmentsOf([
    { kind: "message", speaker: "Customer", text: "  I want a refund \n" },
    { kind: "message", speaker: "agent", text: "Sure." },
    { kind: "message", speaker: "narrator", text: "who knows" },
    { kind: "message", speaker: "assistant", text: "   " },
    { kind: "tool", name: "refund", arguments: { id: 7, note: "é" }, result: { ok: true } },
    { kind: "tool", name: "delete", arguments: {}, error: "not allowed", refused: true },
    { kind: "tool", name: "noop", arguments: undefined, result: 0 },
  ]);
  assert.deepEqual(rows, [
    { speaker_role: "user", content: "I want a refund" },
    { speaker_role: "assistant", content: "Sure." },
    { speaker_role: "user", content: "who knows" },
    { speaker_role: "tool_calls", content: 'refund({"id": 7, "note": "\\u00e9"})' },
    { speaker_role: "tool_call_result", content: '{"ok": true}' },
    { speaker_role: "tool_calls", content: "delete({})" },
    { speaker_role: "tool_call_result", content: "refused: not allowed" },
    { speaker_role: "tool_calls", content: "noop({})" },
    { speaker_role: "tool_call_result", content: "" },
  ]);
});

Deno.test("segmentsOf() passes measured timings through and invents none", () => {
  const rows = segmentsOf([
    { kind: "message", speaker: "user", text: "hi", startTimeMs: 120.9, endTimeMs: 900 },
    { kind: "message", speaker: "assistant", text: "hello" },
  ]);
  assert.deepEqual(rows, [
    { speaker_role: "user", content: "hi", start_time_ms: 120, end_time_ms: 900 },
    { speaker_role: "assistant", content: "hello" },
  ]);
});

Deno.test("segmentsOf() cuts a tool result at 4000 code points", () => {
  const [, result] = segmentsOf([
    { kind: "tool", name: "read", arguments: {}, result: "😀".repeat(5000) },
  ]);
  assert.deepEqual([...result.content].length, 4000);
});

Deno.test("evaluationsOf() keeps checkpoints and applicable metrics apart", () => {
  const outcome: ScenarioOutcome = {
    scenario: "s",
    transcript: [],
    passed: false,
    checkpoints: [
      {
        name: "refund issued",
        kind: "state",
        passed: true,
        detail: "row 7",
        by: "Refund judge (gpt-5)",
      },
      { name: "polite", passed: false, detail: "x".repeat(2500), gradingError: true },
      { name: "", passed: true },
    ],
    metrics: [
      { name: "empathy", score: 0.75, reason: "kind" },
      { name: "latency", score: 1, applicable: false },
    ],
  };
  assert.deepEqual(evaluationsOf(outcome), [
    {
      name: "refund issued",
      kind: "state",
      passed: true,
      reason: "row 7",
      decided_by: "Refund judge (gpt-5)",
      platform_template: "Refund judge",
    },
    {
      name: "polite",
      kind: "checkpoint",
      passed: false,
      reason: "x".repeat(2000),
      decided_by: "",
      platform_template: "",
      grading_error: true,
    },
    { name: "empathy", kind: "metric", score: 0.75, reason: "kind" },
  ]);
});

Deno.test("conversationSeconds() uses measured turns, else the wall clock, else 0 for a no-show", () => {
  const base = { scenario: "s", passed: true, seconds: 42.9 };
  assert.deepEqual(conversationSeconds({ ...base, transcript: [] }), 42);
  assert.deepEqual(
    conversationSeconds({
      ...base,
      transcript: [
        { kind: "message", speaker: "user", text: "a", startTimeMs: 1000, endTimeMs: 2000 },
        { kind: "message", speaker: "assistant", text: "b", startTimeMs: 2500, endTimeMs: 9999 },
      ],
    }),
    8,
  );
  assert.deepEqual(
    conversationSeconds({ ...base, transcript: [], problems: ["never started"] }),
    0,
  );
});

Deno.test("resultOf() builds the seed's result, call_metadata and digest field for field", () => {
  const outcome: ScenarioOutcome = {
    scenario: "refund-flow",
    transcript: [
      { kind: "message", speaker: "user", text: "Refund please" },
      { kind: "message", speaker: "assistant", text: "Done." },
    ],
    checkpoints: [
      { name: "refund issued", kind: "state", passed: true, detail: "row 7" },
      { name: "email sent", kind: "state", passed: false, detail: "no mail" },
    ],
    ended: "completed",
    passed: true,
    spentUsd: 0.123456,
    seconds: 3.7,
    metadata: { reins_run_id: "r1" },
  };
  const result = resultOf(outcome);
  const { result_digest: digest, ...rest } = result;
  assert.deepEqual(rest, {
    status: "completed",
    duration_seconds: 3,
    ended_reason: "completed",
    call_summary: "refund-flow: passed (1/2)",
    transcript: [
      { speaker_role: "user", content: "Refund please" },
      { speaker_role: "assistant", content: "Done." },
    ],
    call_metadata: {
      harness_scenario: "refund-flow",
      harness_passed: true,
      harness_met: 1,
      harness_of: 2,
      harness_checkpoints: [
        { name: "refund issued", kind: "state", passed: true, detail: "row 7" },
        { name: "email sent", kind: "state", passed: false, detail: "no mail" },
      ],
      harness_evaluations: [
        {
          name: "refund issued",
          kind: "state",
          passed: true,
          reason: "row 7",
          decided_by: "",
          platform_template: "",
        },
        {
          name: "email sent",
          kind: "state",
          passed: false,
          reason: "no mail",
          decided_by: "",
          platform_template: "",
        },
      ],
      harness_eval_coverage: { expected: 2, executed: 2, failed: 0, complete: true },
      harness_failure_classification: "",
      harness_spent_usd: 0.1235,
      reins_run_id: "r1",
    },
  });
  assert.deepEqual(digest, resultDigest(rest));
  assert.deepEqual(Object.keys(result), [
    "status",
    "duration_seconds",
    "ended_reason",
    "call_summary",
    "transcript",
    "call_metadata",
    "result_digest",
  ]);
  ResultBody.parse(result);
});

// regression: call_summary carried the agent's final answer, and harness_met whatever it was given
Deno.test("verdictLine() is the kit's one-line verdict with the checkpoints met", () => {
  const base = { scenario: "refund-flow", transcript: [] };
  const checks = [
    { name: "a", passed: true },
    { name: "b", passed: true },
    { name: "c", passed: false },
  ];
  assert.deepEqual(
    verdictLine({ ...base, passed: true, checkpoints: checks }),
    "refund-flow: passed (2/3)",
  );
  assert.deepEqual(
    verdictLine({ ...base, passed: false, checkpoints: checks }),
    "refund-flow: failed (2/3)",
  );
  assert.deepEqual(verdictLine({ ...base, passed: true }), "refund-flow: passed (0/0)");
  assert.deepEqual(
    verdictLine({ ...base, passed: false, problems: ["the run never got going"] }),
    "refund-flow: error (0/0)",
  );
});

Deno.test("resultOf() makes a scenario with problems `failed` with an error_message", () => {
  const result = resultOf({
    scenario: "s",
    transcript: [],
    problems: ["harness not found", "no retry"],
    gradingFailures: ["judge down"],
    passed: false,
  });
  assert.deepEqual(result.status, "failed");
  assert.deepEqual(result.error_message, "harness not found; no retry");
  assert.deepEqual(result.duration_seconds, 0);
  assert.deepEqual(result.call_metadata.harness_failure_classification, "grading_failure");
  assert.deepEqual(result.call_metadata.harness_eval_coverage.complete, false);
  assert.match(result.result_digest, /^sha256:[0-9a-f]{64}$/);
});

Deno.test("resultDigest() equals CPython's sha256 of json.dumps(sort_keys=True, separators=(',',':'))", () => {
  const payload = {
    status: "completed",
    duration_seconds: 12,
    ended_reason: "completed",
    call_summary: "Done — all green ✓",
    transcript: [{ speaker_role: "user", content: "Fix the test" }, {
      speaker_role: "tool_calls",
      content: 'run({"cmd": "ls"})',
    }],
    call_metadata: {
      harness_scenario: "fix",
      harness_passed: true,
      harness_met: 0,
      harness_of: 0,
      harness_checkpoints: [],
      harness_evaluations: [{ name: "m", kind: "metric", score: 0.75, reason: "ok" }],
      harness_eval_coverage: { expected: 1, executed: 1, failed: 0, complete: true },
      harness_failure_classification: "",
      harness_spent_usd: 0.0123,
      reins_usage: { costUsd: 1e-5, inputTokens: 10 },
    },
  };
  assert.deepEqual(
    resultDigest(payload),
    "sha256:cdf1a697d2e026dcdd39ebb8b3c567e4b58e6f4d63e8eea331cb08b950b6493f",
  );
});

Deno.test("resultOf() refuses a call_metadata key that is not reins_", () => {
  assert.throws(
    () => resultOf({ scenario: "s", transcript: [], passed: true, metadata: { mine: 1 } }),
    RangeError,
  );
});

Deno.test("pyStrip() and pySlice() follow Python's str.strip() and slicing", () => {
  assert.deepEqual(pyStrip("\u001c\u0085 hi \u3000"), "hi");
  assert.deepEqual(pyStrip("\ufeffhi"), "\ufeffhi");
  assert.deepEqual(pySlice("a😀b", 2), "a😀");
});

Deno.test("regression: resultOf() counts a judge that could not grade nowhere: 1/1 as the table says, flagged in the evaluations", () => {
  const result = resultOf({
    scenario: "refund",
    transcript: [],
    passed: true,
    checkpoints: [
      { name: "refunded", kind: "file", passed: true, detail: "refunds.csv contains 1234" },
      {
        name: "resolution",
        kind: "judge",
        passed: false,
        detail: "the judge answered without a grade",
        gradingError: true,
      },
    ],
    gradingFailures: ["resolution: the judge answered without a grade"],
  });
  // Before: "refund: passed (1/2)", harness_of 2, the judge a failed checkpoint.
  assert.equal(result.call_summary, "refund: passed (1/1)");
  assert.equal(result.call_metadata.harness_met, 1);
  assert.equal(result.call_metadata.harness_of, 1);
  assert.deepEqual(result.call_metadata.harness_checkpoints.map((c) => c.name), ["refunded"]);
  const judged = result.call_metadata.harness_evaluations.find((e) => e.name === "resolution");
  assert.ok(judged && "grading_error" in judged && judged.grading_error === true);
  assert.equal(result.call_metadata.harness_failure_classification, "grading_failure");
  assert.deepEqual(result.call_metadata.harness_eval_coverage, {
    expected: 2,
    executed: 1,
    failed: 1,
    complete: false,
  });
});
