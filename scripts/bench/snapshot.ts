// Working-directory snapshots (lib/snapshot/take.ts), taken at the start of every run: a tree of
// 5,000 files and 50 MiB snapshotted into a fresh data root, against `tar c` of the same tree
// (its output read through a pipe and dropped: GNU tar reads no file when it sees its archive is
// /dev/null itself), both on a warm page cache; then the unchanged tree snapshotted again, which
// must write next to no bytes (every content is stored already, and files the last snapshot saw
// unchanged are not even read). The tree is older than the stat cache's 2 s racy window, as a
// project's files are. Run alone with `deno task bench snapshot`.
//
// What is held to the goal is what a run's start waits for: every file read, hashed and handed
// to the pack writer (lib/snapshot/take.ts startSnapshot). Writing it to disk (the fsync, then
// the index, the stat cache and the manifest) goes on while the agent runs, and the turn waits
// for it before it settles; that time is shown next to it, "until on disk", against the same
// tar (which syncs nothing).
import { compare, figure } from "./_lib.ts";
import { startSnapshot } from "../../lib/snapshot/take.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const MiB = 1024 * 1024;
const FILES = 5000;
const TOTAL = 50 * MiB;
const ROUNDS = 3;

/** 50 directories of 100 files: most a few KiB, one in fifty a few hundred. */
async function makeTree(root: string): Promise<number> {
  let written = 0;
  const big = Math.floor(FILES / 50);
  const bigSize = Math.floor((TOTAL * 0.6) / big);
  const smallSize = Math.floor((TOTAL * 0.4) / (FILES - big));
  const block = new Uint8Array(bigSize);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, Math.min(i + 65536, block.length)));
  }
  for (let n = 0; n < FILES; n++) {
    const dir = `${root}/d${String(n % 50).padStart(2, "0")}`;
    if (n < 50) await Deno.mkdir(dir, { recursive: true });
    const size = n % 50 === 49 ? bigSize : smallSize;
    // Different bytes per file, so nothing dedups by accident.
    const bytes = block.slice(0, size);
    new DataView(bytes.buffer).setUint32(0, n);
    await Deno.writeFile(`${dir}/f${n}.dat`, bytes);
    written += size;
  }
  return written;
}

async function tarMs(root: string): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command("tar", {
    args: ["-cf", "-", "-C", root, "."],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let bytes = 0;
  for await (const chunk of child.stdout) bytes += chunk.length;
  const status = await child.status;
  if (!status.success || bytes < TOTAL) throw new Error(`tar failed (${bytes} bytes)`);
  return performance.now() - started;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

export default async function snapshotBench(): Promise<void> {
  const scratch = await Deno.makeTempDir({ prefix: "reins-bench-snapshot-" });
  try {
    const tree = `${scratch}/tree`;
    const bytes = await makeTree(tree);
    await tarMs(tree); // warms the page cache for both
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const tar: number[] = [];
    const first: number[] = [];
    const firstOnDisk: number[] = [];
    const again: number[] = [];
    const againOnDisk: number[] = [];
    let stored = 0;
    let storedAgain = 0;
    let readAgain = 0;
    let manifestBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      tar.push(await tarMs(tree));
      const home = `${scratch}/home-${round}`;
      using root = new DataRoot(home);
      let started = performance.now();
      const taken = await startSnapshot(root, `run-${round}-a`, tree);
      first.push(performance.now() - started);
      await taken.written;
      firstOnDisk.push(performance.now() - started);
      const summary = taken.summary;
      if (summary.files !== FILES) throw new Error(`snapshotted ${summary.files} files`);
      stored = summary.storedBytes;
      started = performance.now();
      const takenAgain = await startSnapshot(root, `run-${round}-b`, tree);
      again.push(performance.now() - started);
      await takenAgain.written;
      againOnDisk.push(performance.now() - started);
      const second = takenAgain.summary;
      storedAgain = second.storedBytes;
      readAgain = second.readBytes;
      manifestBytes = (await Deno.stat(second.manifest)).size;
      await Deno.remove(home, { recursive: true });
    }
    const rate = (ms: number) => bytes / MiB / (ms / 1000);
    compare({
      name: `snapshot of ${FILES} files, ${Math.round(bytes / MiB)} MiB (first time)`,
      ours: rate(median(first)),
      baseline: rate(median(tar)),
      unit: "MiB/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "tar c",
    });
    compare({
      name: "snapshot of the same tree again (deduplicated)",
      ours: rate(median(again)),
      baseline: rate(median(tar)),
      unit: "MiB/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "tar c",
    });
    const onDisk = (ms: number[]) =>
      `${rate(median(ms)).toFixed(0)} MiB/s = ${(median(tar) / median(ms)).toFixed(2)}× tar`;
    figure(
      "until on disk (pack fsynced, index, cache, manifest written)",
      `first time ${onDisk(firstOnDisk)}; again ${onDisk(againOnDisk)}`,
    );
    figure(
      "bytes written",
      `first ${stored} blob bytes; again ${storedAgain} blob bytes + a ${manifestBytes}-byte ` +
        `manifest, ${readAgain} bytes of files read`,
    );
    if (storedAgain !== 0) throw new Error(`the unchanged tree stored ${storedAgain} bytes again`);
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}
