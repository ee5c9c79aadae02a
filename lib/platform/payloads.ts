// The seed's payload shapes (persona, transcript rows, evaluations, result with call_metadata and
// result_digest), built from a neutral description of one scenario and what happened in it. Runs
// (run_outcome.ts) and suites both describe themselves this way; nothing here knows either.
// Python's rules are kept where they change bytes: strip(), slicing by code point, int(), round().
import { createHash } from "node:crypto";
import { canonicalJson, pythonJson } from "./python_json.ts";
import type {
  CallMetadata,
  CheckpointRow,
  EvaluationRow,
  Persona,
  ResultBody,
  ScenarioSelector,
  SpeakerRole,
  TranscriptRow,
} from "./wire.ts";

/** What the platform needs to know about a scenario before it runs. */
export interface ScenarioInput {
  /** The scenario's name (a slug); `harness_scenario` and the persona's fallback name. */
  name: string;
  /** An ASCII key that travels as a header; defaults to `name`. */
  scenarioKey?: string;
  /** What the scenario exercises; preferred for the display name. */
  useCase?: string;
  /** What it checks: the persona's `outcome`. */
  tests?: string;
  /** The situation the persona is put in. */
  instruction?: string;
  persona?: Record<string, unknown>;
}

/** One turn of the conversation or one tool call, in the order they happened. */
export type TranscriptItem =
  | {
    kind: "message";
    speaker: string;
    text: string;
    /** Only when measured (a spoken turn the runner timed): never invented. */
    startTimeMs?: number;
    endTimeMs?: number;
  }
  | {
    kind: "tool";
    name: string;
    arguments: unknown;
    result?: unknown;
    error?: string | null;
    /** The call was refused (an approval denied) rather than run. */
    refused?: boolean;
  };

export interface CheckpointInput {
  name: string;
  kind?: string;
  passed: boolean;
  detail?: string;
  /** Who decided: `<template name> (<model>)` for platform-backed judgements. */
  by?: string;
  /** A judge that could not grade: in the evaluations, flagged; not in met/of nor the checkpoints. */
  gradingError?: boolean;
}

export interface MetricInput {
  name: string;
  score: number;
  reason?: string;
  applicable?: boolean;
}

/** What happened in one scenario: the seed's ScenarioResult, as data. */
export interface ScenarioOutcome {
  scenario: string;
  transcript: readonly TranscriptItem[];
  checkpoints?: readonly CheckpointInput[];
  metrics?: readonly MetricInput[];
  /** Why the scenario could not run; any problem makes the result `failed`. */
  problems?: readonly string[];
  gradingFailures?: readonly string[];
  /** Why the call ended. */
  ended?: string;
  /** The kit's verdict; `call_summary` says it with the checkpoints met (verdictLine()). */
  passed: boolean;
  spentUsd?: number;
  /** Wall-clock seconds, used when the transcript carries no timings. */
  seconds?: number;
  /** Extra `call_metadata` keys; each must start with `reins_`. */
  metadata?: Record<string, unknown>;
}

// str.isspace() of Python: the JS \s set without U+FEFF, plus U+001C..U+001F and U+0085.
const PY_SPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029" +
  "\\u202f\\u205f\\u3000]";
const LEADING_SPACE = new RegExp(`^${PY_SPACE}+`);
const TRAILING_SPACE = new RegExp(`${PY_SPACE}+$`);

/** Python's `str.strip()`. */
export function pyStrip(text: string): string {
  return text.replace(LEADING_SPACE, "").replace(TRAILING_SPACE, "");
}

/** Python's `text[:limit]`: the first `limit` code points. */
export function pySlice(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let units = 0;
  let points = 0;
  while (units < text.length && points < limit) {
    const code = text.codePointAt(units)!;
    units += code > 0xffff ? 2 : 1;
    points++;
  }
  return text.slice(0, units);
}

/** Python's `round(value, 4)` (exact ties cannot occur at four decimals in binary floats). */
export function pyRound4(value: number): number {
  return Number(value.toFixed(4));
}

