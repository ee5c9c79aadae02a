// A scenario's working directory: a fresh copy of the suite's workdir (or an empty folder) in the
// data root's tmp/, which the sandbox grants. Files are copied, directories made with their
// modes, and symbolic links kept as links with their text, never followed — as snapshots keep
// them (docs/snapshots.md). Nothing here decides what a scenario does with its copy.
import { describeError, ReinsError } from "../core/errors.ts";
import { joinPath } from "../core/paths.ts";
import { isSandboxRefusal } from "../core/sandbox.ts";
import type { ScenarioSpec } from "./load.ts";
import type { SuiteRunHandle } from "./state.ts";

/** Data roots' tmp/ folders, as their real paths. */
const realTmp = new Map<string, string>();

/**
 * A fresh working directory for one attempt: an empty folder, or a copy of the workdir. It lies
 * in the data root's tmp/, which the sandbox grants (the system's temp dir it does not).
 */
export async function makeWorkdir(spec: ScenarioSpec, handle: SuiteRunHandle): Promise<string> {
  const tmp = handle.root.layout.tmp();
  handle.root.ensureDir(tmp);
  // The folder's own name is new, not a link: its parent's real path, looked up once, is enough.
  let real = realTmp.get(tmp);
  if (real === undefined) {
    real = await Deno.realPath(tmp);
    realTmp.set(tmp, real);
  }
  const dir = await Deno.makeTempDir({
    dir: real,
    prefix: `suite-${handle.id.slice(-6)}-${spec.key.slice(0, 40)}-`,
  });
  if (spec.workdir !== null) await copyTree(spec.workdir, dir);
  return dir;
}

/** Copies the tree at `from` into the existing directory `to`. */
export async function copyTree(from: string, to: string): Promise<void> {
  for await (const entry of Deno.readDir(from)) {
    const source = joinPath(from, entry.name);
    const target = joinPath(to, entry.name);
    if (entry.isSymlink) {
      await copyLink(source, target);
    } else if (entry.isDirectory) {
      const { mode } = await Deno.stat(source);
      await Deno.mkdir(target, { mode: mode === null ? 0o755 : mode & 0o777 });
      await copyTree(source, target);
    } else if (entry.isFile) {
      await Deno.copyFile(source, target);
    }
  }
}

/**
 * Makes `target` a link with the text of the link `source`. Deno makes a symbolic link only with
 * unscoped read and write permissions (a link's target is resolved only when it is followed),
 * which the binary's sandbox does not have; there, the link itself is hard-linked instead: the
 * same link under a second name (link(2) does not follow it), possible within one filesystem.
 */
async function copyLink(source: string, target: string): Promise<void> {
  const text = await Deno.readLink(source);
  try {
    await Deno.symlink(text, target);
    return;
  } catch (error) {
    if (!isSandboxRefusal(error)) throw error;
  }
  let why: string;
  try {
    await Deno.link(source, target);
    const made = await Deno.lstat(target);
    if (made.isSymlink && await Deno.readLink(target) === text) return;
    // The system followed the link: not a copy of it.
    await Deno.remove(target);
    why = "this system's link(2) follows links";
  } catch (error) {
    why = isSandboxRefusal(error)
      ? "that needs write access to the workdir, which the sandbox does not grant"
      : /cross-device|os error 18\b/i.test(String(error))
      ? "the data root is on another filesystem than the workdir"
      : describeError(error);
  }
  throw new ReinsError(
    "sandbox",
    `Cannot copy the link ${source} (→ ${text}) into a scenario's working directory: the ` +
      `sandbox may make a link only as a second name of the same link, and ${why}`,
    {
      hint: "keep the data root on the workdir's filesystem and the workdir writable, or replace " +
        "the link by what it points at",
    },
  );
}
