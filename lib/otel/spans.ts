// One run as spans, following the GenAI conventions (semantic conventions 1.41): the root
// `invoke_agent {agent}` span, an `execute_tool {tool}` child per tool call, a `chat {model}`
// child per model call the harness reported, and span events for approvals, questions,
// compactions, budget warnings and problems. Pure and deterministic: the same record and events
// give the same spans, ids included; every time comes from the recording. Text a person typed
// or a model or tool produced is only added when `content` is asked for. Read from reins's own
// event contract alone: a harness's lines (`native`) are never looked at — its driver recorded
// what the trace needs (docs/events.md).
import { assertNever } from "../core/assert_never.ts";
import type { ModelCallRef, RunEvent, RunRecord, ToolCall, Usage } from "../store/mod.ts";
import { type AgentFacts, agentOf } from "./agent.ts";
import { finishReasonOf, inputMessages, outputMessages, toolValue } from "./content.ts";
import { rootSpanIdOf, spanIdOf, traceIdOf } from "./ids.ts";
import {
  type Attrs,
  type Draft,
  type EventOf,
  familyLinks,
  finalAnswer,
  num,
  obj,
  type RootEvent,
  rootEventAttrs,
  spanEvent,
  str,
  timeOf,
  usageAttrs,
  withError,
} from "./span_parts.ts";
import {
  double,
  type Span,
  SPAN_FLAGS,
  type SpanEvent,
  SpanKind,
  StatusCode,
  unixNano,
} from "./wire.ts";

export interface SpanOptions {
  /** Prompt, answers, tool arguments and results, questions and answers: only when true. */
  content: boolean;
}

interface ToolDraft extends Draft {
  callId: string;
  tool: string;
  /** The tool's error text when it failed. */
  failure: string | null;
  done: boolean;
}

interface Approval {
  approvalId: string;
  tool: string;
  callId: string | null;
  atMs: number;
  denied: boolean;
  events: SpanEvent[];
  /** The tool call it gated, once known. */
  gated: ToolDraft | null;
}

/** A model call the harness reported through the events it produced (`modelCall`), by id. */
interface ReportedCall {
  startMs: number;
  endMs: number;
  /** The last event's reference: its usage is the call's. */
  last: ModelCallRef;
  /** The tool calls it asked for. */
  toolCallIds: Set<string>;
}

/** The spans of one run, root first, then its children in the order they started. */
export function runSpans(
  record: RunRecord,
  allEvents: readonly RunEvent[],
  options: SpanOptions,
): Span[] {
  // What arrived after the run settled is evidence, not part of the run.
  const events = allEvents.filter((event) => event.ignored === undefined);
  const builder = new RunSpans(record, agentOf(record, events), events, options);
  for (const event of events) builder.add(event);
  return builder.finish();
}

/**
 * The spans of one run, built event by event (add), then finished: the root span, a chat span
 * per model call, a tool span per tool call, and span events on them.
 */
class RunSpans {
  readonly #root: Draft;
  readonly #children: Draft[] = [];
  readonly #tools: ToolDraft[] = [];
  readonly #approvals = new Map<string, Approval>();
  readonly #reportedCalls = new Map<string, ReportedCall>();
  readonly #callUsage: Record<string, number> = {};
  readonly #runEndMs: number;
  #pendingChat: { atMs: number; purpose: string | null; sequence: number } | null = null;
  /** The calls the model gateway recorded, by call id, until they complete. */
  readonly #wireCalls = new Map<
    string,
    { atMs: number; started: EventOf<"model.call.started">["payload"] }
  >();
  #wireChats = 0;
  #usageTotals: Usage | null = null;
  #modelCalls = 0;
  #problems = 0;
  #previousMs: number;
  #terminal: { status: string; reason: string | null } | null = null;

