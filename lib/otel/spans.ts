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
import { type AgentFacts, agentOf, AgentScan } from "./agent.ts";
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
  /** Its place among the children in the order they were made. */
  index: number;
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
  const events = allEvents.filter(isOfTheRun);
  const builder = new RunSpans(record, agentOf(record, events), events.at(-1)?.timestamp, options);
  for (const event of events) builder.add(event);
  builder.finish();
  return builder.spans();
}

const isOfTheRun = (event: RunEvent) => event.ignored === undefined;

/**
 * How a builder that streams hands over its children (streamRunSpans): each child's draft as
 * soon as nothing more can change it, with its place in the order children are made. A tool call
 * an approval may still land on is held until the end: one whose call id is in `hold` (which the
 * builder adds to), or that an approval already gated.
 */
interface Streaming {
  hold: Set<string>;
  /** `reported`: one of the chat spans of the calls a harness only reported. */
  release: (draft: Draft, index: number, reported: boolean) => void;
  /** Whether to make the chat spans of the calls a harness only reported (see finish). */
  reportedChats: boolean;
}

/**
 * Raised when an approval names a call that may have been a tool call released already (its
 * spans handed over without the approval): the first pass starts again holding that call.
 */
class HoldAndRestart extends Error {
  constructor(readonly callId: string) {
    super(`hold tool call ${callId}`);
  }
}

/** A set of strings in 1 MiB that may say yes for one never added, never no for one added. */
class Bloom {
  readonly #bits = new Uint8Array(1 << 20);
  #positions(text: string): number[] {
    let a = 0x811c9dc5;
    let b = 0x01000193;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
    }
    const size = this.#bits.length * 8;
    return [0, 1, 2, 3].map((k) => ((a + Math.imul(k, b | 1)) >>> 0) % size);
  }
  add(text: string): void {
    for (const at of this.#positions(text)) this.#bits[at >>> 3] |= 1 << (at & 7);
  }
  mayHave(text: string): boolean {
    return this.#positions(text).every((at) => (this.#bits[at >>> 3] & (1 << (at & 7))) !== 0);
  }
}

/** What a source of a run's events gives: its events, in the log's order, each time it is read. */
export type EventSource = Iterable<RunEvent>;

/**
 * The spans of one run as runSpans() makes them, same spans in the same order, without holding
 * them: the events are read twice, and each child span is yielded as soon as it and every span
 * before it are final. The first reading finds the root span (which needs the whole run and goes
 * first), where each child falls in the order (by start, then creation), and the chat spans of
 * calls a harness only reported; the second makes the children again and yields them in that
 * order. What stays in memory is the open spans, those done but waiting for one that started
 * before them, 16 bytes a child for the order, the approvals, and, for a harness that reports its
 * calls only through what they produced (no model events), one entry a model call and tool call.
 */
export function* streamRunSpans(
  record: RunRecord,
  source: EventSource,
  options: SpanOptions,
): Generator<Span, number> {
  const first = firstPass(record, source, options);
  yield first.root;
  const { order, count } = first;
  const waiting = new Map<number, Draft>();
  const spanOf = spanMaker(record);
  let next = 0;
  const ready: Span[] = [];
  const drain = () => {
    while (next < count) {
      const index = order[next];
      const draft = waiting.get(index) ?? first.reported.get(index);
      if (draft === undefined) return;
      waiting.delete(index);
      ready.push(spanOf(draft, false));
      next++;
    }
  };
  const builder = new RunSpans(record, first.agent, first.lastTimestamp, options, {
    hold: new Set(first.hold),
    release: (draft, index) => {
      waiting.set(index, draft);
      if (index === order[next]) drain();
    },
    reportedChats: false,
  });
  drain();
  for (const event of source) {
    if (!isOfTheRun(event)) continue;
    builder.add(event);
    if (ready.length) yield* ready.splice(0);
  }
  builder.finish();
  drain();
  yield* ready.splice(0);
  if (next !== count) {
    throw new Error(`the second reading of run ${record.id} made ${next} of ${count} spans`);
  }
  return count + 1;
}

interface FirstPass {
  root: Span;
  agent: AgentFacts;
  lastTimestamp: string | undefined;
  /** The children's creation indices, in the order they go. */
  order: Uint32Array;
  count: number;
  /** The chat spans of calls a harness only reported, by creation index. */
  reported: Map<number, Draft>;
  /** The call ids whose tool calls are held to the end. */
  hold: Set<string>;
}

function firstPass(record: RunRecord, source: EventSource, options: SpanOptions): FirstPass {
  const hold = new Set<string>();
  for (;;) {
    try {
      return firstPassHolding(record, source, options, hold);
    } catch (error) {
      if (!(error instanceof HoldAndRestart)) throw error;
      hold.add(error.callId);
    }
  }
}

