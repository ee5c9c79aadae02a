// ListTasks (A2A 1.0 §3.1.4): tasks filtered by state and status time, newest status first, in
// pages of 1 to 100 (50 by default) behind an opaque cursor — the last row's status time and id,
// so that a page boundary never skips or repeats a task while others are added. History and
// artifacts are left out unless asked for: a listing is for finding tasks, GetTask for reading one.
import type { RunRecord } from "../store/mod.ts";
import type { ListTasksRequest, ListTasksResponse, Task, TaskState } from "./a2a/wire.ts";
import { invalidParams } from "./jsonrpc.ts";
import type { SnapshotOptions } from "./task_view.ts";

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

export interface ListedTask {
  record: RunRecord;
  state: TaskState;
  /** The status time (ISO) the order and `statusTimestampAfter` go by. */
  timestamp: string;
}

/** One page of `rows` as the request asks; `snapshot` makes a row's Task. */
export function listTasks(
  request: ListTasksRequest,
  rows: ListedTask[],
  snapshot: (row: ListedTask, options: SnapshotOptions) => Task,
): ListTasksResponse {
  const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
  if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw invalidParams("pageSize", `must be from 1 to ${MAX_PAGE_SIZE}: got ${pageSize}`);
  }
  if (request.historyLength !== undefined && request.historyLength < 0) {
    throw invalidParams("historyLength", "must be 0 or more");
  }
  const after = request.pageToken ? readPageToken(request.pageToken) : null;
  const wanted = request.status && request.status !== "TASK_STATE_UNSPECIFIED"
    ? request.status
    : null;
  const since = request.statusTimestampAfter ? Date.parse(request.statusTimestampAfter) : null;
  const matching = rows.filter((row) =>
    (wanted === null || row.state === wanted) &&
    (since === null || Date.parse(row.timestamp) >= since)
  );
  // Newest status first; the id breaks ties, so that pages never overlap or skip.
  matching.sort((a, b) =>
    a.timestamp === b.timestamp
      ? (a.record.id < b.record.id ? 1 : -1)
      : (a.timestamp < b.timestamp ? 1 : -1)
  );
  const start = after === null ? 0 : matching.findIndex((row) =>
    row.timestamp < after.timestamp ||
    (row.timestamp === after.timestamp && row.record.id < after.id)
  );
  const page = start < 0 ? [] : matching.slice(start, start + pageSize);
  const last = page.at(-1);
  const more = start >= 0 && start + pageSize < matching.length;
  const options = {
    historyLength: request.historyLength ?? 0,
    includeArtifacts: request.includeArtifacts === true,
  };
  return {
    tasks: page.map((row) => snapshot(row, options)),
    nextPageToken: more && last ? pageToken(last.timestamp, last.record.id) : "",
    pageSize,
    totalSize: matching.length,
  };
}

function pageToken(timestamp: string, id: string): string {
  return btoa(JSON.stringify([timestamp, id])).replace(/=+$/, "");
}

function readPageToken(token: string): { timestamp: string; id: string } {
  try {
    const [timestamp, id] = JSON.parse(atob(token));
    if (typeof timestamp === "string" && typeof id === "string") return { timestamp, id };
  } catch { /* falls through */ }
  throw invalidParams("pageToken", "is not a token a ListTasks answer gave");
}
