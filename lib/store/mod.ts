// The door of lib/store/: the data root (DataRoot), runs and their events, the index, contexts,
// decisions, the outbox, reconciliation. contracts.ts (the event contract's zod schemas) and
// attachments.ts (node:crypto) are heavy. What the other rooms may use is listed here: types come
// through this door, values from the module it lists them from, so that importing one does not load
// the others (docs/architecture.md, "Doors").
export { contentTypeFor } from "./attachments.ts";
export { isActiveStatus, parseEventInput, terminalStatusOf } from "./contract_runtime.ts";
export { CallUsage, formatIssue } from "./contracts.ts";
export type {
  AgentFacts,
  EventInput,
  EventType,
  GatewayUse,
  ModelCallRef,
  PayloadOf,
  RunEvent,
  RunRecord,
  RunStatus,
  SettledStatus,
  ToolCall,
  Trigger,
  Usage,
  WireBody,
} from "./contracts.ts";
export { DataRoot, UntrustedFileError } from "./data_root.ts";
export { pendingDecisions } from "./decisions.ts";
export type { PendingDecision } from "./decisions.ts";
export { describeProblems, readEvents } from "./event_log.ts";
export type { LineProblem } from "./event_log.ts";
export { EventTail } from "./event_tail.ts";
export type { TailBatch } from "./event_tail.ts";
export { listRunJson, MAX_LIMIT } from "./list.ts";
export { ownerState, reconcileCheaply, warnLeftAgents } from "./liveness.ts";
export { resolveRun } from "./lookup.ts";
export { Outbox } from "./outbox.ts";
export type { ReadOutboxEntry } from "./outbox.ts";
export { EVENTS_FILE, isActive, shownPath } from "./run_files.ts";
export { readRecordFile } from "./run_record.ts";
export type { RunWriter } from "./run_writer.ts";
export { openStore } from "./store.ts";
export type { Store } from "./store.ts";