function titleWord(word: string): string {
  // str.isupper(): at least one cased character, and none of them lower or title case.
  if (/\p{Lu}/u.test(word) && !/[\p{Ll}\p{Lt}]/u.test(word)) return word;
  const [first = "", ...rest] = Array.from(word);
  return first.toUpperCase() + rest.join("").toLowerCase();
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** The seed's `display_run_name`: "Claude Code · 05 Jan 2026 14:03 UTC". */
export function displayRunName(agent: string, at: Date): string {
  const words = pyStrip((agent || "agent").replace(/[-_]+/g, " "));
  const title = words.split(new RegExp(`${PY_SPACE}+`)).filter(Boolean).map(titleWord).join(" ");
  const two = (n: number) => String(n).padStart(2, "0");
  const stamp = `${two(at.getUTCDate())} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ${
    two(at.getUTCHours())
  }:${two(at.getUTCMinutes())} UTC`;
  return pySlice(`${title || "Agent"} · ${stamp}`, 255);
}

/** The seed's `display_scenario_name`: the use case, else what it tests, else its name. */
export function displayScenarioName(scenario: ScenarioInput): string {
  for (const value of [scenario.useCase, scenario.tests, scenario.name]) {
    let text = pyStrip(value ?? "").replace(/\.+$/, "");
    if (!text) continue;
    if (value === scenario.name) {
      const [first = "", ...rest] = Array.from(text.replace(/[-_]+/g, " "));
      text = first.toUpperCase() + rest.join("");
    }
    return pySlice(text, 255);
  }
  return "Scenario";
}

function text(value: unknown): string {
  return value === undefined || value === null ? "" : String(value);
}

/** The seed's `persona_of`: the scenario as the platform's persona record. */
export function personaOf(scenario: ScenarioInput): Persona {
  const persona = scenario.persona ?? {};
  return {
    name: pySlice(text(persona.name) || scenario.name || "caller", 255),
    scenario_key: pySlice(scenario.scenarioKey || scenario.name || "", 255),
    scenario_name: displayScenarioName(scenario),
    role: pySlice(text(persona.role) || text(persona.occupation), 255),
    situation: scenario.instruction ?? "",
    outcome: scenario.tests ?? "",
    persona,
  };
}

/** The seed's start selectors: how the platform finds each scenario of a new execution. */
export function selectorOf(scenario: ScenarioInput): ScenarioSelector {
  return {
    scenario_key: pySlice(scenario.name || "", 255),
    persona_name: pySlice(personaOf(scenario).name, 255),
  };
}

/** The seed's `agent_name`: the run name before its " · " timestamp. */
export function agentNameOf(name: string): string {
  return pyStrip(name.split(" · ", 1)[0]) || "reins";
}

// What a harness calls a speaker, and the platform's row role. Anything else is the person.
const SPEAKERS: Record<string, SpeakerRole> = {
  agent: "assistant",
  assistant: "assistant",
  bot: "assistant",
  system: "system",
  customer: "user",
  caller: "user",
  user: "user",
  tester: "user",
};

function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") {
    return false;
  }
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

function outcomeText(value: unknown): string {
  return typeof value === "string" ? value : pythonJson(value);
}

/** The seed's `segments_of`: transcript rows, tool calls as `tool_calls` + `tool_call_result`. */
export function segmentsOf(items: readonly TranscriptItem[]): TranscriptRow[] {
  const rows: TranscriptRow[] = [];
  for (const item of items) {
    if (item.kind === "message") {
      const said = pyStrip(item.text);
      if (!said) continue;
      const row: TranscriptRow = {
        speaker_role: SPEAKERS[item.speaker.toLowerCase()] ?? "user",
        content: said,
      };
      if (item.startTimeMs !== undefined) row.start_time_ms = Math.trunc(item.startTimeMs);
      if (item.endTimeMs !== undefined) row.end_time_ms = Math.trunc(item.endTimeMs);
      rows.push(row);
    } else {
      rows.push({
        speaker_role: "tool_calls",
        content: `${item.name}(${pythonJson(item.arguments ?? {})})`,
      });
      const outcome = truthy(item.error) ? item.error : truthy(item.result) ? item.result : "";
      rows.push({
        speaker_role: "tool_call_result",
        content: (item.refused ? "refused: " : "") + pySlice(outcomeText(outcome), 4000),
      });
    }
  }
  return rows;
}

/** The seed's `evaluations_of`: checkpoints and applicable metrics, named and kept apart. */
export function evaluationsOf(outcome: ScenarioOutcome): EvaluationRow[] {
  const judged: EvaluationRow[] = [];
  for (const check of outcome.checkpoints ?? []) {
    const decidedBy = check.by ?? "";
    const at = decidedBy.lastIndexOf(" (");
    const template = at >= 0 ? decidedBy.slice(0, at) : decidedBy;
    const row: EvaluationRow = {
      name: check.name,
      kind: check.kind || "checkpoint",
      passed: check.passed,
      reason: pySlice(check.detail ?? "", 2000),
      decided_by: pySlice(decidedBy, 2000),
      platform_template: pySlice(template, 2000),
    };
    if (check.gradingError) row.grading_error = true;
    if (row.name) judged.push(row);
  }
  for (const metric of outcome.metrics ?? []) {
    if (metric.applicable === false || !metric.name) continue;
    judged.push({
      name: metric.name,
      kind: "metric",
      score: metric.score || 0,
      reason: pySlice(metric.reason ?? "", 2000),
    });
  }
  return judged;
}

