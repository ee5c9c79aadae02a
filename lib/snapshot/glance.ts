// How a snapshot's size reads for people, and a cheap look at what a run's snapshot holds (where
// snapshots live under the data root is the layout's: snapshots/, core/layout.ts). Free of
// dependencies (no zod): the start of every run (take.ts) and `reins show` import it.
import { assertNever } from "../core/assert_never.ts";
import type { DataRoot } from "../store/mod.ts";

/** "3 files, 2 KiB": what a snapshot holds, for people. */
export function describeSize(files: number, bytes: number): string {
  const count = files === 1 ? "1 file" : `${files} files`;
  const units = ["bytes", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = Number.isInteger(value) || value >= 10
    ? String(Math.round(value))
    : value.toFixed(1);
  return `${count}, ${shown} ${bytes === 1 ? "byte" : units[unit]}`;
}

/** What a run's snapshot holds, read without checking every entry (manifest.ts checks). */
export type SnapshotGlance =
  | { state: "taken"; files: number; bytes: number }
  | { state: "skipped"; reason: string }
  | { state: "unreadable"; reason: string };

/** A glance at `runId`'s snapshot, or null when it has none. */
export function glanceSnapshot(root: DataRoot, runId: string): SnapshotGlance | null {
  const text = root.readText(root.layout.snapshotManifest(runId));
  if (text === null) return null;
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { state: "unreadable", reason: `it is not JSON: ${(error as Error).message}` };
  }
  if (raw?.type !== "reins.snapshot") return { state: "unreadable", reason: "not a snapshot" };
  if (raw.state === "skipped") return { state: "skipped", reason: String(raw.reason ?? "") };
  if (raw.state === "taken" && typeof raw.files === "number" && typeof raw.bytes === "number") {
    return { state: "taken", files: raw.files, bytes: raw.bytes };
  }
  return { state: "unreadable", reason: "its summary is missing" };
}

/** What `reins show --verbose` says of a run's snapshot (nothing for a run that has none). */
export function snapshotLine(glance: SnapshotGlance | null): string | undefined {
  if (glance === null) return undefined;
  switch (glance.state) {
    case "taken":
      return `started with ${
        describeSize(glance.files, glance.bytes)
      } (reins replay restores them)`;
    case "skipped":
      return `no snapshot: ${glance.reason}`;
    case "unreadable":
      return `its snapshot cannot be read: ${glance.reason}`;
    default:
      return assertNever(glance, "snapshot state");
  }
}
