// The names the run store's contracts are built from — statuses, triggers, usage counters, the
// harness-session file's type — in a module of their own, so that both the zod schemas
// (contracts.ts) and the zod-free rules over them (contract_runtime.ts) take them from one place
// without importing each other.
import { STATUS_NAMES } from "./run_files.ts";

/** The run statuses: run_files.ts holds them, for the commands that load no contract. */
export const RUN_STATUSES = STATUS_NAMES;
export const SETTLED_STATUSES = ["completed", "failed", "interrupted"] as const;
export const TRIGGERS = ["cli", "api", "a2a", "suite", "replay"] as const;
export const USAGE_COUNTERS = [
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "reasoningTokens",
  "costUsd",
  "requests",
] as const;
export const HARNESS_SESSION_TYPE = "reins.harness-session";
