// A run seen as an A2A Task: one fold over the run's events that gives both the Task as it stands
// (GetTask, the first item of every stream) and the stream items each event causes (status and
// artifact updates). A live turn and a recorded run go through the same fold, so a client that
// reassembles a stream ends with the Task that GetTask answers, before a restart and after.
//
// The mapping: assistant text is one artifact, `response`, streamed in appended chunks; tool
// calls, usage, budget warnings and problems are WORKING status updates whose message has a line
// for people and a data part with the event; a pending approval or question is
// INPUT_REQUIRED with the question; the outcome is COMPLETED, FAILED, or CANCELED when the run was
// interrupted by CancelTask (any other interruption — the server stopping, a crash — is FAILED,
// with the reason).
import { assertNever } from "../core/assert_never.ts";
import type { RunEvent, RunRecord, RunStatus } from "../store/mod.ts";
import type {
  Artifact,
  Message,
  Part,
  StreamResponse,
  Task,
  TaskState,
  TaskStatus,
} from "./a2a/wire.ts";

/** The reason recorded on a run that CancelTask interrupted: what makes it CANCELED. */
export const CANCEL_REASON = "canceled by an A2A client (CancelTask)";
export const ARTIFACT_ID = "response";
/** The key of reins's own fields in a Task's metadata. */
export const METADATA_KEY = "reins";

/** The fields of a run record a task view starts from. */
export type TaskRecord = Pick<
  RunRecord,
  "id" | "contextId" | "sessionId" | "driver" | "goal" | "startedAt" | "status" | "terminalReason"
>;

export interface SnapshotOptions {
  /** Unset: all of it; 0: none (the field is left out). */
  historyLength?: number;
  includeArtifacts?: boolean;
}

interface Pending {
  kind: "approval" | "question";
  id: string;
  message: Message;
}

function json(value: unknown, max = 200): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function dataPart(event: string, payload: Record<string, unknown>): Part {
  return { data: { event, ...payload }, mediaType: "application/json" };
}

export class TaskView {
  readonly taskId: string;
  readonly contextId: string;
  readonly #sessionId: string;
  readonly #driver: string;
  #state: TaskState = "TASK_STATE_SUBMITTED";
  #status: TaskStatus;
  #runStatus: RunStatus;
  #text = "";
  #chunks = 0;
  /** Deltas seen since the last assistant message.completed: that message is already streamed. */
  #streamingMessage = false;
  /**
   * The text of the built-in loop's last streamed model call: its deltas end with the call
   * (model.completed), and its final answer's message.completed repeats it.
   */
  #streamedCall: string | null = null;
  /**
   * What of an assistant message the harness reported before the gateway's deltas of it came:
   * those are recorded after the call's bodies are saved, and may follow the harness's account.
   */
  #lateDeltas: string | null = null;
  #history: Message[] = [];
  #pending: Pending[] = [];
  #usage: Record<string, unknown> | null = null;
  #promptSeen = false;
  /** The prompt's id as its sender gave it (run.started's messageId), if it gave one. */
  #promptMessageId: string | null;
  readonly #goal: string | null;
  readonly #texts = new Map<string, string>();

  /** `promptMessageId`: the client's id of the prompt, known before run.started is folded in. */
  constructor(record: TaskRecord, options: { promptMessageId?: string } = {}) {
    this.#promptMessageId = options.promptMessageId ?? null;
    this.taskId = record.id;
    this.contextId = record.contextId ?? "";
    this.#sessionId = record.sessionId;
    this.#driver = record.driver;
    this.#goal = record.goal;
    this.#runStatus = "queued";
    this.#status = { state: this.#state, timestamp: record.startedAt };
  }

  /** A view of a recorded run: its events folded, then its record's outcome if they lack one. */
  static fromRecord(record: RunRecord, events: readonly RunEvent[]): TaskView {
    const view = new TaskView(record);
    for (const event of events) view.apply(event);
    view.settleFromRecord(record);
    return view;
  }

  get state(): TaskState {
    return this.#state;
  }

  /** The reins status the events have reached. */
  get runStatus(): RunStatus {
    return this.#runStatus;
  }

  get statusTimestamp(): string {
    return this.#status.timestamp ?? "";
  }

  /** The oldest approval or question the run waits for, if any. */
  get pending(): { kind: "approval" | "question"; id: string } | null {
    const first = this.#pending[0];
    return first ? { kind: first.kind, id: first.id } : null;
  }

  /** The final text so far (the `response` artifact). */
  get text(): string {
    return this.#text;
  }

