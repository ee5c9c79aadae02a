// Judges on scripted models and on a real Chat Completions endpoint (the fake server): grades,
// checkpoints with pass:, metrics without, and grading errors that never fail a scenario.
import assert from "node:assert/strict";
import { decidedBy, gradeOf, runJudge } from "../../lib/suite/judge.ts";
import type { Check } from "../../lib/suite/format.ts";
import type { Evidence } from "../../lib/suite/evidence.ts";
import { type MockResponse, scriptedModel } from "../../lib/model/mock_model.ts";
import type { Model, ModelRequest } from "../../lib/model/model.ts";
import { openaiModel } from "../../lib/model/openai_model.ts";
import { apiError, inOrder, toolCall } from "../fixtures/fake_model_server.ts";
import { startFakeChat } from "../fixtures/fake_chat.ts";

type Judge = Extract<Check, { kind: "judge" }>;

const SCENARIO = {
  name: "refund-late-order",
  persona: { name: "Dana", role: "customer" },
  instruction: "Your order 1234 is late.",
  tests: "The agent refunds order 1234.",
};

const EVIDENCE: Evidence = {
  cwd: "/",
  turns: [],
  recordings: [],
  transcript: [
    { kind: "message", speaker: "user", text: "I want a refund for 1234." },
    { kind: "tool", name: "issue_refund", arguments: { order: "1234" }, result: "refunded" },
    { kind: "message", speaker: "assistant", text: "Refunded; the money arrives in 5 days." },
  ],
};

function judge(pass?: number, model = "mock:/x/judges/resolution.json"): Judge {
  return {
    kind: "judge",
    name: "resolution",
    judge: { model, rubric: "Did the agent refund order 1234?" },
    ...(pass === undefined ? {} : { pass }),
  };
}

/** A scripted model that also keeps what it was asked. */
function recording(responses: MockResponse[]): Model & { requests: ModelRequest[] } {
  const inner = scriptedModel(responses, { name: "mock:judge", source: "judge.json" });
  const requests: ModelRequest[] = [];
  return {
    name: inner.name,
    requests,
    complete(request) {
      requests.push(request);
      return inner.complete(request);
    },
  };
}

const signal = new AbortController().signal;

Deno.test("runJudge() with pass: a checkpoint met when the score reaches it, and a metric either way", async () => {
  const model = recording([{
    toolCalls: [{ name: "grade", args: { score: 0.8, reason: "Refunded, said when." } }],
  }]);
  const met = await runJudge(judge(0.7), SCENARIO, EVIDENCE, model, signal);
  assert.deepEqual(met, {
    name: "resolution",
    kind: "judge",
    checkpoint: true,
    by: "resolution (mock:resolution.json)",
    outcome: "passed",
    met: true,
    detail: "score 0.8 ≥ 0.7: Refunded, said when.",
    score: 0.8,
    reason: "Refunded, said when.",
  });
  // What the judge was shown: the scenario, the rubric, the transcript with the tool call; and the tool.
  const [request] = model.requests;
  assert.deepEqual(request.tools.map((t) => t.name), ["grade"]);
  const shown = request.history.map((m) => "text" in m ? m.text : "").join("\n");
  assert.match(shown, /Rubric: Did the agent refund order 1234\?/);
  assert.match(shown, /What the scenario tests: The agent refunds order 1234\./);
  assert.match(shown, /User: I want a refund for 1234\./);
  assert.match(shown, /\[tool issue_refund\(\{"order":"1234"\}\) → refunded\]/);
  assert.match(shown, /Agent: Refunded; the money arrives in 5 days\./);

  const low = await runJudge(
    judge(0.7),
    SCENARIO,
    EVIDENCE,
    recording([{ toolCalls: [{ name: "grade", args: { score: 0.4, reason: "No date." } }] }]),
    signal,
  );
  assert.equal(low.outcome, "failed");
  assert.equal(low.met, false);
  assert.equal(low.detail, "score 0.4 < 0.7: No date.");
});

