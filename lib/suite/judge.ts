// Judges: a model reads the scenario, a rubric and the transcript and grades it with a score from
// 0 to 1 and a reason, given through a `grade` tool call (or, for a model without tools, a JSON
// answer of the same shape). A judge that cannot grade — the model failed, or answered without a
// usable grade — is a grading error: the judge's failure, never the agent's.
import { describeError } from "../core/errors.ts";
import type { Message, Model, ModelOutput, ToolSpec } from "../model/mod.ts";
import type { Check } from "./format.ts";
import type { CheckResult } from "./results.ts";
import { type Evidence, transcriptText } from "./evidence.ts";

export const GRADE_TOOL: ToolSpec = {
  name: "grade",
  description: "Record your grade of the conversation against the rubric.",
  parameters: {
    type: "object",
    properties: {
      score: {
        type: "number",
        minimum: 0,
        maximum: 1,
        description: "0: the rubric is not met at all; 1: fully met",
      },
      reason: { type: "string", description: "why, in one or two sentences" },
    },
    required: ["score", "reason"],
    additionalProperties: false,
  },
};

export interface ScenarioBrief {
  name: string;
  persona: Record<string, unknown>;
  instruction: string;
  tests: string;
}

export interface Grade {
  score: number;
  reason: string;
}

function judgePrompt(rubric: string, scenario: ScenarioBrief, evidence: Evidence): Message[] {
  const system = [
    "You grade a conversation between a user and an AI agent against a rubric.",
    "Read the scenario, the rubric and the transcript, then call the `grade` tool once with a",
    "score from 0 (the rubric is not met at all) to 1 (fully met) and a short reason. Grade only",
    "what the transcript shows.",
  ].join(" ");
  const user = [
    `Scenario: ${scenario.name}`,
    scenario.instruction ? `The user's situation: ${scenario.instruction}` : "",
    scenario.tests ? `What the scenario tests: ${scenario.tests}` : "",
    Object.keys(scenario.persona).length ? `The user: ${JSON.stringify(scenario.persona)}` : "",
    "",
    `Rubric: ${rubric}`,
    "",
    "Transcript:",
    transcriptText(evidence.transcript),
  ].filter((line, i, all) => line !== "" || all[i - 1] !== "").join("\n");
  return [{ role: "system", text: system }, { role: "user", text: user }];
}

/** The grade in a model's answer, or why there is none. */
export function gradeOf(output: ModelOutput): Grade | string {
  const call = output.toolCalls.find((candidate) => candidate.name === GRADE_TOOL.name);
  let value: unknown = call?.args;
  if (call === undefined) {
    const text = (output.text ?? "").trim().replace(/^```(?:json)?\s*|\s*```$/g, "");
    try {
      value = JSON.parse(text);
    } catch {
      const said = (output.text ?? "").trim();
      return `the judge answered without a grade${
        said ? `: ${JSON.stringify(said.slice(0, 200))}` : ""
      }`;
    }
  }
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch { /* reported below */ }
  }
  const grade = value as { score?: unknown; reason?: unknown } | null;
  const score = typeof grade?.score === "string" ? Number(grade.score) : grade?.score;
  if (typeof score !== "number" || !Number.isFinite(score) || score < 0 || score > 1) {
    return `the judge's score is not a number from 0 to 1: ${JSON.stringify(grade?.score ?? null)}`;
  }
  return { score, reason: typeof grade?.reason === "string" ? grade.reason.trim() : "" };
}

/** `<rubric name> (<model>)`: the seed's `by` of a platform-backed judgement. */
export function decidedBy(check: Extract<Check, { kind: "judge" }>): string {
  const model = check.judge.model.startsWith("mock:")
    ? `mock:${check.judge.model.slice(5).split("/").pop()}`
    : check.judge.model;
  return `${check.name} (${model})`;
}

/** Grades the scenario with the judge's model. Never throws for what the model did. */
export async function runJudge(
  check: Extract<Check, { kind: "judge" }>,
  scenario: ScenarioBrief,
  evidence: Evidence,
  model: Model,
  signal: AbortSignal,
): Promise<CheckResult> {
  const by = decidedBy(check);
  const base = {
    name: check.name,
    kind: "judge" as const,
    checkpoint: check.pass !== undefined,
    by,
    reason: null,
  };
  let output: ModelOutput;
  try {
    output = await model.complete({
      history: judgePrompt(check.judge.rubric, scenario, evidence),
      tools: [GRADE_TOOL],
      purpose: "turn",
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    return {
      ...base,
      outcome: "grading_error",
      met: false,
      detail: `the judge could not grade: ${describeError(error)}`,
      score: null,
    };
  }
  const grade = gradeOf(output);
  if (typeof grade === "string") {
    return { ...base, outcome: "grading_error", met: false, detail: grade, score: null };
  }
  const reason = grade.reason || "no reason given";
  if (check.pass === undefined) {
    return { ...base, outcome: "passed", met: true, detail: reason, score: grade.score, reason };
  }
  const met = grade.score >= check.pass;
  return {
    ...base,
    reason,
    outcome: met ? "passed" : "failed",
    met,
    detail: `score ${grade.score} ${met ? "≥" : "<"} ${check.pass}: ${reason}`,
    score: grade.score,
  };
}