function firstPassHolding(
  record: RunRecord,
  source: EventSource,
  options: SpanOptions,
  holding: ReadonlySet<string>,
): FirstPass {
  const scan = new AgentScan();
  let starts = new Float64Array(1024);
  let count = 0;
  const reported = new Map<number, Draft>();
  let lastTimestamp: string | undefined;
  const hold = new Set(holding);
  const builder = new RunSpans(record, scan.facts(record), undefined, options, {
    hold,
    release: (draft, index, isReported) => {
      if (index >= starts.length) {
        const more = new Float64Array(starts.length * 2);
        more.set(starts);
        starts = more;
      }
      starts[index] = draft.startMs;
      count = Math.max(count, index + 1);
      // Made at the end, from what every event said: the second reading takes them from here.
      if (isReported) reported.set(index, draft);
    },
    reportedChats: true,
  });
  for (const event of source) {
    if (!isOfTheRun(event)) continue;
    scan.add(event);
    lastTimestamp = event.timestamp;
    builder.add(event);
  }
  const agent = scan.facts(record);
  builder.conclude(agent, lastTimestamp);
  builder.finish();
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  const at = starts;
  order.sort((a, b) => at[a] - at[b] || a - b);
  return {
    root: spanMaker(record)(builder.rootDraft, true),
    agent,
    lastTimestamp,
    order,
    count,
    reported,
    // What the first reading learned: the second holds what it held and every approval's call.
    hold: new Set([...hold, ...builder.approvalCallIds]),
  };
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
  #runEndMs: number;
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
  /** The last `completed` or `failed` event: its result is the run's answer. */
  #lastOutcome: RunEvent | null = null;
  /** Children made so far (their creation index). */
  #made = 0;
  readonly #streaming: Streaming | null;
  /** Tool calls an approval gated: held to the end when streaming. */
  readonly #gated = new Set<ToolDraft>();
  /** When streaming: the call ids of tool calls released, and the earliest start of each. */
  readonly #released = new Bloom();
  readonly #releasedStarts = new Map<string, number>();
  /** Every call id an approval named. */
  readonly approvalCallIds = new Set<string>();

  constructor(
    readonly record: RunRecord,
    public agent: AgentFacts,
    lastTimestamp: string | undefined,
    readonly options: SpanOptions,
    streaming: Streaming | null = null,
  ) {
    this.#streaming = streaming;
    const runStartMs = timeOf(record.startedAt, 0);
    this.#previousMs = runStartMs;
    this.#root = {
      key: "root",
      name: `invoke_agent ${agent.name}`,
      kind: SpanKind.internal,
      startMs: runStartMs,
      endMs: runStartMs,
      attrs: {},
      events: [],
      error: null,
    };
    this.#runEndMs = runStartMs;
    this.conclude(agent, lastTimestamp);
  }

  /**
   * What only the whole run says, known before its end when the events were read before: the
   * agent and the last event's time (undefined without events).
   */
  conclude(agent: AgentFacts, lastTimestamp: string | undefined): void {
    this.agent = agent;
    const runStartMs = this.#root.startMs;
    const lastEventMs = lastTimestamp === undefined
      ? runStartMs
      : timeOf(lastTimestamp, runStartMs);
    this.#runEndMs = Math.max(runStartMs, timeOf(this.record.endedAt, lastEventMs));
    this.#root.endMs = this.#runEndMs;
  }

  get rootDraft(): Draft {
    return this.#root;
  }

  /** Whether the chat spans are those of the calls the harness reported (see finish). */
  get reportsChats(): boolean {
    return this.#modelCalls === 0 && this.#wireChats === 0;
  }

  /** Takes in one event (in the log's order). */
  add(event: RunEvent): void {
    const atMs = timeOf(event.timestamp, this.#previousMs);
    if (event.type === "completed" || event.type === "failed") this.#lastOutcome = event;
    this.#apply(event, atMs);
    this.#previousMs = atMs;
  }

  /** A chat span, final once made: kept, or when streaming handed over. */
  #addChat(draft: Draft, reported = false): void {
    const index = this.#made++;
    if (this.#streaming === null) this.#children.push(draft);
    else this.#streaming.release(draft, index, reported);
  }

  /** Hands over a finished tool call when streaming, unless an approval may still land on it. */
  #releaseTool(draft: ToolDraft): void {
    const streaming = this.#streaming;
    if (streaming === null || streaming.hold.has(draft.callId) || this.#gated.has(draft)) return;
    this.#settleTool(draft);
    this.#tools.splice(this.#tools.lastIndexOf(draft), 1);
    this.#released.add(draft.callId);
    if (streaming.reportedChats && this.reportsChats) {
      const before = this.#releasedStarts.get(draft.callId) ?? Infinity;
      this.#releasedStarts.set(draft.callId, Math.min(before, draft.startMs));
    } else if (this.#releasedStarts.size) {
      this.#releasedStarts.clear();
    }
    streaming.release(draft, draft.index, false);
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
      case "network.connection":
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
    this.#addChat(draft);
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
    // From its arrival: `model.call.started` is recorded once the call is on its way (up to a
    // few ms after it arrived, lib/gateway/call.ts), its duration counts from the arrival.
    const arrivedMs = Math.min(call.atMs, atMs - payload.durationMs);
    // To the answer's last piece (passed on to the harness as it came), not to the recording of
    // the call, which follows the saving of its bodies: by then the harness may have read the
    // answer and started the tool it asked for.
    const lastPieceMs = payload.chunks.at(-1)?.[1];
    const endMs = lastPieceMs === undefined
      ? atMs
      : Math.min(atMs, Math.max(arrivedMs, atMs - payload.durationMs + lastPieceMs));
    const draft = this.#chatDraft(`wire:${payload.callId}`, requested, arrivedMs, endMs);
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
    this.#addChat(draft);
  }

  /** An event of a model call the harness reported: the call runs from before its first to its last. */
  #reportedCall(ref: ModelCallRef | undefined, atMs: number, toolCallId: string | null): void {
    if (ref === undefined || this.#streaming?.reportedChats === false) return;
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
    if (gate) {
      gate.gated = draft;
      this.#gated.add(draft);
    }
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
    this.#releaseTool(draft);
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
    if (callId !== null) {
      this.approvalCallIds.add(callId);
      if (approval.gated !== null) this.#gated.add(approval.gated);
      const streaming = this.#streaming;
      // It lands, at the end, on the first tool call of that id: one released already would
      // miss it, so the reading starts again holding this call (see firstPass).
      if (streaming !== null && approval.gated === null && !streaming.hold.has(callId)) {
        if (this.#released.mayHave(callId)) throw new HoldAndRestart(callId);
        streaming.hold.add(callId);
      }
    }
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
    this.#addChat(draft);
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
      this.#addChat(draft);
    }
    this.#wireCalls.clear();
  }

  #toolDraft(callId: string, tool: string, sequence: number, atMs: number): ToolDraft {
    const draft: ToolDraft = {
      index: this.#made++,
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
    if (this.#streaming === null) this.#children.push(draft);
    return draft;
  }

  #openTool(callId: string): ToolDraft | undefined {
    return this.#tools.findLast((draft) => draft.callId === callId && !draft.done);
  }

  /** Finishes the spans once every event is in (and, when streaming, hands over the rest). */
  finish(): void {
    this.#closeUnansweredChat(this.#runEndMs);
    this.#closeUnansweredWireCalls();
    // A harness that reports its calls only through what they produced (Claude Code) has no
    // model events: its calls are the chat spans, unless the gateway recorded them at the wire.
    if (this.reportsChats && this.#streaming?.reportedChats !== false) this.#addReportedChats();
    this.#placeApprovals();
    this.#settleTools();
    this.#describeRoot();
    if (this.#streaming !== null) {
      for (const draft of this.#tools) this.#streaming.release(draft, draft.index, false);
    }
  }

  #addReportedChats(): void {
    for (const [id, call] of this.#reportedCalls) {
      const { model, stopReason, usage } = call.last;
      // The call is over once a tool it asked for starts (the driver stamps that moment itself,
      // a hair before the store stamps the event).
      let firstToolStart = Infinity;
      for (const tool of this.#tools) {
        if (call.toolCallIds.has(tool.callId)) {
          firstToolStart = Math.min(firstToolStart, tool.startMs);
        }
      }
      for (const callId of call.toolCallIds) {
        firstToolStart = Math.min(firstToolStart, this.#releasedStarts.get(callId) ?? Infinity);
      }
      const draft = this.#chatDraft(
        `reported:${id}`,
        model ?? this.agent.requestModel,
        call.startMs,
        Math.max(call.startMs, Math.min(call.endMs, firstToolStart)),
      );
      Object.assign(draft.attrs, {
        "gen_ai.response.id": id,
        "gen_ai.response.model": model ?? null,
        "gen_ai.response.finish_reasons": stopReason == null ? null : [finishReasonOf(stopReason)],
        ...usageAttrs(usage ?? null, this.agent),
      });
      this.#addChat(draft, true);
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
    for (const draft of this.#tools) this.#settleTool(draft);
  }

  #settleTool(draft: ToolDraft): void {
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
      "gen_ai.output.messages": options.content
        ? finalAnswer(this.#lastOutcome === null ? [] : [this.#lastOutcome], status)
        : null,
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

  /** The spans, root first, then the children by start (those that start together as made). */
  spans(): Span[] {
    const spanOf = spanMaker(this.record);
    const children = [...this.#children].sort((a, b) => a.startMs - b.startMs);
    return [spanOf(this.#root, true), ...children.map((draft) => spanOf(draft, false))];
  }
}

/** Makes the span of a run's draft: its ids, its times, its status. */
function spanMaker(record: RunRecord): (draft: Draft, isRoot: boolean) => Span {
  const traceId = traceIdOf(record.id);
  const rootSpanId = rootSpanIdOf(record.id);
  const links = familyLinks(record);
  return (draft, isRoot) => ({
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
}
