// Trust checks under the data root: nothing is read that someone else could have written (as
// OpenSSH treats keys: another owner, group/other-writable, or in such a directory), and no
// symbolic link is followed out of the root. It changes nothing on disk; private_dir.ts,
// atomic_write.ts and private_log.ts check with it before they touch a file. What a caller
// already knows of a root's directories (CheckedDirs) it owns and passes in (a DataRoot does).
import { DataRootError } from "./errors.ts";
import { dirnameOf, isInside, resolvePath } from "./paths.ts";

/**
 * What a caller already knows of the directories below one data root, so that its hot path does
 * not lstat every segment again: those it made private, and those it found trustworthy. One per
 * open data root (a Store owns one), never shared module state; a caller without one pays the
 * checks every time.
 */
export class CheckedDirs {
  /** Made to exist with mode 0700 by this owner: not looked at again. */
  readonly madePrivate = new RecentPaths();
  /** Found trustworthy (see trustProblem): a later check of a file in one stops there. */
  readonly trusted = new RecentPaths();
}

/**
 * The paths most recently added or found, at most `max`: a cache of what need not be looked at
 * again, so one let go is only looked at once more. Every run's and every new context's directory
 * passes through it; a Set of all of them grew a long-lived process by ~250 B a context for good
 * (a server's every conversation). What is used stays (a hit moves it to the newest end): the
 * data root, contexts/ and runs/, which each turn asks about.
 */
export class RecentPaths {
  readonly #max: number;
  readonly #paths = new Set<string>();

  constructor(max = 1024) {
    this.#max = max;
  }

  has(path: string): boolean {
    if (!this.#paths.has(path)) return false;
    this.#paths.delete(path);
    this.#paths.add(path);
    return true;
  }

  add(path: string): void {
    this.#paths.delete(path);
    this.#paths.add(path);
    if (this.#paths.size > this.#max) {
      this.#paths.delete(this.#paths.values().next().value!);
    }
  }

  delete(path: string): boolean {
    return this.#paths.delete(path);
  }

  get size(): number {
    return this.#paths.size;
  }
}

/** A file or directory reins will not use: another user owns it, or others may write it. */
export class UntrustedFileError extends DataRootError {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(`Refusing ${JSON.stringify(path)}: ${reason}`, {
      hint: "reins uses only files you alone can write; reins doctor lists them, and " +
        "reins doctor --repair tightens the modes of those you own (check them first)",
    });
    this.name = "UntrustedFileError";
    this.path = path;
    this.reason = reason;
  }
}

let ownUid: number | null | undefined;

/** This process's uid, or null when the sandbox does not tell (then the owner is not checked). */
export function currentUid(): number | null {
  if (ownUid === undefined) {
    try {
      ownUid = Deno.uid();
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
      ownUid = null;
    }
  }
  return ownUid;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/**
 * Why a file or directory with these stats cannot be trusted, or null: owned by someone other
 * than this user (or root), or writable by group or others.
 */
export function distrustOf(info: Deno.FileInfo): string | null {
  const uid = currentUid();
  if (info.uid !== null && uid !== null && info.uid !== uid && info.uid !== 0) {
    return `it is owned by uid ${info.uid}, not by you (uid ${uid})`;
  }
  if (info.mode !== null && (info.mode & 0o022) !== 0) {
    const who = (info.mode & 0o022) === 0o022
      ? "group and others"
      : (info.mode & 0o020) !== 0
      ? "its group"
      : "others";
    return `it is writable by ${who} (mode ${octal(info.mode)})`;
  }
  return null;
}

/** Why a directory from `dir` up to the data root `root` cannot be trusted, or null. */
function distrustOfDirs(root: string, dir: string, checked?: CheckedDirs): string | null {
  const absRoot = resolvePath(root);
  let current = resolvePath(dir, absRoot);
  while (isInside(current, absRoot)) {
    if (checked?.trusted.has(current) || checked?.madePrivate.has(current)) return null;
    let info: Deno.FileInfo | null;
    try {
      info = Deno.statSync(current);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        return null;
      }
      throw error;
    }
    const reason = distrustOf(info);
    if (reason !== null) {
      const shown = current === absRoot ? "the data root" : `its directory ${current}`;
      return reason.replace(/^it is/, `${shown} is`);
    }
    if (current === absRoot) break;
    current = dirnameOf(current);
  }
  // Every directory of the chain passed: later checks of files in them stop early.
  if (checked === undefined) return null;
  for (let at = resolvePath(dir, absRoot); isInside(at, absRoot); at = dirnameOf(at)) {
    checked.trusted.add(at);
    if (at === absRoot) break;
  }
  return null;
}

/**
 * Why `path` (below the data root `root`) cannot be trusted, or null when it can or does not
 * exist: the file itself (what a link inside the root points at) or a directory between it and
 * the root is owned by another user or writable by group or others. With `checked`, directories
 * it already trusts are not looked at again.
 */
export function trustProblem(root: string, path: string, checked?: CheckedDirs): string | null {
  const absPath = resolvePath(path, resolvePath(root));
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(absPath);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw error;
  }
  return distrustOf(info) ?? distrustOfDirs(root, dirnameOf(absPath), checked);
}

export function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

export function refuseLinkOut(root: string, path: string): void {
  let target: string;
  try {
    target = Deno.realPathSync(path);
  } catch (error) {
    throw new DataRootError(`Refusing the link ${JSON.stringify(path)}: its target is missing`, {
      hint: "remove the link; reins keeps only plain files and directories in its data root",
      cause: error,
    });
  }
  const realRoot = Deno.realPathSync(root);
  if (!isInside(target, realRoot)) {
    throw new DataRootError(
      `Refusing to follow the link ${JSON.stringify(path)}: it points outside the data root, to ${
        JSON.stringify(target)
      }`,
      { hint: "remove the link; reins writes only inside its data root" },
    );
  }
}

/**
 * Checks a file path inside the root: an existing link to outside it is refused, and so is a file
 * to be read that cannot be trusted (see trustProblem). Writing replaces an untrusted file with
 * one of ours, so a writer need not ask.
 */
export function checkFile(
  root: string,
  path: string,
  purpose: "read" | "write",
  checked?: CheckedDirs,
): Deno.FileInfo | null {
  let info = lstatOrNull(path);
  if (info?.isSymlink) {
    refuseLinkOut(root, path);
    info = Deno.statSync(path);
  }
  if (info !== null && purpose === "read") {
    const reason = distrustOf(info) ?? distrustOfDirs(root, dirnameOf(path), checked);
    if (reason !== null) throw new UntrustedFileError(path, reason);
  }
  return info;
}

/**
 * Reads a file below the root as text, or null when it does not exist. Links out are refused, and
 * so is a file someone else could have written (UntrustedFileError). `checked`: see CheckedDirs.
 */
export function readPrivateText(
  root: string,
  path: string,
  checked?: CheckedDirs,
): string | null {
  const absPath = resolvePath(path, resolvePath(root));
  if (checkFile(root, absPath, "read", checked) === null) return null;
  try {
    return Deno.readTextFileSync(absPath);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Opens a file below the root for reading, or null when it does not exist: the checks of
 * readPrivateText, for a reader that takes the file a piece at a time.
 */
export function openPrivateFile(
  root: string,
  path: string,
  checked?: CheckedDirs,
): Deno.FsFile | null {
  const absPath = resolvePath(path, resolvePath(root));
  if (checkFile(root, absPath, "read", checked) === null) return null;
  try {
    return Deno.openSync(absPath, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}
