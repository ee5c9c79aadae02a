// What changed in a directory since a run's snapshot of it: the files the agent added, changed
// and removed (and links and directories likewise), by the same rules the snapshot was taken by
// (.git and what .gitignore ignores are left out, as they are now). A suite scenario uses it to
// say what the agent did to its workspace.
import { createHash } from "node:crypto";
import { joinPath } from "../core/paths.ts";
import type { DataRoot } from "../store/mod.ts";
import { readManifest, type SnapshotEntry, type SnapshotManifest } from "./manifest.ts";
import { type WalkedEntry, walkTree } from "./walk.ts";

export interface SnapshotDiff {
  added: string[];
  removed: string[];
  /** Other content, another kind of entry, another link target, or another mode. */
  changed: string[];
}

async function sameContent(path: string, sha256: string): Promise<boolean> {
  const hash = createHash("sha256");
  using file = await Deno.open(path, { read: true });
  const buffer = new Uint8Array(1024 * 1024);
  while (true) {
    const got = await file.read(buffer);
    if (got === null) break;
    hash.update(buffer.subarray(0, got));
  }
  return hash.digest("hex") === sha256;
}

async function differs(dir: string, was: SnapshotEntry, now: WalkedEntry): Promise<boolean> {
  if (was.type !== now.type) return true;
  if (was.type === "symlink" && now.type === "symlink") return was.target !== now.target;
  if (was.type === "dir" && now.type === "dir") return was.mode !== now.mode;
  if (was.type === "file" && now.type === "file") {
    if (was.mode !== now.mode || was.size !== now.size) return true;
    return !(await sameContent(joinPath(dir, now.path), was.sha256));
  }
  return true;
}

/** Compares `dir` now with the snapshot in `manifest` (which must have been taken). */
export async function diffSnapshot(manifest: SnapshotManifest, dir: string): Promise<SnapshotDiff> {
  if (manifest.state !== "taken") {
    throw new RangeError(
      `Cannot compare with the snapshot of run ${manifest.runId}: it was skipped`,
    );
  }
  const walk = await walkTree(dir, { maxBytes: Infinity, maxEntries: Infinity });
  const before = new Map(manifest.entries.map((entry) => [entry.path, entry]));
  const diff: SnapshotDiff = { added: [], removed: [], changed: [] };
  const seen = new Set<string>();
  for (const entry of walk.entries) {
    seen.add(entry.path);
    const was = before.get(entry.path);
    if (was === undefined) diff.added.push(entry.path);
    else if (await differs(dir, was, entry)) diff.changed.push(entry.path);
  }
  for (const entry of manifest.entries) if (!seen.has(entry.path)) diff.removed.push(entry.path);
  return diff;
}

/**
 * What changed in `dir` since run `runId` started (its snapshot), or null when that run has no
 * usable snapshot (none was taken, it was skipped, or its manifest is damaged).
 */
export async function changedSinceStart(
  root: DataRoot,
  runId: string,
  dir: string,
): Promise<SnapshotDiff | null> {
  const read = readManifest(root, runId);
  if (read === null || !read.ok || read.manifest.state !== "taken") return null;
  return await diffSnapshot(read.manifest, dir);
}
