// One run as spans, following the GenAI conventions (semantic conventions 1.41): the root
// `invoke_agent {agent}` span, an `execute_tool {tool}` child per tool call, a `chat {model}`
// child per model call the harness reported, and span events for approvals, questions,
// compactions, budget warnings and problems. Pure and deterministic: the same record and events
// give the same spans, ids included; every time comes from the recording. Text a person typed
// or a model or tool produced is only added when `content` is asked for.
import { assertNever } from "../core/assert_never.ts";
import type { CallUsage, RunEvent, RunRecord, ToolCall, Usage } from "../store/contracts.ts";
import { type AgentFacts, agentOf } from "./agent.ts";
import { finishReasonOf, inputMessages, outputMessages, toolValue } from "./content.ts";
import { rootSpanIdOf, spanIdOf, traceIdOf } from "./ids.ts";
import {
  attributes,
  double,
  type KeyValue,
  type Plain,
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

type Attrs = Record<string, Plain | ReturnType<typeof double> | null | undefined>;

interface Draft {
  key: string;
  name: string;
  kind: SpanKind;
  startMs: number;
  endMs: number;
  attrs: Attrs;
  events: SpanEvent[];
  error: { type: string; message: string | null } | null;
}

type Line = Record<string, unknown>;
const obj = (value: unknown): Line =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Line : {};
const num = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : null;
const str = (value: unknown): string | null => typeof value === "string" ? value : null;

function timeOf(iso: string | null | undefined, fallback: number): number {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? ms : fallback;
}

function spanEvent(name: string, atMs: number, attrs: Attrs): SpanEvent {
  return {
    timeUnixNano: unixNano(atMs),
    name,
    attributes: attributes(attrs),
    droppedAttributesCount: 0,
  };
}

/** Token counts in the conventions' names; input includes cache reads and writes. */
function usageAttrs(usage: Partial<Usage> | CallUsage | null, agent: AgentFacts): Attrs {
  if (usage === null) return {};
  const input = num(usage.inputTokens);
  const cacheRead = num(usage.cacheReadTokens);
  const cacheWrite = num(usage.cacheWriteTokens);
  return {
    "gen_ai.usage.input_tokens": input === null
      ? null
      : agent.inputExcludesCache
      ? input + (cacheRead ?? 0) + (cacheWrite ?? 0)
      : input,
    "gen_ai.usage.output_tokens": num(usage.outputTokens),
    "gen_ai.usage.cache_read.input_tokens": cacheRead,
    "gen_ai.usage.cache_creation.input_tokens": cacheWrite,
    "gen_ai.usage.reasoning.output_tokens": num(usage.reasoningTokens),
  };
}

/** The usage of Claude Code's per-message `usage`, in reins's names. */
function anthropicUsage(value: unknown): CallUsage | null {
  const usage = obj(value);
  if (Object.keys(usage).length === 0) return null;
  const pick = (name: string) => num(usage[name]) ?? undefined;
  return {
    inputTokens: pick("input_tokens"),
    outputTokens: pick("output_tokens"),
    cacheReadTokens: pick("cache_read_input_tokens"),
    cacheWriteTokens: pick("cache_creation_input_tokens"),
  };
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

/** The spans of one run, root first, then its children in the order they started. */
export function runSpans(
  record: RunRecord,
  allEvents: readonly RunEvent[],
  options: SpanOptions,
): Span[] {
  // What arrived after the run settled is evidence, not part of the run.
  const events = allEvents.filter((event) => event.ignored === undefined);
  const agent = agentOf(record, events);
  const runStartMs = timeOf(record.startedAt, 0);
  const lastEventMs = events.length ? timeOf(events.at(-1)!.timestamp, runStartMs) : runStartMs;
  const runEndMs = Math.max(runStartMs, timeOf(record.endedAt, lastEventMs));
  const conversation = record.contextId;
  const content = options.content;

  const root: Draft = {
    key: "root",
    name: `invoke_agent ${agent.name}`,
    kind: SpanKind.internal,
    startMs: runStartMs,
    endMs: runEndMs,
    attrs: {},
    events: [],
    error: null,
  };
  const children: Draft[] = [];
  const toolDrafts: ToolDraft[] = [];
  const approvals = new Map<string, Approval>();
  let pendingChat: { atMs: number; purpose: string | null; sequence: number } | null = null;
  let usageTotals: Usage | null = null;
  const callUsage: Record<string, number> = {};
  let modelCalls = 0;
  let problems = 0;
  let previousMs = runStartMs;
  let terminal: { status: string; reason: string | null } | null = null;
  /** Claude Code's assistant messages, by message id: one model call each. */
  const messages = new Map<
    string,
    { startMs: number; endMs: number; native: Line; toolUseIds: Set<string> }
  >();

  const chatDraft = (
    key: string,
    model: string | null,
    startMs: number,
    endMs: number,
  ): Draft => ({
    key,
    name: model ? `chat ${model}` : "chat",
    kind: agent.inProcess ? SpanKind.internal : SpanKind.client,
    startMs,
    endMs: Math.max(startMs, endMs),
    attrs: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": agent.provider,
      "gen_ai.request.model": model,
      "gen_ai.conversation.id": conversation,
    } as Attrs,
    events: [],
    error: null,
  });

  const closeUnansweredChat = (atMs: number) => {
    if (pendingChat === null) return;
    const draft = chatDraft(
      `chat:${pendingChat.sequence}`,
      agent.requestModel,
      pendingChat.atMs,
      atMs,
    );
    draft.attrs["reins.model.purpose"] = pendingChat.purpose;
    draft.error = { type: "incomplete", message: "the model call never answered" };
    children.push(draft);
    pendingChat = null;
  };

  const toolDraft = (callId: string, tool: string, sequence: number, atMs: number): ToolDraft => {
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
    toolDrafts.push(draft);
    children.push(draft);
    return draft;
  };
  const openTool = (callId: string) =>
    toolDrafts.findLast((draft) => draft.callId === callId && !draft.done);

  for (const event of events) {
    const atMs = timeOf(event.timestamp, previousMs);
    const native = obj(event.native);
    if (
      agent.name === "claude-code" && native.type === "assistant" &&
      native.is_api_error_message !== true
    ) {
      const message = obj(native.message);
      const id = str(message.id);
      if (id !== null && message.model !== "<synthetic>") {
        const seen = messages.get(id) ??
          { startMs: previousMs, endMs: atMs, native, toolUseIds: new Set<string>() };
        seen.endMs = atMs;
        seen.native = native;
        const blocks = Array.isArray(message.content) ? message.content : [];
        for (const block of blocks) {
          const callId = str(obj(block).id);
          if (obj(block).type === "tool_use" && callId !== null) seen.toolUseIds.add(callId);
        }
        messages.set(id, seen);
      }
    }
    switch (event.type) {
      case "model.requested":
        closeUnansweredChat(atMs);
        pendingChat = { atMs, purpose: str(obj(event.payload).purpose), sequence: event.sequence };
        break;
      case "model.completed": {
        modelCalls++;
        const payload = event.payload;
        const draft = chatDraft(
          `chat:${event.sequence}`,
          agent.requestModel,
          pendingChat?.atMs ?? previousMs,
          atMs,
        );
        const finish = finishReasonOf(payload.stopReason);
        Object.assign(draft.attrs, {
          "gen_ai.response.finish_reasons": [finish],
          ...usageAttrs(payload.usage, agent),
          "reins.model.purpose": pendingChat?.purpose ?? null,
          "reins.cost_usd": num(payload.usage?.costUsd) === null
            ? null
            : double(payload.usage!.costUsd!),
        });
        if (content) {
          draft.attrs["gen_ai.output.messages"] = outputMessages(
            payload.text,
            payload.toolCalls as ToolCall[],
            finish,
          );
        }
        for (const [name, value] of Object.entries(payload.usage ?? {})) {
          if (typeof value === "number") callUsage[name] = (callUsage[name] ?? 0) + value;
        }
        children.push(draft);
        pendingChat = null;
        break;
      }
      case "tool.started": {
        const { callId, tool, args } = event.payload;
        const draft = toolDraft(callId, tool, event.sequence, atMs);
        if (content) draft.attrs["gen_ai.tool.call.arguments"] = toolValue(args);
        // The loop asks before a call without naming it: the approval gates its next call.
        const gate = [...approvals.values()].find((approval) =>
          approval.callId === null && approval.gated === null && approval.tool === tool
        );
        if (gate) gate.gated = draft;
        break;
      }
      case "tool.completed": {
        const { callId, ok, error, result } = event.payload;
        const draft = openTool(callId) ??
          toolDraft(callId, str(obj(event.payload).tool) ?? "unknown", event.sequence, atMs);
        draft.done = true;
        draft.startMs = Math.min(draft.startMs, timeOf(event.payload.startedAt, draft.startMs));
        draft.endMs = Math.max(draft.startMs, timeOf(event.payload.finishedAt, atMs));
        if (!ok) draft.failure = error ?? "";
        else if (content) draft.attrs["gen_ai.tool.call.result"] = toolValue(result);
        break;
      }
      case "approval.requested": {
        const { approvalId, tool } = event.payload;
        const callId = str(obj(event.payload).callId);
        const approval: Approval = {
          approvalId,
          tool,
          callId,
          atMs,
          denied: false,
          events: [],
          gated: callId === null ? null : openTool(callId) ?? null,
        };
        approval.events.push(spanEvent("reins.approval.requested", atMs, {
          "reins.approval.id": approvalId,
          "gen_ai.tool.name": tool,
          "gen_ai.tool.call.id": callId,
          "gen_ai.tool.call.arguments": content ? toolValue(event.payload.args) : null,
        }));
        approvals.set(approvalId, approval);
        break;
      }
      case "approval.resolved": {
        const { approvalId, decision, by } = event.payload;
        const resolved = spanEvent("reins.approval.resolved", atMs, {
          "reins.approval.id": approvalId,
          "reins.approval.decision": decision,
          "reins.approval.by": by,
          "reins.approval.reason": str(event.payload.reason),
        });
        const approval = approvals.get(approvalId);
        if (approval === undefined) {
          root.events.push(resolved);
          break;
        }
        approval.denied ||= decision === "deny";
        approval.events.push(resolved);
        break;
      }
      case "question.requested":
        root.events.push(spanEvent("reins.question.requested", atMs, {
          "reins.question.id": event.payload.questionId,
          "reins.question.text": content ? event.payload.text : null,
        }));
        break;
      case "question.answered":
        root.events.push(spanEvent("reins.question.answered", atMs, {
          "reins.question.id": event.payload.questionId,
          "reins.question.answer": content ? event.payload.answer : null,
        }));
        break;
      case "compaction.started":
        root.events.push(spanEvent("reins.compaction.started", atMs, {
          "reins.compaction.stage": event.payload.stage,
        }));
        break;
      case "compaction.completed":
        root.events.push(spanEvent("reins.compaction.completed", atMs, {
          "reins.compaction.stage": event.payload.stage,
          "reins.compaction.before": event.payload.before,
          "reins.compaction.after": event.payload.after,
        }));
        break;
      case "budget.warning":
        root.events.push(spanEvent("reins.budget.warning", atMs, {
          "reins.budget.ratio": double(event.payload.ratio),
          "reins.budget.limit": event.payload.limit ?? null,
        }));
        break;
      case "problem":
        problems++;
        root.events.push(spanEvent("reins.problem", atMs, {
          "reins.problem.source": event.payload.source,
          "reins.problem.reason": event.payload.reason,
          "reins.problem.text": content ? event.payload.text ?? null : null,
        }));
        break;
      case "usage.updated":
        usageTotals = event.payload;
        break;
      case "completed":
      case "failed":
        terminal = { status: event.type, reason: event.payload.reason };
        break;
      case "status.changed":
        if (["completed", "failed", "interrupted"].includes(event.payload.status)) {
          terminal = { status: event.payload.status, reason: event.payload.reason };
        }
        break;
      case "run.started":
      case "session.linked":
      case "message.delta":
      case "message.completed":
      case "heartbeat":
      case "attachment.added":
        break;
      default:
        assertNever(event, "event");
    }
    previousMs = atMs;
  }
  closeUnansweredChat(runEndMs);

  // Claude Code reports each API call's usage on its assistant messages, not as model events.
  if (modelCalls === 0) {
    for (const [id, message] of messages) {
      const body = obj(message.native.message);
      const usage = anthropicUsage(body.usage);
      // The call is over once a tool it asked for starts (the driver stamps that moment itself,
      // a hair before the store stamps the event).
      const toolStarts = toolDrafts.filter((draft) => message.toolUseIds.has(draft.callId))
        .map((draft) => draft.startMs);
      const draft = chatDraft(
        `chat:${id}`,
        str(body.model) ?? agent.requestModel,
        message.startMs,
        Math.max(message.startMs, Math.min(message.endMs, ...toolStarts)),
      );
      Object.assign(draft.attrs, {
        "gen_ai.response.id": id,
        "gen_ai.response.model": str(body.model),
        "gen_ai.response.finish_reasons": str(body.stop_reason) === null
          ? null
          : [finishReasonOf(str(body.stop_reason))],
        ...usageAttrs(usage, agent),
      });
      children.push(draft);
    }
  }

  // Approvals go on the tool call they gated (which then starts when it was asked for), the
  // rest on the root span. A Claude Code approval names its call, which may start after it.
  for (const approval of approvals.values()) {
    const gated = approval.gated ??
      (approval.callId === null
        ? null
        : toolDrafts.find((draft) => draft.callId === approval.callId) ?? null);
    const target = gated ?? root;
    if (gated) gated.startMs = Math.min(gated.startMs, approval.atMs);
    target.events.push(...approval.events);
    if (gated && approval.denied) gated.error = { type: "denied", message: null };
  }
  for (const draft of toolDrafts) {
    draft.events.sort((a, b) => a.timeUnixNano < b.timeUnixNano ? -1 : 1);
    if (!draft.done) {
      // A tool call the run never saw finish.
      draft.endMs = Math.max(draft.startMs, runEndMs);
      draft.error = { type: "incomplete", message: "the run ended before the tool call finished" };
    } else if (draft.failure !== null) {
      const denied = draft.error?.type === "denied" || /^denied by\b/i.test(draft.failure);
      draft.error = {
        type: denied ? "denied" : "tool_error",
        message: content && draft.failure !== "" ? draft.failure : null,
      };
    }
  }

  const status = terminal?.status ?? record.status;
  const reason = terminal?.reason ?? record.terminalReason;
  const totals: Partial<Usage> | null = usageTotals ??
    (Object.keys(callUsage).length ? callUsage as Partial<Usage> : null);
  root.attrs = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": agent.provider,
    "gen_ai.agent.name": agent.name,
    "gen_ai.agent.version": agent.version,
    "gen_ai.request.model": agent.requestModel,
    "gen_ai.conversation.id": conversation,
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
    "reins.model.requests": num(totals?.requests) ?? (modelCalls || null),
    "reins.exit_code": record.exitCode,
    "reins.run.parent_id": record.parentRunId,
    "reins.run.resumed_from_id": record.resumedFromRunId,
    "reins.run.relation": record.relation,
    "reins.problems": problems || null,
    "gen_ai.input.messages": content && record.goal !== null ? inputMessages(record.goal) : null,
    "gen_ai.output.messages": content ? finalAnswer(events, status) : null,
  };
  if (status === "failed" || status === "interrupted") {
    root.error = {
      type: status === "interrupted"
        ? "interrupted"
        : /^timed out\b/.test(reason ?? "")
        ? "timeout"
        : "failed",
      message: reason,
    };
  }

  const traceId = traceIdOf(record.id);
  const rootSpanId = rootSpanIdOf(record.id);
  // One link per run: a suite scenario's second turn resumes the run that is also its parent.
  const related = new Map<string, string[]>();
  for (
    const [runId, relation] of [
      [record.parentRunId, "parent"],
      [record.resumedFromRunId, "resumed_from"],
    ] as const
  ) {
    if (runId !== null) related.set(runId, [...(related.get(runId) ?? []), relation]);
  }
  const links = [...related].map(([runId, relations]) => ({ runId, relation: relations.join(",") }))
    .map(({ runId, relation }) => ({
      traceId: traceIdOf(runId),
      spanId: rootSpanIdOf(runId),
      attributes: attributes({ "reins.run.id": runId, "reins.link.relation": relation }),
      droppedAttributesCount: 0,
      flags: SPAN_FLAGS,
    }));
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
  children.sort((a, b) => a.startMs - b.startMs);
  return [toSpan(root, true), ...children.map((draft) => toSpan(draft, false))];
}

function withError(draft: Draft): KeyValue[] {
  const out = attributes(draft.attrs);
  if (draft.error !== null) out.push(...attributes({ "error.type": draft.error.type }));
  return out;
}

/** `gen_ai.output.messages` of the root span: the run's final answer, when it gave one. */
function finalAnswer(events: readonly RunEvent[], status: string): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event.type !== "completed" && event.type !== "failed") continue;
    const result = event.payload.result;
    if (typeof result !== "string" || result === "") return null;
    return outputMessages(result, [], status === "completed" ? "stop" : "error");
  }
  return null;
}
