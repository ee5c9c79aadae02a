// The command table. Each command's module is imported only when that command runs, so start-up
// pays for the dispatcher alone. Keep this file free of imports beyond the type.
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
    load: () => import("./run.ts"),
  },
  {
    name: "approve",
    summary: "allow or deny a tool use a waiting run asked for",
    load: () => import("./approve.ts"),
  },
  {
    name: "answer",
    summary: "answer a question a waiting run asked",
    load: () => import("./answer.ts"),
  },
  {
    name: "contexts",
    summary: "list contexts with their session, harness and last use",
    load: () => import("./contexts.ts"),
  },
  {
    name: "forget",
    summary: "drop a context's session so its next turn starts afresh",
    load: () => import("./forget.ts"),
  },
  {
    name: "runs",
    summary: "list runs, newest first",
    load: () => import("./runs.ts"),
  },
  {
    name: "show",
    summary: "show a run as a transcript (--verbose, --follow, --json)",
    load: () => import("./show.ts"),
  },
  {
    name: "stats",
    summary: "sum events, calls, tokens, cost and duration of runs or run families",
    load: () => import("./stats.ts"),
  },
  {
    name: "replay",
    summary: "re-run a recorded loop run against its recorded model outputs",
    load: () => import("./replay.ts"),
  },
  {
    name: "recover",
    summary: "mark runs whose process is gone as interrupted; --reindex rebuilds the index",
    load: () => import("./recover.ts"),
  },
  {
    name: "report",
    summary: "send settled runs to the evaluation platform (--pending: what the outbox holds)",
    load: () => import("./report.ts"),
  },
  {
    name: "export",
    summary: "export runs as OpenTelemetry traces to a collector (OTLP/HTTP JSON)",
    load: () => import("./export.ts"),
  },
  {
    name: "suite",
    summary:
      "run, resume, show and report scenario suites (run, validate, show, list, plan, merge)",
    load: () => import("./suite.ts"),
  },
  {
    name: "serve",
    summary: "serve the agent over A2A 1.0 (JSON-RPC, SSE); tasks are recorded runs",
    load: () => import("./serve.ts"),
  },
  {
    name: "doctor",
    summary: "check the data root, sandbox, harnesses and platform settings",
    load: () => import("./doctor.ts"),
  },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((entry) => entry.name === name);
}
