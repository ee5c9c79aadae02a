// Listing runs from the index for `reins runs`, newest first, filtered by context, session, status
// or activity. Free of zod, as `reins runs` must start about as fast as an empty `deno run`: the
// records come back as the index stores them (the JSON of the last run.json written).
import { UsageError } from "../core/errors.ts";
import type { DataRoot } from "./data_root.ts";
import { type ListQuery, openIndex } from "./index_db.ts";
import { STATUS_NAMES } from "./run_files.ts";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 10_000;

export interface RunFilter {
  contextId?: string;
  sessionId?: string;
  /** One status or several (any of them). */
  status?: string | readonly string[];
  /** Only queued, running and waiting runs. */
  active?: boolean;
  /** How many, newest first: default 20, at most 10,000. */
  limit?: number;
}

/** The index query for a filter, or a UsageError naming what is wrong with it. */
export function runQuery(filter: RunFilter): ListQuery {
  let statuses: string[] | undefined;
  if (filter.status !== undefined) {
    statuses = typeof filter.status === "string" ? [filter.status] : [...filter.status];
    for (const value of statuses) {
      if (!(STATUS_NAMES as readonly string[]).includes(value)) {
        throw new UsageError(`Unknown run status ${JSON.stringify(value)}`, {
          hint: `use one of ${STATUS_NAMES.join(", ")}`,
        });
      }
    }
  }
  const limit = filter.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new UsageError(
      `Cannot list ${limit} runs: the limit is a whole number from 1 to ${MAX_LIMIT}`,
    );
  }
  return {
    contextId: filter.contextId,
    sessionId: filter.sessionId,
    statuses,
    active: filter.active,
    limit,
  };
}

export interface ListedRuns {
  /** The records' JSON texts, newest first. */
  records: string[];
  /** With `prefixes`: the shortest prefix of each id (8 characters at least) no other run shares. */
  prefixes: string[];
}

/** The matching runs as the index stores them (and, if asked, the id prefixes to show). */
export async function listRunJson(
  root: DataRoot,
  filter: RunFilter = {},
  options: { prefixes?: boolean } = {},
): Promise<ListedRuns> {
  const query = runQuery(filter);
  const index = await openIndex(root);
  if (index === null) return { records: [], prefixes: [] };
  const records = index.list(query);
  if (!options.prefixes) return { records, prefixes: [] };
  const ids = records.map((text) => (JSON.parse(text) as { id: string }).id);
  // One query for the ids around all the rows rather than two per row (the hundred of a first
  // listing of 50 took 1-4 ms, timed in-process on the 10,000 runs `deno task bench store` lists):
  // the rows of a listing are the newest, so their ids (time-ordered) lie close together. Spread
  // far apart (a context's runs over months), two queries a row read less; many rows, every id.
  let sorted: string[] | null = null;
  if (ids.length > 100) sorted = index.sortedIds();
  else if (ids.length > 1) {
    let low = ids[0];
    let high = ids[0];
    for (const id of ids) {
      if (id < low) low = id;
      if (id > high) high = id;
    }
    sorted = index.idsAround(low, high, 4 * ids.length + 2);
  }
  const neighbours = (id: string): [string | null, string | null] => {
    if (sorted === null) return index.neighbours(id);
    const at = lowerBound(sorted, id);
    return [sorted[at - 1] ?? null, sorted[sorted[at] === id ? at + 1 : at] ?? null];
  };
  return { records, prefixes: ids.map((id) => uniquePrefix(id, neighbours(id))) };
}

function lowerBound(sorted: readonly string[], value: string): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (sorted[mid] < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The shortest prefix of `id`, `min` characters at least, that its neighbours do not share. */
export function uniquePrefix(
  id: string,
  neighbours: readonly (string | null)[],
  min = 8,
): string {
  let length = min;
  for (const other of neighbours) {
    if (other === null) continue;
    let common = 0;
    while (common < id.length && id[common] === other[common]) common++;
    length = Math.max(length, common + 1);
  }
  return id.slice(0, Math.min(length, id.length));
}
