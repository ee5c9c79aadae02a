// One recorded run as one platform scenario: what it was asked (the scenario), what happened (the
// transcript, cost, outcome) and the files it left (recordings). Reads the record and the event
// log only; it never touches the run's files. Events marked `ignored` (they arrived after the run
// settled) are evidence, not history, and are left out.
import { assertNever } from "../core/assert_never.ts";
import { createHash } from "node:crypto";
import type { RunEvent, RunRecord } from "../store/mod.ts";
import { isActiveStatus } from "../store/contract_runtime.ts";
import { joinPath } from "../core/paths.ts";
import { pySlice, pyStrip, type ScenarioInput, type ScenarioOutcome } from "./payloads.ts";
import type { TranscriptItem } from "./payloads.ts";

/** A file a run attached, to be uploaded as the call's recording. */
export interface RecordingSource {
  name: string;
  /** Absolute. */
  path: string;
  contentType: string;
  bytes: number;
  sha256: string;
}

export interface RunReport {
  runId: string;
  scenario: ScenarioInput;
  outcome: ScenarioOutcome;
  recordings: RecordingSource[];
}

function slug(text: string): string {
  return text.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase()
    .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 48).replace(/-+$/, "");
}

/**
 * The scenario key of a run: an ASCII slug of its goal's first line and eight hex digits of the
 * goal's sha256. Runs given the same task share a scenario, so a test reported again under the
 * same name finds its scenarios; different tasks never collide.
 */
export function scenarioKeyOf(record: RunRecord): string {
  const goal = record.goal ?? "";
  const firstLine = pyStrip(goal.split("\n", 1)[0] ?? "");
  const digest = createHash("sha256").update(goal).digest("hex").slice(0, 8);
  return `${slug(firstLine) || slug(record.harness) || "run"}-${digest}`;
}

export function scenarioOf(record: RunRecord): ScenarioInput {
  const firstLine = pyStrip((record.goal ?? "").split("\n", 1)[0] ?? "");
  const key = scenarioKeyOf(record);
  return {
    name: key,
    scenarioKey: key,
    useCase: firstLine ? pySlice(firstLine, 255) : `${record.harness} run`,
    tests: "",
    instruction: record.goal ?? "",
    persona: {},
  };
}

/** Activity that only a harness that actually started produces. */
function showsActivity(event: RunEvent): boolean {
  switch (event.type) {
    case "session.linked":
    case "model.requested":
    case "model.completed":
    case "model.call.started":
    case "model.call.completed":
    case "tool.started":
    case "tool.completed":
    case "usage.updated":
    case "approval.requested":
    case "question.requested":
      return true;
    case "message.delta":
    case "message.completed":
      return event.payload.role === "assistant";
    case "run.started":
    case "approval.resolved":
    case "question.answered":
    case "compaction.started":
    case "compaction.completed":
    case "budget.warning":
    case "heartbeat":
    case "network.connection":
    case "attachment.added":
    case "status.changed":
    case "problem":
    case "completed":
    case "failed":
      return false;
    default:
      return assertNever(event, "event type");
  }
}

function finiteMs(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** The conversation and tool calls in the order they happened; each call with its outcome. */
function transcriptOf(record: RunRecord, events: readonly RunEvent[]): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  const completions = new Map<string, Extract<RunEvent, { type: "tool.completed" }>["payload"]>();
  const denied = new Set<string>();
  let userSpoke = false;
  for (const event of events) {
    if (event.type === "tool.completed") completions.set(event.payload.callId, event.payload);
    if (event.type === "approval.resolved" && event.payload.decision === "deny") {
      denied.add(event.payload.approvalId);
    }
    if (event.type === "message.completed" && event.payload.role === "user") userSpoke = true;
  }
  // A driver that records the prompt as a user message says it itself; otherwise the goal is
  // the first thing the user said.
  if (!userSpoke && record.goal) {
    items.push({ kind: "message", speaker: "user", text: record.goal });
  }
  const started = new Set<string>();
  // Deltas not followed by a completed message of the same role are all that was said.
  const pending = new Map<string, string>();
  const flush = () => {
    for (const [speaker, text] of pending) items.push({ kind: "message", speaker, text });
    pending.clear();
  };
  for (const event of events) {
    switch (event.type) {
      case "message.delta":
        pending.set(
          event.payload.role,
          (pending.get(event.payload.role) ?? "") + event.payload.text,
        );
        break;
      case "message.completed": {
        pending.delete(event.payload.role);
        flush();
        const extra = event.payload as Record<string, unknown>;
        items.push({
          kind: "message",
          speaker: event.payload.role,
          text: event.payload.text,
          startTimeMs: finiteMs(extra.startTimeMs),
          endTimeMs: finiteMs(extra.endTimeMs),
        });
        break;
      }
      case "question.requested":
        flush();
        items.push({ kind: "message", speaker: "assistant", text: event.payload.text });
        break;
      case "question.answered":
        flush();
        items.push({ kind: "message", speaker: "user", text: event.payload.answer });
        break;
      case "tool.started": {
        flush();
        if (started.has(event.payload.callId)) break;
        started.add(event.payload.callId);
        const done = completions.get(event.payload.callId);
        const extra = (done ?? {}) as Record<string, unknown>;
        items.push({
          kind: "tool",
          name: event.payload.tool,
          arguments: event.payload.args,
          result: done?.result,
          error: done?.error ?? null,
          refused: extra.refused === true || denied.has(event.payload.callId),
        });
        break;
      }
      case "run.started":
      case "session.linked":
      case "model.requested":
      case "model.completed":
      case "model.call.started":
      case "model.call.completed":
      case "tool.completed":
      case "approval.requested":
      case "approval.resolved":
      case "usage.updated":
      case "compaction.started":
      case "compaction.completed":
      case "budget.warning":
      case "heartbeat":
      case "network.connection":
      case "attachment.added":
      case "status.changed":
      case "problem":
      case "completed":
      case "failed":
        break;
      default:
        assertNever(event, "event type");
    }
  }
  flush();
  return items;
}