Deno.test("runJudge() without pass: only a metric, never a checkpoint", async () => {
  const result = await runJudge(
    judge(),
    SCENARIO,
    EVIDENCE,
    recording([{ text: '{"score": 0.25, "reason": "Barely."}' }]),
    signal,
  );
  assert.equal(result.checkpoint, false);
  assert.equal(result.score, 0.25);
  assert.equal(result.detail, "Barely.");
});

Deno.test("runJudge() is a grading error when the model fails or answers without a usable grade", async () => {
  const cases: [MockResponse[], string][] = [
    [
      [],
      "the judge could not grade: The mock model judge.json has no response left for model call 1: the script has 0",
    ],
    [[{ text: "Looks good to me." }], 'the judge answered without a grade: "Looks good to me."'],
    [
      [{ toolCalls: [{ name: "grade", args: { score: 7, reason: "x" } }] }],
      "the judge's score is not a number from 0 to 1: 7",
    ],
    [
      [{ toolCalls: [{ name: "grade", args: { reason: "x" } }] }],
      "the judge's score is not a number from 0 to 1: null",
    ],
  ];
  for (const [responses, detail] of cases) {
    const result = await runJudge(judge(0.5), SCENARIO, EVIDENCE, recording(responses), signal);
    assert.deepEqual(
      { outcome: result.outcome, met: result.met, detail: result.detail, score: result.score },
      { outcome: "grading_error", met: false, detail, score: null },
    );
  }
});

Deno.test("gradeOf() takes a grade tool call, a JSON answer (fenced or not) and numeric strings", () => {
  const output = (fields: Partial<Parameters<typeof gradeOf>[0]>) => ({
    text: null,
    toolCalls: [],
    stopReason: null,
    usage: null,
    reasoning: null,
    ...fields,
  });
  assert.deepEqual(
    gradeOf(
      output({ toolCalls: [{ id: "1", name: "grade", args: { score: "0.5", reason: " ok " } }] }),
    ),
    {
      score: 0.5,
      reason: "ok",
    },
  );
  assert.deepEqual(gradeOf(output({ text: '```json\n{"score": 1, "reason": "all"}\n```' })), {
    score: 1,
    reason: "all",
  });
  assert.deepEqual(
    gradeOf(
      output({ toolCalls: [{ id: "1", name: "grade", args: '{"score":0,"reason":"none"}' }] }),
    ),
    {
      score: 0,
      reason: "none",
    },
  );
});

Deno.test("decidedBy() is '<rubric name> (<model>)', the seed's by", () => {
  assert.equal(decidedBy(judge(0.5, "openai:gpt-4.1-mini")), "resolution (openai:gpt-4.1-mini)");
});

Deno.test("runJudge() on openai:MODEL grades through a Chat Completions endpoint; a refusal is a grading error", async () => {
  await using server = startFakeChat(
    inOrder(toolCall("grade", { score: 0.9, reason: "Refunded." }), apiError(400, "bad request")),
  );
  const model = () =>
    openaiModel({
      model: "gpt-4.1-mini",
      baseUrl: `${server.url}/v1`,
      apiKey: "k",
      retry: { attempts: 1 },
    });
  const graded = await runJudge(
    judge(0.7, "openai:gpt-4.1-mini"),
    SCENARIO,
    EVIDENCE,
    model(),
    signal,
  );
  assert.equal(graded.outcome, "passed");
  assert.equal(graded.score, 0.9);
  const body = server.modelCalls()[0].body as { tools: { function: { name: string } }[] };
  assert.deepEqual(body.tools.map((t) => t.function.name), ["grade"]);
  const refused = await runJudge(
    judge(0.7, "openai:gpt-4.1-mini"),
    SCENARIO,
    EVIDENCE,
    model(),
    signal,
  );
  assert.equal(refused.outcome, "grading_error");
  assert.match(refused.detail, /^the judge could not grade: .*400/);
});
