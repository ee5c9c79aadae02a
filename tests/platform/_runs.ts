// Runs for the platform tests, made with the real run store (lib/store/store.ts): a record, the
// events a driver would emit, and an outcome. Each makeRun opens and closes a store of its own,
// as the process that recorded the run would.
import { openStore } from "../../lib/store/store.ts";
import type { EventInput, RunEvent, RunRecord } from "../../lib/store/contracts.ts";

export interface MadeRun {
  record: RunRecord;
  events: RunEvent[];
}

export interface RunSpec {
  goal?: string | null;
  harness?: string;
  driver?: string;
  events?: EventInput[];
  /** How it ends; "running" leaves it unsettled (its writer closed, owner gone). */
  outcome?: {
    status: "completed" | "failed" | "interrupted";
    reason?: string | null;
    result?: unknown;
  } | "running";
  /** Files to attach before it ends. */
  attach?: string[];
}

/** A conversation with one tool call, as a driver would record it. */
export function conversation(answer = "The tests pass now."): EventInput[] {
  return [
    { type: "session.linked", payload: { nativeSessionId: "native-1" } },
    { type: "message.completed", payload: { role: "user", text: "Fix the failing test." } },
    { type: "model.requested", payload: { historyLength: 1, toolCount: 2 } },
    {
      type: "tool.started",
      payload: { callId: "call-1", tool: "run_command", args: { cmd: "deno test", cwd: "." } },
    },
    {
      type: "tool.completed",
      payload: {
        callId: "call-1",
        ok: true,
        result: "ok | 3 passed | 0 failed",
        startedAt: "2026-01-05T14:03:01.000Z",
        finishedAt: "2026-01-05T14:03:02.000Z",
      },
    },
    { type: "message.completed", payload: { role: "assistant", text: answer } },
    {
      type: "usage.updated",
      payload: {
        inputTokens: 1200,
        outputTokens: 80,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: null,
        costUsd: 0.012345,
        requests: 2,
      },
    },
  ];
}

export async function makeRun(home: string, spec: RunSpec = {}): Promise<MadeRun> {
  using store = openStore(home);
  const writer = store.createRun({
    sessionId: crypto.randomUUID(),
    contextId: null,
    harness: spec.harness ?? "claude-code",
    driver: spec.driver ?? "claude",
    trigger: "cli",
    cwd: "/work/project",
    goal: spec.goal === undefined ? "Fix the failing test." : spec.goal,
  });
  try {
    for (const event of spec.events ?? conversation()) writer.append(event);
    for (const path of spec.attach ?? []) {
      writer.append({
        type: "attachment.added",
        payload: await store.attachFile(writer.runId, path),
      });
    }
    const outcome = spec.outcome ?? { status: "completed" };
    if (outcome !== "running") {
      const payload = { reason: outcome.reason ?? null, result: outcome.result ?? null };
      if (outcome.status === "completed") writer.append({ type: "completed", payload });
      else if (outcome.status === "failed") writer.append({ type: "failed", payload });
      else {
        writer.append({
          type: "status.changed",
          payload: { status: "interrupted", reason: outcome.reason ?? null },
        });
      }
    }
  } finally {
    writer.close();
  }
  const record = store.loadRun(writer.runId);
  const { events } = store.readEvents(writer.runId);
  return { record, events };
}
