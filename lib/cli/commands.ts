// The command table. Each command's module is imported only when that command runs, so start-up
// pays for the dispatcher alone — through importLazily, since Deno would otherwise read every
// command's modules at start-up (see lib/core/lazy_import.ts). Keep this file free of other
// imports.
import { importLazily } from "../core/lazy_import.ts";
import type { CommandModule } from "./command.ts";

export interface CommandEntry {
  readonly name: string;
  readonly summary: string;
  readonly load: () => Promise<CommandModule>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "run",
    summary: "run one turn of an agent and record it",
    load: () => importLazily<typeof import("./run.ts")>("cli/run.ts"),
  },
  {
    name: "approve",
    summary: "allow or deny a tool use a waiting run asked for",
    load: () => importLazily<typeof import("./approve.ts")>("cli/approve.ts"),
  },
  {
    name: "answer",
    summary: "answer a question a waiting run asked",
    load: () => importLazily<typeof import("./answer.ts")>("cli/answer.ts"),
  },
  {
    name: "contexts",
    summary: "list contexts with their session, harness and last use",
    load: () => importLazily<typeof import("./contexts.ts")>("cli/contexts.ts"),
  },
  {
    name: "forget",
    summary: "drop a context's session so its next turn starts afresh",
    load: () => importLazily<typeof import("./forget.ts")>("cli/forget.ts"),
  },
  {
    name: "runs",
    summary: "list runs, newest first",
    load: () => importLazily<typeof import("./runs.ts")>("cli/runs.ts"),
  },
  {
    name: "show",
    summary: "show a run as a transcript (--verbose, --follow, --json)",
    load: () => importLazily<typeof import("./show.ts")>("cli/show.ts"),
  },
  {
    name: "stats",
    summary: "sum calls, tokens, cost and duration of runs or run families",
    load: () => importLazily<typeof import("./stats.ts")>("cli/stats.ts"),
  },
  {
    name: "replay",
    summary: "re-run a recorded loop run against its recorded model outputs",
    load: () => importLazily<typeof import("./replay.ts")>("cli/replay.ts"),
  },
  {
    name: "recover",
    summary: "interrupt runs whose process is gone; --reindex rebuilds the index",
    load: () => importLazily<typeof import("./recover.ts")>("cli/recover.ts"),
  },
  {
    name: "report",
    summary: "send settled runs to the evaluation platform (--pending: the outbox)",
    load: () => importLazily<typeof import("./report.ts")>("cli/report.ts"),
  },
  {
    name: "export",
    summary: "send runs to a collector as OpenTelemetry traces (OTLP/HTTP JSON)",
    load: () => importLazily<typeof import("./export.ts")>("cli/export.ts"),
  },
  {
    name: "suite",
    summary: "scenario suites: run, validate, show, list, plan, merge (and report)",
    load: () => importLazily<typeof import("./suite.ts")>("cli/suite.ts"),
  },
  {
    name: "serve",
    summary: "serve the agent over A2A 1.0 (JSON-RPC, SSE): tasks are runs",
    load: () => importLazily<typeof import("./serve.ts")>("cli/serve.ts"),
  },
  {
    name: "doctor",
    summary: "check the data root, sandbox, harnesses and platform settings",
    load: () => importLazily<typeof import("./doctor.ts")>("cli/doctor.ts"),
  },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((entry) => entry.name === name);
}
