// The ingestion API's bodies, field for field as the seed's platform.py sends and reads them.
// Requests are strict (an unknown key is a drift from the seed, and the fake platform refuses it);
// answers are loose, since the platform may add fields. Logic lives in payloads.ts and client.ts.
import { z } from "zod";

/** Under `<base>`; every path below it ends in "/" (Django cannot redirect a POST to add one). */
export const INGESTION_PREFIX = "/simulate/api/alk-simulate";

export const Persona = z.object({
  name: z.string().max(255),
  scenario_key: z.string().max(255),
  scenario_name: z.string().max(255),
  role: z.string().max(255),
  situation: z.string(),
  outcome: z.string(),
  persona: z.record(z.string(), z.unknown()),
}).strict();
export type Persona = z.infer<typeof Persona>;

export const ProvisionBody = z.object({
  name: z.string().min(1).max(255),
  agent_name: z.string().min(1),
  personas: z.array(Persona),
  modality: z.string().min(1),
}).strict();
export type ProvisionBody = z.infer<typeof ProvisionBody>;

export const ScenarioSelector = z.object({
  scenario_key: z.string().max(255),
  persona_name: z.string().max(255),
}).strict();
export type ScenarioSelector = z.infer<typeof ScenarioSelector>;

export const StartBody = z.object({
  scenario_ids: z.array(z.string()).min(1).optional(),
  harness_job_id: z.string().min(1).optional(),
  scenario_selectors: z.array(ScenarioSelector).min(1).optional(),
}).strict();
export type StartBody = z.infer<typeof StartBody>;

export const BatchBody = z.object({ count: z.number().int().min(1) }).strict();
export const StatusBody = z.object({ status: z.literal("ongoing") }).strict();

export const SpeakerRole = z.enum([
  "user",
  "assistant",
  "system",
  "tool_calls",
  "tool_call_result",
]);
export type SpeakerRole = z.infer<typeof SpeakerRole>;

export const TranscriptRow = z.object({
  speaker_role: SpeakerRole,
  content: z.string(),
  start_time_ms: z.number().int().optional(),
  end_time_ms: z.number().int().optional(),
}).strict();
export type TranscriptRow = z.infer<typeof TranscriptRow>;

export const CheckpointRow = z.object({
  name: z.string(),
  kind: z.string(),
  passed: z.boolean(),
  detail: z.string().max(2000),
}).strict();
export type CheckpointRow = z.infer<typeof CheckpointRow>;

export const EvaluationRow = z.union([
  z.object({
    name: z.string().min(1),
    kind: z.string(),
    passed: z.boolean(),
    reason: z.string().max(2000),
    decided_by: z.string().max(2000),
    platform_template: z.string().max(2000),
    grading_error: z.literal(true).optional(),
  }).strict(),
  z.object({
    name: z.string().min(1),
    kind: z.literal("metric"),
    score: z.number(),
    reason: z.string().max(2000),
  }).strict(),
]);
export type EvaluationRow = z.infer<typeof EvaluationRow>;

export const EvalCoverage = z.object({
  expected: z.number().int().nonnegative(),
  executed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  complete: z.boolean(),
}).strict();

/** `call_metadata`: the seed's keys, plus any `reins_*` keys of ours (a JSON field there). */
export const CallMetadata = z.object({
  harness_scenario: z.string(),
  harness_passed: z.boolean(),
  harness_met: z.number().int().nonnegative(),
  harness_of: z.number().int().nonnegative(),
  harness_checkpoints: z.array(CheckpointRow),
  harness_evaluations: z.array(EvaluationRow),
  harness_eval_coverage: EvalCoverage,
  harness_failure_classification: z.enum(["", "grading_failure"]),
  harness_spent_usd: z.number().nonnegative(),
}).catchall(z.unknown()).refine(
  (value) =>
    Object.keys(value).every((key) => key.startsWith("harness_") || key.startsWith("reins_")),
  { message: "call_metadata keys must start with harness_ or reins_" },
);
export type CallMetadata = z.infer<typeof CallMetadata>;

export const RESULT_DIGEST = /^sha256:[0-9a-f]{64}$/;

export const ResultBody = z.object({
  status: z.enum(["completed", "failed"]),
  duration_seconds: z.number().int().nonnegative(),
  ended_reason: z.string().max(10000),
  call_summary: z.string().max(2000),
  transcript: z.array(TranscriptRow),
  call_metadata: CallMetadata,
  error_message: z.string().max(2000).optional(),
  result_digest: z.string().regex(RESULT_DIGEST),
}).strict();
export type ResultBody = z.infer<typeof ResultBody>;

const WireId = z.union([z.string().min(1), z.number()]).transform(String);

export const ProvisionAnswer = z.looseObject({
  run_test_id: WireId,
  scenario_ids: z.array(WireId).default([]),
});
export type ProvisionAnswer = z.infer<typeof ProvisionAnswer>;

export const StartAnswer = z.looseObject({ test_execution_id: WireId });
export const BatchAnswer = z.looseObject({ call_execution_ids: z.array(WireId) });

/** Where an execution is shown, as the seed's `Reported.url`: a path on the dashboard. */
export function dashboardPath(runTestId: string, testExecutionId: string | null): string {
  return testExecutionId
    ? `/dashboard/simulate/test/${runTestId}/${testExecutionId}`
    : `/dashboard/simulate/test/${runTestId}/runs`;
}
