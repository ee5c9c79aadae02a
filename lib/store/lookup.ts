// Finding runs: the run a person named (a full id, a unique prefix of one, or `last`, the run that
// started most recently), and the runs matching a filter, newest first, from the index — which
// the store's synchronous readers get refreshed here (storeIndex), reading the rows it lacks.
import { NotFoundError, UsageError } from "../core/errors.ts";
import { safeName } from "../core/ids.ts";
import type { RunRecord } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";
import { openIndexSync, runDirectoryNames, type RunIndex } from "./index_db.ts";
import { type RunFilter, runQuery, uniquePrefix } from "./list.ts";
import { inspectRun, recordsForIndex } from "./run_record.ts";
import { exists } from "./run_files.ts";

const SHOWN_MATCHES = 5;

/**
 * The data root's index, refreshed, for the store's synchronous readers (lookup, families,
 * Store.index()); null when the data root does not exist. The zod-free paths open it with
 * openIndex (index_db.ts) instead, which loads the record reader only when rows are missing.
 */
export function storeIndex(root: DataRoot): RunIndex | null {
  return openIndexSync(root, recordsForIndex);
}

/** The id of the run `ref` names. NotFoundError when none does, UsageError when several do. */
export function resolveRunId(root: DataRoot, ref: string): string {
  if (ref === "last") {
    const newest = storeIndex(root)?.newestId() ?? null;
    if (newest === null) {
      throw new NotFoundError(`No runs yet in ${root.home}`, {
        hint: "start one with: reins run PROMPT",
      });
    }
    return newest;
  }
  safeName(ref, "run id");
  if (exists(root.layout.run(ref))) return ref;
  let matches = storeIndex(root)?.idsWithPrefix(ref, SHOWN_MATCHES + 1) ?? [];
  if (matches.length === 0) {
    // The index may lag behind runs/ (a run made this instant): the names there decide.
    matches = runDirectoryNames(root).filter((name) => name.startsWith(ref)).sort();
  }
  if (matches.length === 0) {
    throw new NotFoundError(`No run matches ${JSON.stringify(ref)} in ${root.home}`, {
      hint: "list runs with: reins runs",
    });
  }
  if (matches.length > 1) {
    const shown = matches.slice(0, SHOWN_MATCHES).join(", ");
    const count = matches.length > SHOWN_MATCHES ? `more than ${SHOWN_MATCHES}` : matches.length;
    throw new UsageError(
      `Cannot tell which run ${
        JSON.stringify(ref)
      } means: ${count} run ids start with it (${shown}${
        matches.length > SHOWN_MATCHES ? ", …" : ""
      })`,
      { hint: "give more characters of the run id" },
    );
  }
  return matches[0];
}

/** The record of the run `ref` names (see resolveRunId; a damaged run.json reads as rebuilt). */
export function resolveRun(root: DataRoot, ref: string): RunRecord {
  return inspectRun(root, resolveRunId(root, ref)).record;
}

/** The runs matching `filter`, newest first (default 20, at most 10,000). */
export function listRuns(root: DataRoot, filter: RunFilter = {}): RunRecord[] {
  const query = runQuery(filter);
  const index = storeIndex(root);
  return index === null ? [] : index.list(query).map((text) => JSON.parse(text) as RunRecord);
}

/**
 * The shortest prefix of `runId` (8 characters at least) that no other run's id starts with, as
 * runs/ holds them now: for a command printed for people to type (`reins approve PREFIX ID`).
 * Run ids are time-ordered, so two runs started within a minute share their first 8 characters.
 */
export function uniqueRunPrefix(root: DataRoot, runId: string): string {
  let before: string | null = null;
  let after: string | null = null;
  for (const name of runDirectoryNames(root)) {
    if (name < runId && (before === null || name > before)) before = name;
    if (name > runId && (after === null || name < after)) after = name;
  }
  return uniquePrefix(runId, [before, after]);
}