function finalAnswer(events: readonly RunEvent[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event.type === "completed" && typeof event.payload.result === "string") {
      return event.payload.result;
    }
    if (event.type === "message.completed" && event.payload.role === "assistant") {
      return event.payload.text;
    }
  }
  return null;
}

/** How the platform should show calls with these recordings: any audio makes them spoken. */
export function modalityOf(recordings: readonly RecordingSource[]): "text" | "voice" {
  return recordings.some((recording) => /^audio\//i.test(recording.contentType)) ? "voice" : "text";
}

/**
 * Why a settled run is a scenario that could not run to its end, or null when it did. The seed's
 * rule: a scenario that never ran is not one the agent failed, and the two must not arrive as the
 * same status. So only a completed run is a `completed` call; a run that failed (the harness
 * crashed, the model endpoint failed, a timeout) or was interrupted is a `failed` call with this
 * as its `error_message`. docs/platform.md has the table.
 */
export function unfinishedReason(record: RunRecord, ran: boolean): string | null {
  const reason = record.terminalReason;
  switch (record.status) {
    case "completed":
      return null;
    case "failed":
    case "interrupted":
      if (!ran) {
        return reason
          ? `the run never got going: ${reason}`
          : `the run ${record.status} before it started`;
      }
      return record.status === "failed"
        ? `the run failed: ${reason ?? "no reason was recorded"}`
        : `the run was interrupted: ${reason ?? "no reason was recorded"}`;
    case "queued":
    case "running":
    case "waiting":
      throw new RangeError(`Cannot report run ${record.id}: its status is ${record.status}`);
    default:
      return assertNever(record.status, "run status");
  }
}

/**
 * The report of one settled run: a scenario that passed when the run completed, or one that
 * could not finish (status `failed`, with why) when it failed or was interrupted.
 */
export function runReportOf(
  record: RunRecord,
  events: readonly RunEvent[],
  options: { runDir: string },
): RunReport {
  if (isActiveStatus(record.status)) {
    throw new RangeError(`Cannot report run ${record.id}: its status is ${record.status}`);
  }
  const live = events.filter((event) => event.ignored === undefined);
  const unfinished = unfinishedReason(record, live.some(showsActivity));
  let spentUsd = 0;
  let usage: Record<string, unknown> | null = null;
  const recordings: RecordingSource[] = [];
  for (const event of live) {
    if (event.type === "usage.updated") {
      usage = event.payload;
      spentUsd = event.payload.costUsd ?? spentUsd;
    }
    if (event.type === "attachment.added") {
      const { name, path, contentType, bytes, sha256 } = event.payload;
      recordings.push({
        name,
        path: path.startsWith("/") ? path : joinPath(options.runDir, path),
        contentType,
        bytes,
        sha256,
      });
    }
  }
  const startedMs = Date.parse(record.startedAt);
  const endedMs = record.endedAt ? Date.parse(record.endedAt) : startedMs;
  const scenario = scenarioOf(record);
  return {
    runId: record.id,
    scenario,
    recordings,
    outcome: {
      scenario: scenario.name,
      transcript: transcriptOf(record, live),
      problems: unfinished === null ? [] : [unfinished],
      ended: record.terminalReason ?? record.status,
      passed: record.status === "completed",
      spentUsd,
      seconds: Math.max(0, (endedMs - startedMs) / 1000),
      metadata: {
        reins_run_id: record.id,
        reins_session_id: record.sessionId,
        reins_context_id: record.contextId,
        reins_harness: record.harness,
        reins_driver: record.driver,
        reins_status: record.status,
        reins_answer: finalAnswer(live),
        reins_usage: usage,
      },
    },
  };
}
