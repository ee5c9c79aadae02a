// What a suite run decides, as data: each check's result and each scenario's status. These schemas
// are the state files' (state.ts) and the JSON output's single source; the runner, the table, JUnit,
// merge and the platform report all read these shapes.
import { z } from "zod";

export const CHECK_OUTCOMES = ["passed", "failed", "unknown", "grading_error"] as const;

export const CheckResult = z.object({
  name: z.string(),
  kind: z.enum(["file", "regex", "command", "tool", "cost", "judge"]),
  /** `unknown`: it could not be decided (a cost check without cost data). */
  outcome: z.enum(CHECK_OUTCOMES),
  /** Whether it counts as met: an unknown check counts as its `unknown:` says. */
  met: z.boolean(),
  /** Counted in met/of: every deterministic check, and a judge that has `pass:`. */
  checkpoint: z.boolean(),
  detail: z.string(),
  /** A judge's score, 0 to 1. */
  score: z.number().min(0).max(1).nullable().default(null),
  /** Who decided, for a judge: `<rubric name> (<model>)`. */
  by: z.string().nullable().default(null),
  /** A judge's own reason for its score (the metric's reason). */
  reason: z.string().nullable().default(null),
}).strict();
export type CheckResult = z.infer<typeof CheckResult>;

/**
 * passed: ran, and every checkpoint was met. failed: ran, and a checkpoint was not met. error:
 * could not run (setup, a driver that crashed, a timeout), with the reason. skipped: not run.
 * pending/running: not finished (a resume runs them).
 */
export const SCENARIO_STATUSES = [
  "pending",
  "running",
  "passed",
  "failed",
  "error",
  "skipped",
] as const;
export const ScenarioStatus = z.enum(SCENARIO_STATUSES);
export type ScenarioStatus = z.infer<typeof ScenarioStatus>;
export type FinalStatus = Exclude<ScenarioStatus, "pending" | "running">;

export function isFinished(status: ScenarioStatus): status is FinalStatus {
  return status !== "pending" && status !== "running";
}

/** The counts of checkpoints, and the first one not met. */
export function tally(checks: readonly CheckResult[]): {
  met: number;
  of: number;
  firstFailing: CheckResult | null;
} {
  let met = 0;
  let of = 0;
  let firstFailing: CheckResult | null = null;
  for (const check of checks) {
    if (!check.checkpoint || check.outcome === "grading_error") continue;
    of++;
    if (check.met) met++;
    else firstFailing ??= check;
  }
  return { met, of, firstFailing };
}

/** A scenario that ran to its end: passed when every decided checkpoint was met. */
export function statusOf(checks: readonly CheckResult[]): "passed" | "failed" {
  const { met, of } = tally(checks);
  return met === of ? "passed" : "failed";
}