  /** Folds one stored event in; returns the stream items it causes, in order. */
  apply(event: RunEvent): StreamResponse[] {
    if (event.ignored !== undefined) return [];
    const out: StreamResponse[] = [];
    switch (event.type) {
      case "run.started":
        if (typeof event.payload.messageId === "string" && event.payload.messageId !== "") {
          this.#promptMessageId = event.payload.messageId;
        }
        this.#runStatus = "running";
        this.#setState("TASK_STATE_WORKING", undefined, event.timestamp);
        break;
      case "message.delta":
        if (event.payload.role === "assistant" && event.payload.text !== "") {
          const late = this.#lateDeltas;
          this.#lateDeltas = null;
          if (late !== null && late.startsWith(event.payload.text)) {
            const rest = late.slice(event.payload.text.length);
            this.#lateDeltas = rest === "" ? null : rest;
            break;
          }
          if (!this.#streamingMessage) this.#separate(out);
          this.#streamingMessage = true;
          this.#appendText(event.payload.text, out);
        }
        break;
      case "message.completed":
        if (event.payload.role === "user") {
          if (!this.#promptSeen) {
            this.#promptSeen = true;
            this.#history.push(this.#message(this.#promptMessageId ?? event.id, "ROLE_USER", [{
              text: event.payload.text,
            }]));
          }
        } else if (event.payload.role === "assistant") {
          const streamed = this.#streamedCall;
          this.#streamedCall = null;
          if (this.#streamingMessage) this.#streamingMessage = false;
          else if (streamed !== null && streamed === event.payload.text) break;
          else if (event.payload.text !== "") {
            this.#separate(out);
            this.#appendText(event.payload.text, out);
            this.#lateDeltas = event.payload.text;
          }
        }
        break;
      case "tool.started":
        out.push(this.#working(event, `running ${event.payload.tool} ${json(event.payload.args)}`));
        break;
      case "tool.completed": {
        const { ok, error } = event.payload;
        const line = ok ? "tool call finished" : `tool call failed: ${error ?? "no reason given"}`;
        out.push(this.#working(event, line));
        break;
      }
      case "usage.updated": {
        this.#usage = { ...event.payload };
        const { inputTokens, outputTokens, costUsd } = event.payload;
        const cost = costUsd === null ? "" : `, $${costUsd.toFixed(4)}`;
        out.push(
          this.#working(
            event,
            `usage: ${inputTokens ?? 0} tokens in, ${outputTokens ?? 0} out${cost}`,
          ),
        );
        break;
      }
      case "budget.warning":
        out.push(
          this.#working(
            event,
            event.payload.ratio >= 1
              ? "the budget is spent: the agent is asked for a final answer"
              : `${Math.round(event.payload.ratio * 100)} % of the budget is spent`,
          ),
        );
        break;
      case "problem":
        out.push(
          this.#working(event, `problem (${event.payload.source}): ${event.payload.reason}`),
        );
        break;
      case "approval.requested": {
        const { approvalId, tool, args } = event.payload;
        this.#pending.push({
          kind: "approval",
          id: approvalId,
          message: this.#message(event.id, "ROLE_AGENT", [
            {
              text: `The agent asks to use ${tool} with ${
                json(args, 500)
              }. Reply "allow" or "deny" on this task.`,
            },
            dataPart(event.type, { approvalId, tool, args }),
          ]),
        });
        break;
      }
      case "question.requested": {
        const { questionId, text } = event.payload;
        this.#pending.push({
          kind: "question",
          id: questionId,
          message: this.#message(event.id, "ROLE_AGENT", [
            { text },
            dataPart(event.type, { questionId }),
          ]),
        });
        break;
      }
      case "approval.resolved":
      case "question.answered": {
        const id = event.type === "approval.resolved"
          ? event.payload.approvalId
          : event.payload.questionId;
        const kind = event.type === "approval.resolved" ? "approval" : "question";
        const at = this.#pending.findIndex((p) => p.kind === kind && p.id === id);
        if (at >= 0) {
          this.#history.push(this.#pending[at].message);
          this.#pending.splice(at, 1);
        }
        const text = event.type === "approval.resolved"
          ? `${event.payload.decision}${event.payload.reason ? `: ${event.payload.reason}` : ""}`
          : event.payload.answer;
        // The answer keeps the id its A2A message had (the server records it with the answer).
        const sent = (event.payload as { messageId?: unknown }).messageId;
        const messageId = typeof sent === "string" && sent !== "" ? sent : event.id;
        this.#history.push(this.#message(messageId, "ROLE_USER", [{ text }]));
        // Answered: the task goes on (or asks its next question) without waiting for the driver
        // to notice, so that what a client sees next is never the question it just answered.
        if (this.#state === "TASK_STATE_INPUT_REQUIRED") {
          const next = this.#pending[0];
          if (next) {
            this.#emitState("TASK_STATE_INPUT_REQUIRED", next.message, event.timestamp, out);
          } else this.#emitState("TASK_STATE_WORKING", undefined, event.timestamp, out);
        }
        break;
      }
      case "status.changed":
        this.#statusChanged(event, out);
        break;
      case "completed":
      case "failed":
        this.#settle(event.type, event.payload.reason, event.payload.result, event, out);
        break;
      case "model.completed":
        // The loop streams a call's text as deltas: the message ends with the call.
        if (this.#streamingMessage) {
          this.#streamingMessage = false;
          this.#streamedCall = event.payload.text;
        }
        break;
      case "session.linked":
      case "model.requested":
      case "model.call.started":
      case "model.call.completed":
      case "compaction.started":
      case "compaction.completed":
      case "heartbeat":
      case "attachment.added":
      case "network.connection":
        break;
      default:
        assertNever(event, "event");
    }
    return out;
  }

  /** For a run whose log lacks its outcome (unreadable, or cut short): the record's. */
  settleFromRecord(record: RunRecord): void {
    if (!TERMINAL.has(this.#state) && isSettled(record.status)) {
      const state = settledState(record.status, record.terminalReason);
      this.#runStatus = record.status;
      this.#setState(
        state,
        this.#reasonMessage(record.id, state, record.terminalReason),
        record.endedAt ?? this.statusTimestamp,
      );
    }
  }

  /**
   * The Task as JSON text. A settled task never changes, so its text is made once per set of
   * options (GetTask of a finished task is the most asked question there is).
   */
  snapshotText(options: SnapshotOptions = {}): string {
    if (!TERMINAL.has(this.#state)) return JSON.stringify(this.snapshot(options));
    const key = `${options.historyLength ?? ""}/${options.includeArtifacts ?? ""}`;
    let text = this.#texts.get(key);
    if (text === undefined) {
      text = JSON.stringify(this.snapshot(options));
      if (this.#texts.size < 8) this.#texts.set(key, text);
    }
    return text;
  }

  /** The Task as it stands. */
  snapshot(options: SnapshotOptions = {}): Task {
    const task: Task = {
      id: this.taskId,
      contextId: this.contextId,
      status: { ...this.#status },
    };
    if (options.includeArtifacts !== false && this.#text !== "") {
      task.artifacts = [this.#artifact(this.#text)];
    }
    const history = this.#historyNow();
    const limit = options.historyLength;
    if (limit === undefined) task.history = history;
    else if (limit > 0) task.history = history.slice(-limit);
    task.metadata = {
      [METADATA_KEY]: {
        status: this.#runStatus,
        sessionId: this.#sessionId,
        driver: this.#driver,
        ...(this.#usage ? { usage: this.#usage } : {}),
      },
    };
    return task;
  }

  #historyNow(): Message[] {
    const history = [...this.#history];
    if (!this.#promptSeen && this.#goal !== null) {
      history.unshift(
        this.#message(this.#promptMessageId ?? `${this.taskId}-prompt`, "ROLE_USER", [{
          text: this.#goal,
        }]),
      );
    }
    return history;
  }

  #artifact(text: string): Artifact {
    return { artifactId: ARTIFACT_ID, name: ARTIFACT_ID, parts: [{ text }] };
  }

  #message(messageId: string, role: Message["role"], parts: Part[]): Message {
    return { messageId, contextId: this.contextId, taskId: this.taskId, role, parts };
  }

  /** Between two assistant messages of a turn, a line break. */
  #separate(out: StreamResponse[]): void {
    if (this.#text !== "" && !this.#text.endsWith("\n")) this.#appendText("\n", out);
  }

  #appendText(text: string, out: StreamResponse[]): void {
    this.#text += text;
    out.push({
      artifactUpdate: {
        taskId: this.taskId,
        contextId: this.contextId,
        artifact: this.#artifact(text),
        append: this.#chunks > 0,
        lastChunk: false,
      },
    });
    this.#chunks++;
  }

  #working(event: RunEvent, line: string): StreamResponse {
    const message = this.#message(event.id, "ROLE_AGENT", [
      { text: line },
      dataPart(event.type, event.payload as Record<string, unknown>),
    ]);
    if (this.#state === "TASK_STATE_WORKING") {
      this.#status = { state: this.#state, message, timestamp: event.timestamp };
    }
    return {
      statusUpdate: {
        taskId: this.taskId,
        contextId: this.contextId,
        status: { state: "TASK_STATE_WORKING", message, timestamp: event.timestamp },
      },
    };
  }

  #statusChanged(
    event: Extract<RunEvent, { type: "status.changed" }>,
    out: StreamResponse[],
  ): void {
    const { status, reason } = event.payload;
    switch (status) {
      case "queued":
        this.#runStatus = status;
        this.#emitState("TASK_STATE_SUBMITTED", undefined, event.timestamp, out);
        break;
      case "running":
        this.#runStatus = status;
        if (this.#state !== "TASK_STATE_WORKING") {
          this.#emitState("TASK_STATE_WORKING", undefined, event.timestamp, out);
        }
        break;
      case "waiting": {
        this.#runStatus = status;
        const first = this.#pending[0];
        if (first) {
          this.#emitState("TASK_STATE_INPUT_REQUIRED", first.message, event.timestamp, out);
        }
        break;
      }
      case "completed":
      case "failed":
      case "interrupted":
        this.#settle(status, reason, undefined, event, out);
        break;
      default:
        assertNever(status);
    }
  }

  #settle(
    status: "completed" | "failed" | "interrupted",
    reason: string | null,
    result: unknown,
    event: RunEvent,
    out: StreamResponse[],
  ): void {
    if (TERMINAL.has(this.#state)) return;
    this.#runStatus = status;
    this.#pending = [];
    // An answer that never went through the assistant's messages (a program's declared result).
    if (this.#text === "" && typeof result === "string" && result !== "") {
      this.#appendText(result, out);
    }
    if (this.#chunks > 0) {
      out.push({
        artifactUpdate: {
          taskId: this.taskId,
          contextId: this.contextId,
          artifact: this.#artifact(""),
          append: true,
          lastChunk: true,
        },
      });
    }
    const state = settledState(status, reason);
    this.#emitState(state, this.#reasonMessage(event.id, state, reason), event.timestamp, out);
  }

  #reasonMessage(id: string, state: TaskState, reason: string | null): Message | undefined {
    if (state === "TASK_STATE_COMPLETED") return undefined;
    const text = state === "TASK_STATE_CANCELED"
      ? "The task was canceled"
      : this.#runStatus === "interrupted"
      ? `The run was interrupted: ${reason ?? "no reason recorded"}`
      : `The run failed: ${reason ?? "no reason recorded"}`;
    return this.#message(`${id}-status`, "ROLE_AGENT", [{ text }]);
  }

  #setState(state: TaskState, message: Message | undefined, timestamp: string): void {
    this.#state = state;
    this.#status = message ? { state, message, timestamp } : { state, timestamp };
  }

  #emitState(
    state: TaskState,
    message: Message | undefined,
    timestamp: string,
    out: StreamResponse[],
  ): void {
    this.#setState(state, message, timestamp);
    out.push({
      statusUpdate: { taskId: this.taskId, contextId: this.contextId, status: { ...this.#status } },
    });
  }
}

const TERMINAL: ReadonlySet<TaskState> = new Set([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
]);

function isSettled(status: RunStatus): status is "completed" | "failed" | "interrupted" {
  return status === "completed" || status === "failed" || status === "interrupted";
}

/** The Task state of a settled run. */
export function settledState(
  status: "completed" | "failed" | "interrupted",
  reason: string | null,
): TaskState {
  switch (status) {
    case "completed":
      return "TASK_STATE_COMPLETED";
    case "failed":
      return "TASK_STATE_FAILED";
    case "interrupted":
      return reason === CANCEL_REASON ? "TASK_STATE_CANCELED" : "TASK_STATE_FAILED";
    default:
      return assertNever(status);
  }
}

/** The Task state a run record alone tells (for listing without reading events). */
export function recordState(record: Pick<RunRecord, "status" | "terminalReason">): TaskState {
  switch (record.status) {
    case "queued":
      return "TASK_STATE_SUBMITTED";
    case "running":
      return "TASK_STATE_WORKING";
    case "waiting":
      return "TASK_STATE_INPUT_REQUIRED";
    case "completed":
    case "failed":
    case "interrupted":
      return settledState(record.status, record.terminalReason);
    default:
      return assertNever(record.status);
  }
}
