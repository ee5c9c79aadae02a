// The contracts of everything reins records: run.json, the events.jsonl envelope with one payload
// schema per event type, and harness-session.json. Types are inferred from the schemas; nothing
// else defines these shapes. Payload objects are loose: fields a newer reins adds are kept.
// What the store needs of them at run time — the checks generated from these schemas and the
// rules over them — is in contract_runtime.ts, which loads no zod and imports only the types
// from here; the names both build on are in contract_names.ts.
import { z } from "zod";
import {
  HARNESS_SESSION_TYPE,
  RUN_STATUSES,
  SETTLED_STATUSES,
  TRIGGERS,
} from "./contract_names.ts";

export { HARNESS_SESSION_TYPE, RUN_STATUSES, USAGE_COUNTERS } from "./contract_names.ts";

export const RunStatus = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof RunStatus>;
export const SettledStatus = z.enum(SETTLED_STATUSES);
export type SettledStatus = z.infer<typeof SettledStatus>;

export const Trigger = z.enum(TRIGGERS);
export type Trigger = z.infer<typeof Trigger>;

const IsoTime = z.iso.datetime({ offset: true });

/** run.json. The field order here is the order written to the file. */
export const RunRecord = z.object({
  id: z.string().min(1),
  sessionId: z.string().min(1),
  contextId: z.string().nullable(),
  nativeSessionId: z.string().nullable(),
  parentRunId: z.string().nullable(),
  resumedFromRunId: z.string().nullable(),
  relation: z.string().nullable(),
  harness: z.string().min(1),
  driver: z.string().min(1),
  trigger: Trigger,
  cwd: z.string(),
  goal: z.string().nullable(),
  startedAt: IsoTime,
  endedAt: IsoTime.nullable(),
  status: RunStatus,
  exitCode: z.number().int().nullable(),
  terminalReason: z.string().nullable(),
});
export type RunRecord = z.infer<typeof RunRecord>;
export const RUN_RECORD_FIELDS = Object.keys(RunRecord.shape) as (keyof RunRecord)[];

export const Role = z.enum(["user", "assistant", "system"]);
export type Role = z.infer<typeof Role>;

export const ToolCall = z.looseObject({
  id: z.string().min(1),
  name: z.string().min(1),
  args: z.unknown(),
});
export type ToolCall = z.infer<typeof ToolCall>;

const Count = z.number().int().nonnegative();

export const Usage = z.looseObject({
  inputTokens: Count.nullable(),
  outputTokens: Count.nullable(),
  cacheReadTokens: Count.nullable(),
  cacheWriteTokens: Count.nullable(),
  reasoningTokens: Count.nullable(),
  costUsd: z.number().nonnegative().nullable(),
  requests: Count.nullable(),
  /** True when costUsd is reins's estimate from a price table, not the harness's own figure. */
  costEstimated: z.boolean().optional(),
});
export type Usage = z.infer<typeof Usage>;

/** The usage one model call reports (not running totals); every counter optional. */
export const CallUsage = z.looseObject({
  inputTokens: Count.optional(),
  outputTokens: Count.optional(),
  cacheReadTokens: Count.optional(),
  cacheWriteTokens: Count.optional(),
  reasoningTokens: Count.optional(),
  costUsd: z.number().nonnegative().optional(),
});
export type CallUsage = z.infer<typeof CallUsage>;

const Reason = z.string().nullable();

/**
 * What a driver knows of the agent it runs, in reins's words: on `run.started` what it knows
 * before the agent starts (from the agent's spec and the settings), on `session.linked` what the
 * harness said of itself once it started. Each field only when known; a later one fills in what an
 * earlier one left out. The trace export reads these, never the harness's own lines.
 */
export const AgentFacts = z.looseObject({
  /** The model's provider, in the GenAI conventions' names (`anthropic`, `openai`, `gcp.gemini`…). */
  provider: z.string().min(1).optional(),
  /** The model asked for (`claude-sonnet-4-5`, `gpt-4o-mini`; `demo`, `mock`, `replay` in reins). */
  model: z.string().min(1).optional(),
  /** The harness's version, as it says it. */
  version: z.string().min(1).optional(),
  /** True when the harness's input token counts leave cache reads and writes out (Anthropic's). */
  inputExcludesCache: z.boolean().optional(),
  /** True when the model answers inside reins's process (the loop's demo, mock and replay models). */
  inProcess: z.boolean().optional(),
  /**
   * This run's own model and raw arguments, as given (`reins run --model/--arg`, a suite agent's
   * `model`/`args`), over the config's: what a replay, or a later turn of its context, passes again.
   */
  perRun: z.looseObject({
    model: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
  }).optional(),
});
export type AgentFacts = z.infer<typeof AgentFacts>;

