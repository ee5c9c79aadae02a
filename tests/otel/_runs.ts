// Recorded runs for the trace mapping's tests: a run.json record and its events as the store
// writes them (envelope, gap-free sequences, timestamps a few ms apart), built in memory from
// event inputs so each test reads as the story of one run. The end-to-end tests record real runs.
import type { AgentFacts, EventInput, RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import type { OtlpKeyValue } from "../fixtures/fake_otlp.ts";
import type { KeyValue, Span } from "../../lib/otel/wire.ts";

export const START_MS = Date.parse("2026-03-01T10:00:00.000Z");

export interface RunSpec {
  id?: string;
  harness?: string;
  driver?: string;
  contextId?: string | null;
  parentRunId?: string | null;
  goal?: string | null;
  /** What the driver knew of its agent (run.started's `agent`); none, as an older reins recorded. */
  agent?: AgentFacts;
  /** Each event with the ms after the start it happened; default 10 ms apart. */
  events: (EventInput & { atMs?: number })[];
}

let counter = 0;

/** A settled run: the record says what the last terminal event says. */
export function recordedRun(spec: RunSpec): { record: RunRecord; events: RunEvent[] } {
  counter++;
  const id = spec.id ?? `0195f000-0000-7000-8000-${String(counter).padStart(12, "0")}`;
  const sessionId = `0195f000-0000-7000-9000-${String(counter).padStart(12, "0")}`;
  const harness = spec.harness ?? "reins";
  const driver = spec.driver ?? "loop";
  const started: EventInput = {
    type: "run.started",
    payload: {
      harness,
      driver,
      cwd: "/work",
      goal: spec.goal ?? "do it",
      contextId: spec.contextId ?? null,
      resumeOf: null,
      ...(spec.agent === undefined ? {} : { agent: spec.agent }),
    },
  };
  const inputs = [{ ...started, atMs: 0 }, ...spec.events];
  let lastMs = 0;
  const events: RunEvent[] = inputs.map((input, sequence) => {
    const atMs = input.atMs ?? (sequence === 0 ? 0 : lastMs + 10);
    lastMs = atMs;
    const { atMs: _drop, ...body } = input;
    return {
      id: `ev-${counter}-${sequence}`,
      runId: id,
      sessionId,
      sequence,
      timestamp: new Date(START_MS + atMs).toISOString(),
      ...body,
    } as RunEvent;
  });
  let status: RunRecord["status"] = "running";
  let reason: string | null = null;
  for (const event of events) {
    if (event.type === "completed" || event.type === "failed") {
      status = event.type;
      reason = event.payload.reason;
    } else if (event.type === "status.changed") {
      status = event.payload.status;
      reason = event.payload.reason;
    }
  }
  const record: RunRecord = {
    id,
    sessionId,
    contextId: spec.contextId ?? null,
    nativeSessionId: null,
    parentRunId: spec.parentRunId ?? null,
    resumedFromRunId: null,
    relation: null,
    harness,
    driver,
    trigger: "cli",
    cwd: "/work",
    goal: spec.goal === undefined ? "do it" : spec.goal,
    startedAt: new Date(START_MS).toISOString(),
    endedAt: new Date(START_MS + lastMs).toISOString(),
    status,
    exitCode: null,
    terminalReason: reason,
  };
  return { record, events };
}

/** An attribute's AnyValue by key, or undefined. */
export function attr(list: readonly (KeyValue | OtlpKeyValue)[], key: string): unknown {
  return list.find((kv) => kv.key === key)?.value;
}

/** A string attribute's value, parsed as JSON. */
export function jsonAttr(list: readonly (KeyValue | OtlpKeyValue)[], key: string): unknown {
  const value = attr(list, key) as { stringValue?: string } | undefined;
  if (typeof value?.stringValue !== "string") throw new Error(`No string attribute ${key}`);
  return JSON.parse(value.stringValue);
}

/** The attributes as {key: plain value}, for whole-object comparisons. */
export function plainAttrs(list: readonly (KeyValue | OtlpKeyValue)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list) {
    const v = value as Record<string, unknown>;
    out[key] = "arrayValue" in v
      ? (v.arrayValue as { values: Record<string, unknown>[] }).values.map((x) =>
        Object.values(x)[0]
      )
      : Object.values(v)[0];
  }
  return out;
}

/** The spans by name (the first of each name). */
export function byName(spans: readonly Span[], name: string): Span {
  const found = spans.find((span) => span.name === name);
  if (!found) throw new Error(`No span named ${name}: ${spans.map((s) => s.name).join(", ")}`);
  return found;
}
