// Views over several runs: a run family (a root run and every run descending from it through
// parentRunId, with usage summed) and a session's (or a context's sessions') earlier events, from
// which a driver rebuilds the conversation. Both find the runs through the index and read the events from the files.
import { NotFoundError } from "../core/errors.ts";
import type { RunEvent, RunRecord, Usage } from "./contracts.ts";
import { USAGE_COUNTERS } from "./contract_runtime.ts";
import type { DataRoot } from "./data_root.ts";
import { readEvents } from "./event_log.ts";
import type { RunIndex } from "./index_db.ts";
import { storeIndex } from "./lookup.ts";
import { inspectRun } from "./run_record.ts";
import { isActive } from "./run_files.ts";

export interface FamilyMember {
  record: RunRecord;
  /** The run's last `usage.updated` (running totals), or null when it reported none. */
  usage: Usage | null;
}

export type FamilyUsage = Record<typeof USAGE_COUNTERS[number], number | null>;

export interface RunFamily {
  rootRunId: string;
  /** The root and its descendants, oldest first. */
  runs: FamilyMember[];
  /** Each counter summed over the runs; null when any run lacks it. */
  usage: FamilyUsage;
  /** Whether every run of the family has settled. */
  settled: boolean;
}

function recordOf(root: DataRoot, index: RunIndex | null, runId: string): RunRecord | null {
  const text = index?.get(runId) ?? null;
  if (text !== null) return JSON.parse(text) as RunRecord;
  try {
    return inspectRun(root, runId).record;
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** The last usage a run reported, ignoring what arrived after it settled. */
export function lastUsage(events: readonly RunEvent[]): Usage | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event.type === "usage.updated" && event.ignored === undefined) return event.payload;
  }
  return null;
}

/**
 * The family `runId` belongs to: up through parentRunId to the root (stopping at a missing parent
 * or a cycle), then every descendant of the root. Throws NotFoundError for no such run.
 */
export function runFamily(dataRoot: DataRoot, runId: string): RunFamily {
  const index = storeIndex(dataRoot);
  const start = recordOf(dataRoot, index, runId);
  if (start === null) {
    throw new NotFoundError(`No run ${runId} in ${dataRoot.home}`, {
      hint: "list runs with: reins runs",
    });
  }
  let top = start;
  const climbed = new Set([top.id]);
  while (top.parentRunId !== null && !climbed.has(top.parentRunId)) {
    const parent = recordOf(dataRoot, index, top.parentRunId);
    if (parent === null) break;
    climbed.add(parent.id);
    top = parent;
  }
  const members = new Map<string, RunRecord>([[top.id, top]]);
  const queue = [top.id];
  while (queue.length > 0) {
    const parentId = queue.shift()!;
    const children = index === null ? [] : index.children(parentId);
    for (const text of children) {
      const child = JSON.parse(text) as RunRecord;
      if (members.has(child.id)) continue;
      members.set(child.id, child);
      queue.push(child.id);
    }
  }
  const runs = [...members.values()]
    .sort((a, b) =>
      a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.id < b.id ? -1 : 1
    )
    .map((record) => ({ record, usage: lastUsage(readEvents(dataRoot, record.id).events) }));
  const usage = Object.fromEntries(USAGE_COUNTERS.map((counter) => {
    let total = 0;
    for (const { usage } of runs) {
      const value = usage?.[counter];
      if (typeof value !== "number") return [counter, null];
      total += value;
    }
    return [counter, total];
  })) as FamilyUsage;
  return {
    rootRunId: top.id,
    runs,
    usage,
    settled: runs.every(({ record }) => !isActive(record.status)),
  };
}

/**
 * The events of a session's runs, oldest run first, each run's in sequence order, leaving out
 * what arrived after a run settled. `excludeRunId` leaves out one run (the one now starting).
 */
export function sessionEvents(
  root: DataRoot,
  sessionId: string,
  options: { excludeRunId?: string } = {},
): RunEvent[] {
  const index = storeIndex(root);
  if (index === null) return [];
  const events: RunEvent[] = [];
  for (const text of index.sessionRuns(sessionId)) {
    const { id } = JSON.parse(text) as RunRecord;
    if (id === options.excludeRunId) continue;
    for (const event of readEvents(root, id).events) {
      if (event.ignored === undefined) events.push(event);
    }
  }
  return events;
}

/**
 * The events of the runs of several sessions — the sessions a context keeps, one per driver — as
 * one conversation: oldest run first across all of them (by start, then id), each run's events in
 * sequence order, leaving out what arrived after a run settled. The built-in loop rebuilds its
 * history from this, so it continues what any harness said on the context.
 */
export function conversationEvents(root: DataRoot, sessionIds: readonly string[]): RunEvent[] {
  const index = storeIndex(root);
  if (index === null) return [];
  const runs = [...new Set(sessionIds)]
    .flatMap((sessionId) => index.sessionRuns(sessionId))
    .map((text) => JSON.parse(text) as RunRecord)
    .sort((a, b) =>
      a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.id < b.id ? -1 : 1
    );
  const events: RunEvent[] = [];
  for (const { id } of runs) {
    for (const event of readEvents(root, id).events) {
      if (event.ignored === undefined) events.push(event);
    }
  }
  return events;
}