/** The seed's `conversation_seconds`: from measured turn times, else the wall clock. */
export function conversationSeconds(outcome: ScenarioOutcome): number {
  const messages = outcome.transcript.filter((item) => item.kind === "message");
  const starts = messages.flatMap((m) => m.startTimeMs === undefined ? [] : [m.startTimeMs]);
  const ends = messages.flatMap((m) => m.endTimeMs === undefined ? [] : [m.endTimeMs]);
  if (starts.length && ends.length) {
    return Math.max(0, Math.trunc((Math.max(...ends) - Math.min(...starts)) / 1000));
  }
  if (messages.length === 0 && (outcome.problems?.length ?? 0) > 0) return 0;
  return Math.max(0, Math.trunc(outcome.seconds ?? 0));
}

/**
 * The checkpoints that count in met/of: a judge that could not grade (gradingError) is flagged in
 * harness_evaluations and harness_failure_classification, and counted nowhere — the one rule of
 * the table, JUnit and docs/suites.md.
 */
function decidedCheckpoints(outcome: ScenarioOutcome): readonly CheckpointInput[] {
  return (outcome.checkpoints ?? []).filter((check) => !check.gradingError);
}

/**
 * The kit's one-line verdict, sent as `call_summary`: `"<scenario>: passed (m/n)"` with m of the
 * n checkpoints met. A scenario that could not run (it has problems) says `error`, not `failed`:
 * the agent did not fail it, it never got to try.
 */
export function verdictLine(outcome: ScenarioOutcome): string {
  const checkpoints = decidedCheckpoints(outcome);
  const met = checkpoints.filter((check) => check.passed).length;
  const verdict = (outcome.problems?.length ?? 0) > 0
    ? "error"
    : outcome.passed
    ? "passed"
    : "failed";
  return `${outcome.scenario}: ${verdict} (${met}/${checkpoints.length})`;
}

/** `"sha256:" + sha256(canonical JSON)`: the seed's `result_digest`. */
export function resultDigest(payload: unknown): string {
  return `sha256:${createHash("sha256").update(canonicalJson(payload)).digest("hex")}`;
}

/** The seed's `result_of`: one scenario's outcome in the shape the ingestion API takes. */
export function resultOf(outcome: ScenarioOutcome): ResultBody {
  const checkpoints: CheckpointRow[] = decidedCheckpoints(outcome).map((check) => ({
    name: check.name,
    kind: check.kind ?? "",
    passed: check.passed,
    detail: pySlice(check.detail ?? "", 2000),
  }));
  const problems = [...(outcome.problems ?? [])];
  const evaluations = evaluationsOf(outcome);
  const failedGrading = evaluations.filter((e) => "grading_error" in e && e.grading_error).length;
  const metadata: CallMetadata = {
    harness_scenario: outcome.scenario,
    harness_passed: outcome.passed,
    harness_met: checkpoints.filter((check) => check.passed).length,
    harness_of: checkpoints.length,
    harness_checkpoints: checkpoints,
    harness_evaluations: evaluations,
    harness_eval_coverage: {
      expected: evaluations.length,
      executed: evaluations.length - failedGrading,
      failed: failedGrading,
      complete: (outcome.gradingFailures?.length ?? 0) === 0,
    },
    harness_failure_classification: (outcome.gradingFailures?.length ?? 0) > 0
      ? "grading_failure"
      : "",
    harness_spent_usd: pyRound4(outcome.spentUsd ?? 0),
  };
  for (const [key, value] of Object.entries(outcome.metadata ?? {})) {
    if (!key.startsWith("reins_")) {
      throw new RangeError(`Cannot add call_metadata key '${key}': extra keys start with reins_`);
    }
    metadata[key] = value;
  }
  // A scenario that never ran is not one the agent failed: the two must not share a status.
  const payload: Omit<ResultBody, "result_digest"> & { result_digest?: string } = {
    status: problems.length ? "failed" : "completed",
    duration_seconds: conversationSeconds(outcome),
    ended_reason: pySlice(outcome.ended ?? "", 10000),
    call_summary: pySlice(verdictLine(outcome), 2000),
    transcript: segmentsOf(outcome.transcript),
    call_metadata: metadata,
  };
  if (problems.length) payload.error_message = pySlice(problems.join("; "), 2000);
  payload.result_digest = resultDigest(payload);
  return payload as ResultBody;
}
