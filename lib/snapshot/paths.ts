// Where snapshots live under the data root, and how their size reads for people. Free of
// dependencies: the start of every run (take.ts) imports it.
import { safeName } from "../core/ids.ts";
import { joinPath } from "../core/paths.ts";

export function snapshotsDir(home: string): string {
  return joinPath(home, "snapshots");
}

export function packPath(home: string, pack: string): string {
  return joinPath(snapshotsDir(home), "packs", `${safeName(pack, "pack id")}.pack`);
}

export function manifestPath(home: string, runId: string): string {
  return joinPath(snapshotsDir(home), "manifests", `${safeName(runId, "run id")}.json`);
}

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
