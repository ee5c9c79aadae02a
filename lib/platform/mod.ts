// The door of lib/platform/: reporting runs and suites to the evaluation platform (docs/platform.md):
// its client, payloads, outbox and delivery. Heavy to load (zod, node:crypto): only reins report,
// suites and doctor use it, never a start-up path. Types come through here, values from the module
// listed for them (docs/architecture.md, "Doors").
export { PlatformClient, platformTarget } from "./client.ts";
export type { PlatformTarget } from "./client.ts";
export { deliverEntry, deliverPending, entriesFor } from "./deliver.ts";
export type { ReportOutcome } from "./deliver.ts";
export { readEntry, removeEntry } from "./outbox.ts";
export type { OutboxEntry } from "./outbox.ts";
export { displayRunName } from "./payloads.ts";
export type {
  CheckpointInput,
  MetricInput,
  ScenarioInput,
  ScenarioOutcome,
  TranscriptItem,
} from "./payloads.ts";
export { pendingReports } from "./pending.ts";
export { createReport, scenarioFinished, scenarioStarted, updateReport } from "./report_entry.ts";
export type { Modality } from "./report_entry.ts";
export { rememberReport, reportedCalls } from "./reported.ts";
export type { RememberedCall } from "./reported.ts";
export { runReportOf } from "./run_outcome.ts";
export type { RecordingSource, RunReport } from "./run_outcome.ts";
