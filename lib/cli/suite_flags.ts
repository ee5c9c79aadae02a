// The flags of `reins suite` and what each subcommand is handed: apart from suite.ts, so that the
// subcommand modules (which suite.ts loads lazily) need nothing back from it.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { CONFINE_FLAGS } from "./confine_flags.ts";
import { UsageError } from "../core/errors.ts";

export const flags = defineFlags({
  jobs: {
    type: "integer",
    max: 256,
    value: "N",
    description: "scenarios at once (default: the file's jobs, else 1)",
  },
  filter: {
    type: "string",
    value: "GLOB",
    description: "only scenarios whose key matches (a,b*)",
  },
  epochs: {
    type: "integer",
    max: 1000,
    value: "K",
    description: "play each scenario (each cell) K times, each its own context (default: epochs:)",
  },
  repeat: { type: "integer", max: 1000, value: "N", description: "the same as --epochs N" },
  resume: {
    type: "boolean",
    description: "finish a suite run cut short (ID after FILE; default: the latest)",
  },
  rerun: {
    type: "string",
    value: "failed|errors",
    description: "play again what failed or erred (with --from)",
  },
  from: {
    type: "string",
    value: "ID",
    description: "the suite run --rerun takes its scenarios from",
  },
  reuse: {
    type: "string",
    value: "ID",
    description: "answer model calls from suite run ID's recordings where the requests match",
  },
  plan: {
    type: "string",
    value: "FILE",
    description: "run a shard of this plan (reins suite plan)",
  },
  shard: {
    type: "string",
    value: "I/N",
    description: "which shard (else REINS_SHARD or JOB_COMPLETION_INDEX)",
  },
  shards: { type: "integer", max: 10_000, value: "N", description: "suite plan: how many shards" },
  out: { type: "string", value: "FILE", description: "suite plan: where to write the plan" },
  junit: { type: "string", value: "FILE", description: "also write JUnit XML to FILE" },
  "no-report": { type: "boolean", description: "do not report to the platform" },
  limit: { type: "integer", value: "N", description: "suite list: at most N suite runs" },
  agent: {
    type: "string",
    multiple: true,
    value: "NAME",
    description: "run, plan: play only this agent of agents: (repeatable; default: all); " +
      "compare: the agent of each side (A's, then B's)",
  },
  "fail-on": {
    type: "string",
    value: "regressed|any",
    description: "suite compare: exit 1 on a significant regression (default) or on any",
  },
  markdown: {
    type: "boolean",
    description: "suite compare: print Markdown (a PR comment, $GITHUB_STEP_SUMMARY)",
  },
  ...CONFINE_FLAGS,
});

/**
 * The epochs a fresh suite run (or plan) plays: --epochs, or --repeat (its older name; both given
 * must agree), else the file's `epochs:`, else 1.
 */
export function epochsOf(
  given: { epochs: number | undefined; repeat: number | undefined },
  fileEpochs: number | null,
): number {
  if (given.epochs !== undefined && given.repeat !== undefined && given.epochs !== given.repeat) {
    throw new UsageError(
      `--epochs ${given.epochs} and --repeat ${given.repeat} say two things: --repeat is --epochs`,
      { hint: "give one of them" },
    );
  }
  return given.epochs ?? given.repeat ?? fileEpochs ?? 1;
}

/** What each subcommand is handed: the suite command's typed flags. */
export type SuiteContext = CommandContext<typeof flags>;