/**
 * The model call (one API message) an event came from, for a harness that reports its calls only
 * through the messages and tool calls they produced (Claude Code): every event of one call carries
 * the same `id`, and the last one's `usage` is the call's.
 */
export const ModelCallRef = z.looseObject({
  id: z.string().min(1),
  /** The model that answered. */
  model: z.string().min(1).optional(),
  /** Why the call stopped, in the provider's words (`tool_use`, `end_turn`), once known. */
  stopReason: z.string().nullable().optional(),
  usage: CallUsage.optional(),
});
export type ModelCallRef = z.infer<typeof ModelCallRef>;

/**
 * Whether a run's model calls went through reins's model gateway (docs/gateway.md), and why not
 * when they did not (`--no-gateway`, the config, a harness whose upstream reins cannot tell).
 */
export const GatewayUse = z.looseObject({
  enabled: z.boolean(),
  reason: z.string().optional(),
});
export type GatewayUse = z.infer<typeof GatewayUse>;

/** A body kept out of line, under the run's `wire/` directory, named by its SHA-256. */
export const WireBody = z.looseObject({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: Count,
});
export type WireBody = z.infer<typeof WireBody>;

/** The model APIs the gateway reads (lib/gateway/wires.ts); `opaque` for any other call. */
export const WireName = z.enum([
  "anthropic.messages",
  "anthropic.count_tokens",
  "openai.responses",
  "openai.chat",
  "gemini.generate",
  "gemini.stream",
  "opaque",
]);

export const PAYLOADS = {
  "run.started": z.looseObject({
    harness: z.string(),
    driver: z.string(),
    cwd: z.string(),
    goal: z.string().nullable(),
    contextId: z.string().nullable(),
    resumeOf: z.string().nullable(),
    agent: AgentFacts.optional(),
    gateway: GatewayUse.optional(),
    /** The turn's limits (--max-turns, --max-tokens, --max-usd), when it had any. */
    budget: z.looseObject({
      maxTurns: Count.optional(),
      maxTokens: Count.optional(),
      maxUsd: z.number().nonnegative().optional(),
    }).optional(),
  }),
  "session.linked": z.looseObject({
    nativeSessionId: z.string().min(1),
    agent: AgentFacts.optional(),
  }),
  "message.delta": z.looseObject({ role: Role, text: z.string() }),
  "message.completed": z.looseObject({
    role: Role,
    text: z.string(),
    modelCall: ModelCallRef.optional(),
  }),
  "model.requested": z.looseObject({ historyLength: Count, toolCount: Count }),
  "model.completed": z.looseObject({
    text: z.string().nullable(),
    toolCalls: z.array(ToolCall),
    stopReason: z.string().nullable(),
    usage: CallUsage.nullable(),
    reasoning: z.string().nullable(),
  }),
  /** A call the model gateway passed on (or refused), as the harness made it. */
  "model.call.started": z.looseObject({
    callId: z.string().min(1),
    wire: WireName,
    /** Whether it asks a model to generate: what a budget counts as a model call. */
    generates: z.boolean(),
    route: z.string(),
    method: z.string(),
    /** Below the route, with any credential left out of its query. */
    path: z.string(),
    model: z.string().nullable(),
    stream: z.boolean().nullable(),
    /** The request's headers, credentials left out. */
    headers: z.record(z.string(), z.string()),
    body: WireBody.nullable(),
  }),
  /** How it ended: the answer as the harness received it, or why none came. */
  "model.call.completed": z.looseObject({
    callId: z.string().min(1),
    /**
     * `ok` a 2xx answer received whole; `error` a non-2xx answer; `refused` by the budget;
     * `failed` the upstream could not be reached or broke off; `aborted` the harness went away.
     */
    outcome: z.enum(["ok", "error", "refused", "failed", "aborted"]),
    status: z.number().int().nullable(),
    headers: z.record(z.string(), z.string()),
    body: WireBody.nullable(),
    /** The body's pieces as they came: [bytes, ms since the request arrived]. */
    chunks: z.array(z.array(z.number().nonnegative()).length(2)),
    model: z.string().nullable(),
    /** The answer's own id (an Anthropic message's, a response's), when it gave one. */
    responseId: z.string().optional(),
    stopReason: z.string().nullable(),
    usage: CallUsage.nullable(),
    firstByteMs: z.number().nonnegative().nullable(),
    durationMs: z.number().nonnegative(),
    error: z.string().optional(),
  }),
  /** A connection a confined agent asked reins's proxy for (docs/confinement.md). */
  "network.connection": z.looseObject({
    host: z.string().min(1),
    port: z.number().int().positive(),
    allowed: z.boolean(),
    bytesSent: Count,
    bytesReceived: Count,
    reason: z.string().optional(),
  }),
  "tool.started": z.looseObject({
    callId: z.string().min(1),
    tool: z.string(),
    args: z.unknown(),
    modelCall: ModelCallRef.optional(),
  }),
  "tool.completed": z.looseObject({
    callId: z.string().min(1),
    ok: z.boolean(),
    result: z.unknown().optional(),
    error: z.string().optional(),
    startedAt: IsoTime.nullable(),
    finishedAt: IsoTime.nullable(),
  }),
  "approval.requested": z.looseObject({
    approvalId: z.string().min(1),
    tool: z.string(),
    args: z.unknown(),
  }),
  "approval.resolved": z.looseObject({
    approvalId: z.string().min(1),
    decision: z.enum(["allow", "deny"]),
    by: z.string(),
    reason: z.string().nullable().optional(),
  }),
  "question.requested": z.looseObject({ questionId: z.string().min(1), text: z.string() }),
  "question.answered": z.looseObject({ questionId: z.string().min(1), answer: z.string() }),
  "usage.updated": Usage,
  "compaction.started": z.looseObject({ stage: z.string() }),
  "compaction.completed": z.looseObject({ stage: z.string(), before: Count, after: Count }),
  "budget.warning": z.looseObject({
    ratio: z.number().nonnegative(),
    limit: z.string().optional(),
  }),
  "heartbeat": z.looseObject({ iteration: Count }),
  "attachment.added": z.looseObject({
    name: z.string().min(1),
    path: z.string().min(1),
    contentType: z.string(),
    bytes: Count,
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  }),
  "status.changed": z.looseObject({ status: RunStatus, reason: Reason }),
  /** Something reins could not take as given (a bad protocol line, say): kept, never dropped. */
  "problem": z.looseObject({ source: z.string(), reason: z.string(), text: z.string().optional() }),
  "completed": z.looseObject({ reason: Reason, result: z.unknown() }),
  "failed": z.looseObject({ reason: Reason, result: z.unknown() }),
} as const;

