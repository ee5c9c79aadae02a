// Puts a run's starting working directory back, from its snapshot, into a fresh directory: what
// `reins replay` replays in. Every file gets its recorded bytes and permission bits (never setuid,
// setgid or sticky), every directory (empty ones too) its bits, every link its text. Each content is checked against its sha256 as it is
// read back: one that is missing or different is a damaged snapshot, said as such, never a
// silently different tree.
import { createHash } from "node:crypto";
import { assertNever } from "../core/assert_never.ts";
import { ReinsError } from "../core/errors.ts";
import { joinPath } from "../core/paths.ts";
import { createLink } from "../core/sandbox.ts";
import type { DataRoot } from "../store/mod.ts";
import type { SnapshotManifest } from "./manifest.ts";

const CHUNK = 1024 * 1024;

/**
 * What of a recorded mode is put back: the permission bits. A manifest may say 0o4777 (it is a
 * file under the data root, and the mode a tree had): setuid, setgid and sticky are never
 * restored, so that a replay never makes a program that runs as its owner.
 */
export const PERMISSION_BITS = 0o777;

/** The snapshot cannot be put back as it was taken. */
export class SnapshotDamagedError extends ReinsError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("data_root", message, {
      hint: "replay with --cwd DIR to use a directory of your own",
      cause: options.cause,
    });
    this.name = "SnapshotDamagedError";
  }
}

/**
 * Writes the tree of a taken snapshot into `target`, an existing empty directory. Returns how
 * many files and bytes it wrote.
 */
export async function restoreSnapshot(
  root: DataRoot,
  manifest: SnapshotManifest,
  target: string,
): Promise<{ files: number; bytes: number }> {
  if (manifest.state !== "taken") {
    throw new RangeError(`Cannot restore the snapshot of run ${manifest.runId}: it was skipped`);
  }
  let files = 0;
  let bytes = 0;
  const dirs: { path: string; mode: number }[] = [];
  const packs = new Map<string, Deno.FsFile>();
  try {
    for (const entry of manifest.entries) {
      const path = joinPath(target, entry.path);
      switch (entry.type) {
        case "dir":
          // Writable while it is filled; its own mode is set once everything is in it.
          await Deno.mkdir(path, { mode: 0o700 });
          dirs.push({ path, mode: entry.mode & PERMISSION_BITS });
          break;
        case "symlink":
          await createLink(entry.target, path, { copyOf: joinPath(manifest.cwd, entry.path) });
          break;
        case "file": {
          const pack = packs.get(entry.pack) ?? openPack(root, manifest.runId, entry.pack);
          packs.set(entry.pack, pack);
          copyRange(pack, entry.offset, entry.size, path, entry.sha256, () =>
            damaged(
              manifest.runId,
              `the content of ${entry.path} is not what was stored (sha256 ${entry.sha256})`,
            ));
          Deno.chmodSync(path, entry.mode & PERMISSION_BITS);
          files++;
          bytes += entry.size;
          break;
        }
        default:
          assertNever(entry, "snapshot entry");
      }
    }
  } finally {
    for (const pack of packs.values()) pack.close();
  }
  for (const dir of dirs.reverse()) await Deno.chmod(dir.path, dir.mode);
  return { files, bytes };
}

function damaged(runId: string, what: string): SnapshotDamagedError {
  return new SnapshotDamagedError(`The snapshot of run ${runId} is damaged: ${what}`);
}

function openPack(root: DataRoot, runId: string, pack: string): Deno.FsFile {
  try {
    return Deno.openSync(root.layout.snapshotPack(pack), { read: true });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw damaged(runId, `its pack ${pack} is gone`);
  }
}

/** Copies `size` bytes at `offset` of `pack` to a new file at `to`, checking their sha256. */
function copyRange(
  pack: Deno.FsFile,
  offset: number,
  size: number,
  to: string,
  sha256: string,
  fail: () => Error,
): void {
  const hash = createHash("sha256");
  using out = Deno.openSync(to, { write: true, createNew: true, mode: 0o600 });
  pack.seekSync(offset, Deno.SeekMode.Start);
  const buffer = new Uint8Array(Math.min(CHUNK, Math.max(size, 1)));
  for (let left = size; left > 0;) {
    const got = pack.readSync(buffer.subarray(0, Math.min(left, buffer.length)));
    if (got === null) throw fail();
    const chunk = buffer.subarray(0, got);
    hash.update(chunk);
    let written = 0;
    while (written < got) written += out.writeSync(chunk.subarray(written));
    left -= got;
  }
  if (hash.digest("hex") !== sha256) throw fail();
}
