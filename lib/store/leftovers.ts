// What killed processes leave in a data root besides runs that never settled: a run's creation cut
// short (runs/.staging/<id>, or runs/.<id>.creating of an older reins), and the temp files of
// atomic writes in run and context directories. The cheap reconciliation every command runs
// sweeps them at most every SWEEP_EVERY_MS, looking only at runs/.staging/, the runs started
// since the last sweep (with a day's margin) and the context directories changed since then, not
// at every run; `reins recover` looks at everything. Nothing younger than LEFTOVER_AGE_MS and
// nothing whose lock is held is touched: a live writer holds its lock, or is about to take it.
import { isSafeName } from "../core/ids.ts";
import { joinPath } from "../core/paths.ts";
import { removeAbandonedTemps } from "../core/atomic_write.ts";
import type { DataRoot } from "./data_root.ts";
import { type RunIndex, SWEPT_META_KEY } from "./index_db.ts";
import { CREATING_SUFFIX } from "../core/layout.ts";
import { holdRun } from "./owner.ts";

/** A leftover younger than this may be a live writer's, between making it and locking it. */
export const LEFTOVER_AGE_MS = 60_000;
/** How far before the last sweep a run may have started and still be looked at again. */
const RECENT_MARGIN_MS = 24 * 60 * 60_000;

export interface LeftoversRemoved {
  /** Staging directories of run creations that died before renaming them into place. */
  creations: number;
  /** Temp files of atomic writes whose writer died. */
  temps: number;
}

/**
 * The cheap sweep (see the module comment), noted in the index first so that a sweep that fails
 * or is cut short is not tried again by every command that follows.
 */
export function sweepLeftovers(root: DataRoot, index: RunIndex, nowMs: number): LeftoversRemoved {
  const last = Number(index.getMeta(SWEPT_META_KEY) ?? NaN);
  const since = (Number.isFinite(last) && last <= nowMs ? last : nowMs) - RECENT_MARGIN_MS;
  index.setMeta(SWEPT_META_KEY, String(nowMs));
  const removed = { creations: removeAbandonedCreations(root, { nowMs }), temps: 0 };
  for (const runId of index.idsStartedSince(since)) {
    removed.temps += removeAbandonedTemps(root.layout.run(runId), {
      minAgeMs: LEFTOVER_AGE_MS,
      nowMs,
    });
  }
  // A temp file made in a context's directory changed the directory's mtime: only those changed
  // since the last sweep can hold one it has not seen.
  for (const dir of contextDirectories(root)) {
    let changedMs: number;
    try {
      changedMs = Deno.lstatSync(dir).mtime?.getTime() ?? nowMs;
    } catch {
      continue;
    }
    if (changedMs < since) continue;
    removed.temps += removeAbandonedTemps(dir, { minAgeMs: LEFTOVER_AGE_MS, nowMs });
  }
  return removed;
}

/** Every context directory's path (entries of contexts/ with a context id's name). */
export function contextDirectories(root: DataRoot): string[] {
  const dirs: string[] = [];
  try {
    for (const entry of Deno.readDirSync(root.layout.contexts())) {
      if (entry.isDirectory && isSafeName(entry.name)) {
        dirs.push(joinPath(root.layout.contexts(), entry.name));
      }
    }
  } catch {
    // no contexts yet
  }
  return dirs;
}

/**
 * Removes the staging directories of run creations that died before renaming them into place:
 * those in runs/.staging/ and, with `legacy` (reins recover, which lists runs/ anyway), an older
 * reins's runs/.<id>.creating; then the owner files no run links to. One is left alone while its
 * lock is held, and while it is younger than LEFTOVER_AGE_MS (its creator makes it a moment
 * before it takes the lock).
 */
export function removeAbandonedCreations(
  root: DataRoot,
  options: { nowMs?: number; legacy?: boolean } = {},
): number {
  const before = (options.nowMs ?? Date.now()) - LEFTOVER_AGE_MS;
  const candidates: string[] = [];
  const staging = root.layout.stagingRuns();
  for (const entry of listOrEmpty(staging)) {
    if (entry.isDirectory) candidates.push(joinPath(staging, entry.name));
  }
  if (options.legacy) {
    for (const entry of listOrEmpty(root.layout.runs())) {
      if (entry.isDirectory && entry.name.startsWith(".") && entry.name.endsWith(CREATING_SUFFIX)) {
        candidates.push(joinPath(root.layout.runs(), entry.name));
      }
    }
  }
  let removed = 0;
  for (const dir of candidates) {
    try {
      if ((Deno.lstatSync(dir).mtime?.getTime() ?? Infinity) > before) continue;
    } catch {
      continue; // renamed into place meanwhile, or gone
    }
    let held: Disposable | null | "no-run";
    try {
      // Its directory's lock (and an older reins's owner.lock): a live creation holds them.
      held = holdRun(root, dir);
    } catch {
      continue;
    }
    if (held === null || held === "no-run") continue;
    try {
      Deno.removeSync(dir, { recursive: true });
      removed++;
    } catch {
      // renamed into place meanwhile, or gone
    } finally {
      held[Symbol.dispose]();
    }
  }
  return removed + removeAbandonedOwnerFiles(root, before);
}

/**
 * Removes the owner files (runs/.owners/, lib/store/owner.ts) that no run's owner.lock links to
 * any more and no live process holds: a process that died between making one and linking its
 * first run to it, or whose runs were all removed.
 */
function removeAbandonedOwnerFiles(root: DataRoot, before: number): number {
  let removed = 0;
  for (const entry of listOrEmpty(root.layout.owners())) {
    if (!entry.isFile || !isSafeName(entry.name)) continue;
    const path = root.layout.ownerFile(entry.name);
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(path, { read: true });
    } catch {
      continue;
    }
    try {
      const info = file.statSync();
      if (info.nlink !== 1 || (info.mtime?.getTime() ?? Infinity) > before) continue;
      if (!file.tryLockSync(true)) continue;
      Deno.removeSync(path);
      removed++;
    } catch {
      // gone already, or not ours to remove
    } finally {
      file.close();
    }
  }
  return removed;
}

function listOrEmpty(dir: string): Deno.DirEntry[] {
  try {
    return [...Deno.readDirSync(dir)];
  } catch {
    return [];
  }
}