  constructor(
    readonly record: RunRecord,
    readonly agent: AgentFacts,
    readonly events: readonly RunEvent[],
    readonly options: SpanOptions,
  ) {
    const runStartMs = timeOf(record.startedAt, 0);
    const lastEventMs = events.length ? timeOf(events.at(-1)!.timestamp, runStartMs) : runStartMs;
    this.#runEndMs = Math.max(runStartMs, timeOf(record.endedAt, lastEventMs));
    this.#previousMs = runStartMs;
    this.#root = {
      key: "root",
      name: `invoke_agent ${agent.name}`,
      kind: SpanKind.internal,
      startMs: runStartMs,
      endMs: this.#runEndMs,
      attrs: {},
      events: [],
      error: null,
    };
  }

  /** Takes in one event (in the log's order). */
  add(event: RunEvent): void {
    const atMs = timeOf(event.timestamp, this.#previousMs);
    this.#apply(event, atMs);
    this.#previousMs = atMs;
  }

  #apply(event: RunEvent, atMs: number): void {
    switch (event.type) {
      case "model.requested":
        return this.#modelRequested(event, atMs);
      case "model.completed":
        return this.#modelCompleted(event, atMs);
      case "model.call.started":
        this.#wireCalls.set(event.payload.callId, { atMs, started: event.payload });
        return;
      case "model.call.completed":
        return this.#wireCallCompleted(event, atMs);
      case "message.completed":
        return this.#reportedCall(event.payload.modelCall, atMs, null);
      case "tool.started":
        return this.#toolStarted(event, atMs);
      case "tool.completed":
        return this.#toolCompleted(event, atMs);
      case "approval.requested":
        return this.#approvalRequested(event, atMs);
      case "approval.resolved":
        return this.#approvalResolved(event, atMs);
      case "question.requested":
      case "question.answered":
      case "compaction.started":
      case "compaction.completed":
      case "budget.warning":
        return this.#rootEvent(event, atMs);
      case "problem":
        this.#problems++;
        return this.#rootEvent(event, atMs);
      case "usage.updated":
        this.#usageTotals = event.payload;
        return;
      case "completed":
      case "failed":
        this.#terminal = { status: event.type, reason: event.payload.reason };
        return;
      case "status.changed":
        if (["completed", "failed", "interrupted"].includes(event.payload.status)) {
          this.#terminal = { status: event.payload.status, reason: event.payload.reason };
        }
        return;
      case "run.started":
      case "session.linked":
      case "message.delta":
      case "heartbeat":
      case "attachment.added":
        return;
      default:
        assertNever(event, "event");
    }
  }

  #modelRequested(event: EventOf<"model.requested">, atMs: number): void {
    this.#closeUnansweredChat(atMs);
    const purpose = str((event.payload as { purpose?: unknown }).purpose);
    this.#pendingChat = { atMs, purpose, sequence: event.sequence };
  }

  #modelCompleted(event: EventOf<"model.completed">, atMs: number): void {
    this.#modelCalls++;
    const payload = event.payload;
    const draft = this.#chatDraft(
      `chat:${event.sequence}`,
      this.agent.requestModel,
      this.#pendingChat?.atMs ?? this.#previousMs,
      atMs,
    );
    const finish = finishReasonOf(payload.stopReason);
    Object.assign(draft.attrs, {
      "gen_ai.response.finish_reasons": [finish],
      ...usageAttrs(payload.usage, this.agent),
      "reins.model.purpose": this.#pendingChat?.purpose ?? null,
      "reins.cost_usd": num(payload.usage?.costUsd) === null
        ? null
        : double(payload.usage!.costUsd!),
    });
    if (this.options.content) {
      draft.attrs["gen_ai.output.messages"] = outputMessages(
        payload.text,
        payload.toolCalls as ToolCall[],
        finish,
      );
    }
    for (const [name, value] of Object.entries(payload.usage ?? {})) {
      if (typeof value === "number") this.#callUsage[name] = (this.#callUsage[name] ?? 0) + value;
    }
    this.#children.push(draft);
    this.#pendingChat = null;
  }

  /**
   * A call the model gateway recorded at the wire (every harness's, through it): a chat span for
   * each call that asks a model to generate, from its arrival to the end of its answer.
   */
  #wireCallCompleted(event: EventOf<"model.call.completed">, atMs: number): void {
    const payload = event.payload;
    const call = this.#wireCalls.get(payload.callId);
    this.#wireCalls.delete(payload.callId);
    if (call === undefined || !call.started.generates) return;
    this.#wireChats++;
    const requested = call.started.model ?? this.agent.requestModel;
    const draft = this.#chatDraft(`wire:${payload.callId}`, requested, call.atMs, atMs);
    const anthropic = call.started.wire.startsWith("anthropic.");
    Object.assign(draft.attrs, {
      "gen_ai.request.model": requested,
      "gen_ai.response.id": payload.responseId ?? null,
      "gen_ai.response.model": payload.model,
      "gen_ai.response.finish_reasons": payload.stopReason === null
        ? null
        : [finishReasonOf(payload.stopReason)],
      ...usageAttrs(payload.usage, { ...this.agent, inputExcludesCache: anthropic }),
      "http.response.status_code": payload.status,
      "reins.model.call.id": payload.callId,
      "reins.model.wire": call.started.wire,
      "reins.model.first_byte_ms": payload.firstByteMs === null
        ? null
        : double(payload.firstByteMs),
      "reins.cost_usd": num(payload.usage?.costUsd) === null
        ? null
        : double(payload.usage!.costUsd!),
    });
    if (payload.outcome !== "ok") {
      draft.error = {
        type: payload.outcome === "error" ? String(payload.status ?? "error") : payload.outcome,
        message: payload.error ?? null,
      };
    }
    this.#children.push(draft);
  }

  /** An event of a model call the harness reported: the call runs from before its first to its last. */
  #reportedCall(ref: ModelCallRef | undefined, atMs: number, toolCallId: string | null): void {
    if (ref === undefined) return;
    const call = this.#reportedCalls.get(ref.id) ??
      { startMs: this.#previousMs, endMs: atMs, last: ref, toolCallIds: new Set<string>() };
    call.endMs = atMs;
    call.last = ref;
    if (toolCallId !== null) call.toolCallIds.add(toolCallId);
    this.#reportedCalls.set(ref.id, call);
  }

  #toolStarted(event: EventOf<"tool.started">, atMs: number): void {
    const { callId, tool, args, modelCall } = event.payload;
    this.#reportedCall(modelCall, atMs, callId);
    const draft = this.#toolDraft(callId, tool, event.sequence, atMs);
    if (this.options.content) draft.attrs["gen_ai.tool.call.arguments"] = toolValue(args);
    // The loop asks before a call without naming it: the approval gates its next call.
    const gate = [...this.#approvals.values()].find((approval) =>
      approval.callId === null && approval.gated === null && approval.tool === tool
    );
    if (gate) gate.gated = draft;
  }

  #toolCompleted(event: EventOf<"tool.completed">, atMs: number): void {
    const { callId, ok, error, result } = event.payload;
    const draft = this.#openTool(callId) ??
      this.#toolDraft(callId, str(obj(event.payload).tool) ?? "unknown", event.sequence, atMs);
    draft.done = true;
    draft.startMs = Math.min(draft.startMs, timeOf(event.payload.startedAt, draft.startMs));
    draft.endMs = Math.max(draft.startMs, timeOf(event.payload.finishedAt, atMs));
    if (!ok) draft.failure = error ?? "";
    else if (this.options.content) draft.attrs["gen_ai.tool.call.result"] = toolValue(result);
  }

  #approvalRequested(event: EventOf<"approval.requested">, atMs: number): void {
    const { approvalId, tool } = event.payload;
    const callId = str(obj(event.payload).callId);
    const approval: Approval = {
      approvalId,
      tool,
      callId,
      atMs,
      denied: false,
      events: [],
      gated: callId === null ? null : this.#openTool(callId) ?? null,
    };
    approval.events.push(spanEvent("reins.approval.requested", atMs, {
      "reins.approval.id": approvalId,
      "gen_ai.tool.name": tool,
      "gen_ai.tool.call.id": callId,
      "gen_ai.tool.call.arguments": this.options.content ? toolValue(event.payload.args) : null,
    }));
    this.#approvals.set(approvalId, approval);
  }

  #approvalResolved(event: EventOf<"approval.resolved">, atMs: number): void {
    const { approvalId, decision, by } = event.payload;
    const resolved = spanEvent("reins.approval.resolved", atMs, {
      "reins.approval.id": approvalId,
      "reins.approval.decision": decision,
      "reins.approval.by": by,
      "reins.approval.reason": str(event.payload.reason),
    });
    const approval = this.#approvals.get(approvalId);
    if (approval === undefined) {
      this.#root.events.push(resolved);
      return;
    }
    approval.denied ||= decision === "deny";
    approval.events.push(resolved);
  }

  /** The events that are span events of the root: questions, compactions, budgets, problems. */
  #rootEvent(
    event: RootEvent,
    atMs: number,
  ): void {
    const content = this.options.content;
    this.#root.events.push(spanEvent(`reins.${event.type}`, atMs, rootEventAttrs(event, content)));
  }

  #chatDraft(key: string, model: string | null, startMs: number, endMs: number): Draft {
    return {
      key,
      name: model ? `chat ${model}` : "chat",
      kind: this.agent.inProcess ? SpanKind.internal : SpanKind.client,
      startMs,
      endMs: Math.max(startMs, endMs),
      attrs: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": this.agent.provider,
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": this.record.contextId,
      } as Attrs,
      events: [],
      error: null,
    };
  }

  #closeUnansweredChat(atMs: number): void {
    const pending = this.#pendingChat;
    if (pending === null) return;
    const draft = this.#chatDraft(
      `chat:${pending.sequence}`,
      this.agent.requestModel,
      pending.atMs,
      atMs,
    );
    draft.attrs["reins.model.purpose"] = pending.purpose;
    draft.error = { type: "incomplete", message: "the model call never answered" };
    this.#children.push(draft);
    this.#pendingChat = null;
  }

  /** A call the run never saw answered (reins was stopped mid-call): a span that says so. */
  #closeUnansweredWireCalls(): void {
    for (const [callId, call] of this.#wireCalls) {
      if (!call.started.generates) continue;
      this.#wireChats++;
      const draft = this.#chatDraft(
        `wire:${callId}`,
        call.started.model ?? this.agent.requestModel,
        call.atMs,
        this.#runEndMs,
      );
      draft.attrs["reins.model.call.id"] = callId;
      draft.error = { type: "incomplete", message: "the model call never answered" };
      this.#children.push(draft);
    }
    this.#wireCalls.clear();
  }

  #toolDraft(callId: string, tool: string, sequence: number, atMs: number): ToolDraft {
    const draft: ToolDraft = {
      key: `tool:${callId}:${sequence}`,
      name: `execute_tool ${tool}`,
      kind: SpanKind.internal,
      startMs: atMs,
      endMs: atMs,
      attrs: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": callId,
      },
      events: [],
      error: null,
      callId,
      tool,
      failure: null,
      done: false,
    };
    this.#tools.push(draft);
    this.#children.push(draft);
    return draft;
  }

  #openTool(callId: string): ToolDraft | undefined {
    return this.#tools.findLast((draft) => draft.callId === callId && !draft.done);
  }

  /** The spans, once every event is in. */
  finish(): Span[] {
    this.#closeUnansweredChat(this.#runEndMs);
    this.#closeUnansweredWireCalls();
    // A harness that reports its calls only through what they produced (Claude Code) has no
    // model events: its calls are the chat spans, unless the gateway recorded them at the wire.
    if (this.#modelCalls === 0 && this.#wireChats === 0) this.#addReportedChats();
    this.#placeApprovals();
    this.#settleTools();
    this.#describeRoot();
    return this.#spans();
  }

  #addReportedChats(): void {
    for (const [id, call] of this.#reportedCalls) {
      const { model, stopReason, usage } = call.last;
      // The call is over once a tool it asked for starts (the driver stamps that moment itself,
      // a hair before the store stamps the event).
      const toolStarts = this.#tools.filter((draft) => call.toolCallIds.has(draft.callId))
        .map((draft) => draft.startMs);
      const draft = this.#chatDraft(
        `chat:${id}`,
        model ?? this.agent.requestModel,
        call.startMs,
        Math.max(call.startMs, Math.min(call.endMs, ...toolStarts)),
      );
      Object.assign(draft.attrs, {
        "gen_ai.response.id": id,
        "gen_ai.response.model": model ?? null,
        "gen_ai.response.finish_reasons": stopReason == null ? null : [finishReasonOf(stopReason)],
        ...usageAttrs(usage ?? null, this.agent),
      });
      this.#children.push(draft);
    }
  }

  /**
   * Approvals go on the tool call they gated (which then starts when it was asked for), the
   * rest on the root span. A Claude Code approval names its call, which may start after it.
   */
  #placeApprovals(): void {
    for (const approval of this.#approvals.values()) {
      const gated = approval.gated ??
        (approval.callId === null
          ? null
          : this.#tools.find((draft) => draft.callId === approval.callId) ?? null);
      const target = gated ?? this.#root;
      if (gated) gated.startMs = Math.min(gated.startMs, approval.atMs);
      target.events.push(...approval.events);
      if (gated && approval.denied) gated.error = { type: "denied", message: null };
    }
  }

  #settleTools(): void {
    for (const draft of this.#tools) {
      draft.events.sort((a, b) => a.timeUnixNano < b.timeUnixNano ? -1 : 1);
      if (!draft.done) {
        // A tool call the run never saw finish.
        draft.endMs = Math.max(draft.startMs, this.#runEndMs);
        draft.error = {
          type: "incomplete",
          message: "the run ended before the tool call finished",
        };
      } else if (draft.failure !== null) {
        const denied = draft.error?.type === "denied" || /^denied by\b/i.test(draft.failure);
        draft.error = {
          type: denied ? "denied" : "tool_error",
          message: this.options.content && draft.failure !== "" ? draft.failure : null,
        };
      }
    }
  }

  #describeRoot(): void {
    const { record, agent, options } = this;
    const status = this.#terminal?.status ?? record.status;
    const reason = this.#terminal?.reason ?? record.terminalReason;
    const totals: Partial<Usage> | null = this.#usageTotals ??
      (Object.keys(this.#callUsage).length ? this.#callUsage as Partial<Usage> : null);
    this.#root.attrs = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": agent.provider,
      "gen_ai.agent.name": agent.name,
      "gen_ai.agent.version": agent.version,
      "gen_ai.request.model": agent.requestModel,
      "gen_ai.conversation.id": record.contextId,
      ...usageAttrs(totals, agent),
      "reins.run.id": record.id,
      "reins.session.id": record.sessionId,
      "reins.native_session.id": record.nativeSessionId,
      "reins.harness": record.harness,
      "reins.driver": record.driver,
      "reins.trigger": record.trigger,
      "reins.status": status,
      "reins.cost_usd": num(totals?.costUsd) === null ? null : double(totals!.costUsd!),
      "reins.cost_estimated": totals?.costEstimated === true ? true : null,
      "reins.model.requests": num(totals?.requests) ?? (this.#modelCalls || null),
      "reins.exit_code": record.exitCode,
      "reins.run.parent_id": record.parentRunId,
      "reins.run.resumed_from_id": record.resumedFromRunId,
      "reins.run.relation": record.relation,
      "reins.problems": this.#problems || null,
      "gen_ai.input.messages": options.content && record.goal !== null
        ? inputMessages(record.goal)
        : null,
      "gen_ai.output.messages": options.content ? finalAnswer(this.events, status) : null,
    };
    if (status === "failed" || status === "interrupted") {
      this.#root.error = {
        type: status === "interrupted"
          ? "interrupted"
          : /^timed out\b/.test(reason ?? "")
          ? "timeout"
          : "failed",
        message: reason,
      };
    }
  }

  #spans(): Span[] {
    const { record } = this;
    const traceId = traceIdOf(record.id);
    const rootSpanId = rootSpanIdOf(record.id);
    const links = familyLinks(record);
    const toSpan = (draft: Draft, isRoot: boolean): Span => ({
      traceId,
      spanId: isRoot ? rootSpanId : spanIdOf(record.id, draft.key),
      ...(isRoot ? {} : { parentSpanId: rootSpanId }),
      name: draft.name,
      kind: draft.kind,
      startTimeUnixNano: unixNano(draft.startMs),
      endTimeUnixNano: unixNano(Math.max(draft.startMs, draft.endMs)),
      attributes: withError(draft),
      droppedAttributesCount: 0,
      events: draft.events,
      droppedEventsCount: 0,
      status: draft.error === null
        ? { code: StatusCode.unset }
        : draft.error.message
        ? { code: StatusCode.error, message: draft.error.message }
        : { code: StatusCode.error },
      links: isRoot ? links : [],
      droppedLinksCount: 0,
      flags: SPAN_FLAGS,
    });
    const children = [...this.#children].sort((a, b) => a.startMs - b.startMs);
    return [toSpan(this.#root, true), ...children.map((draft) => toSpan(draft, false))];
  }
}
