// The parts the spans of a run are made of (lib/otel/spans.ts): a span as it is built (Draft),
// span events, the usage and root-event attribute sets in the conventions' names, the links to a
// run's family, the run's final answer. Pure functions of what they are given.
import { assertNever } from "../core/assert_never.ts";
import type { CallUsage, EventType, RunEvent, RunRecord, Usage } from "../store/mod.ts";
import type { AgentFacts } from "./agent.ts";
import { outputMessages } from "./content.ts";
import { rootSpanIdOf, traceIdOf } from "./ids.ts";
import {
  attributes,
  double,
  type KeyValue,
  type Plain,
  type Span,
  SPAN_FLAGS,
  type SpanEvent,
  type SpanKind,
  unixNano,
} from "./wire.ts";

export type EventOf<T extends EventType> = Extract<RunEvent, { type: T }>;

export type Attrs = Record<string, Plain | ReturnType<typeof double> | null | undefined>;

/** A span as it is built: times in epoch ms, attributes as plain values. */
export interface Draft {
  key: string;
  name: string;
  kind: SpanKind;
  startMs: number;
  endMs: number;
  attrs: Attrs;
  events: SpanEvent[];
  error: { type: string; message: string | null } | null;
}

export type Line = Record<string, unknown>;
export const obj = (value: unknown): Line =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Line : {};
export const num = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : null;
export const str = (value: unknown): string | null => typeof value === "string" ? value : null;

export function timeOf(iso: string | null | undefined, fallback: number): number {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? ms : fallback;
}

export function spanEvent(name: string, atMs: number, attrs: Attrs): SpanEvent {
  return {
    timeUnixNano: unixNano(atMs),
    name,
    attributes: attributes(attrs),
    droppedAttributesCount: 0,
  };
}

/** Token counts in the conventions' names; input includes cache reads and writes. */
export function usageAttrs(usage: Partial<Usage> | CallUsage | null, agent: AgentFacts): Attrs {
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

/** The events that are span events of the root span. */
export type RootEvent = EventOf<
  | "question.requested"
  | "question.answered"
  | "compaction.started"
  | "compaction.completed"
  | "budget.warning"
  | "problem"
>;

/** A root span event's attributes; text a person or model wrote only with `content`. */
export function rootEventAttrs(
  event: RootEvent,
  content: boolean,
): Attrs {
  switch (event.type) {
    case "question.requested":
      return {
        "reins.question.id": event.payload.questionId,
        "reins.question.text": content ? event.payload.text : null,
      };
    case "question.answered":
      return {
        "reins.question.id": event.payload.questionId,
        "reins.question.answer": content ? event.payload.answer : null,
      };
    case "compaction.started":
      return { "reins.compaction.stage": event.payload.stage };
    case "compaction.completed":
      return {
        "reins.compaction.stage": event.payload.stage,
        "reins.compaction.before": event.payload.before,
        "reins.compaction.after": event.payload.after,
      };
    case "budget.warning":
      return {
        "reins.budget.ratio": double(event.payload.ratio),
        "reins.budget.limit": event.payload.limit ?? null,
      };
    case "problem":
      return {
        "reins.problem.source": event.payload.source,
        "reins.problem.reason": event.payload.reason,
        "reins.problem.text": content ? event.payload.text ?? null : null,
      };
    default:
      return assertNever(event, "root span event");
  }
}

/** One link per run of the family: a suite scenario's second turn resumes its parent too. */
export function familyLinks(record: RunRecord): Span["links"] {
  const related = new Map<string, string[]>();
  for (
    const [runId, relation] of [
      [record.parentRunId, "parent"],
      [record.resumedFromRunId, "resumed_from"],
    ] as const
  ) {
    if (runId !== null) related.set(runId, [...(related.get(runId) ?? []), relation]);
  }
  return [...related].map(([runId, relations]) => ({
    traceId: traceIdOf(runId),
    spanId: rootSpanIdOf(runId),
    attributes: attributes({ "reins.run.id": runId, "reins.link.relation": relations.join(",") }),
    droppedAttributesCount: 0,
    flags: SPAN_FLAGS,
  }));
}

export function withError(draft: Draft): KeyValue[] {
  const out = attributes(draft.attrs);
  if (draft.error !== null) out.push(...attributes({ "error.type": draft.error.type }));
  return out;
}

/** `gen_ai.output.messages` of the root span: the run's final answer, when it gave one. */
export function finalAnswer(events: readonly RunEvent[], status: string): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event.type !== "completed" && event.type !== "failed") continue;
    const result = event.payload.result;
    if (typeof result !== "string" || result === "") return null;
    return outputMessages(result, [], status === "completed" ? "stop" : "error");
  }
  return null;
}