export type EventType = keyof typeof PAYLOADS;
export const EVENT_TYPES = Object.keys(PAYLOADS) as EventType[];
export type PayloadOf<T extends EventType> = z.infer<typeof PAYLOADS[T]>;

const envelope = {
  id: z.string().min(1),
  runId: z.string().min(1),
  sessionId: z.string().min(1),
  sequence: z.number().int().nonnegative(),
  timestamp: IsoTime,
  native: z.unknown().optional(),
  /** Set on an event that arrived after the run settled: kept as evidence, never applied. */
  ignored: z.string().optional(),
};

function eventSchema<T extends EventType>(type: T) {
  return z.object({ ...envelope, type: z.literal(type), payload: PAYLOADS[type] });
}

export const RunEvent = z.discriminatedUnion(
  "type",
  EVENT_TYPES.map((type) => eventSchema(type)) as unknown as [
    ReturnType<typeof eventSchema<EventType>>,
    ...ReturnType<typeof eventSchema<EventType>>[],
  ],
);

/** One line of events.jsonl. */
export type RunEvent = {
  [T in EventType]: {
    id: string;
    runId: string;
    sessionId: string;
    sequence: number;
    timestamp: string;
    type: T;
    payload: PayloadOf<T>;
    native?: unknown;
    ignored?: string;
  };
}[EventType];

/** What a driver hands the recorder: an event without its envelope. */
export type EventInput = {
  [T in EventType]: { type: T; payload: PayloadOf<T>; native?: unknown };
}[EventType];

/** A zod error as one line: `expected string, received number at payload.text`. */
export function formatIssue(error: z.ZodError, prefix = ""): string {
  const issue = error.issues[0];
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
  return path ? `${issue.message} at ${path}` : issue.message;
}

/** One driver's session under a context: what that driver resumes on the context's next turn. */
export const DriverSession = z.object({
  driver: z.string().min(1),
  harness: z.string().min(1),
  session_id: z.string().min(1),
  native_session_id: z.string().min(1).nullable(),
  created_ms: z.number().int().nonnegative(),
  updated_ms: z.number().int().nonnegative(),
});
export type DriverSession = z.infer<typeof DriverSession>;

/**
 * contexts/<context id>/harness-session.json (docs/contexts.md). The top-level fields are the
 * session used last — all a file written before reins kept one session per driver has, and what
 * such a reins still reads — and `sessions` holds every driver's own, one entry per driver.
 * A file without `sessions` is a map of one.
 */
export const HarnessSession = z.object({
  type: z.literal(HARNESS_SESSION_TYPE),
  session_id: z.string().min(1),
  native_session_id: z.string().min(1).nullable(),
  harness: z.string().min(1),
  driver: z.string().min(1),
  created_ms: z.number().int().nonnegative(),
  updated_ms: z.number().int().nonnegative(),
  sessions: z.array(DriverSession).optional(),
});
export type HarnessSession = z.infer<typeof HarnessSession>;
