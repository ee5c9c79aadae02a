// Private directories under the data root: each made 0700 whatever the umask, segment by segment,
// an existing one below the root tightened when it is wider, a link out of the root refused. It
// writes no file; atomic_write.ts and private_log.ts make their directories with it.
import { DataRootError } from "./errors.ts";
import { isInside, joinPath, resolvePath } from "./paths.ts";
import {
  type CheckedDirs,
  currentUid,
  lstatOrNull,
  refuseLinkOut,
  UntrustedFileError,
} from "./trust.ts";

const DIR_MODE = 0o700;

function tighten(path: string, info: Deno.FileInfo, mode: number, tightened?: string[]): void {
  // Tightening another user's directory (root can) would not make it ours: refused instead.
  const uid = currentUid();
  if (info.uid !== null && uid !== null && info.uid !== uid && info.uid !== 0) {
    throw new UntrustedFileError(path, `it is owned by uid ${info.uid}, not by you (uid ${uid})`);
  }
  if (info.mode !== null && (info.mode & 0o777) !== mode && (info.mode & 0o077) !== 0) {
    Deno.chmodSync(path, mode);
    tightened?.push(path);
  }
}

/**
 * Makes `dir` (the data root or a directory below it) exist with mode 0700, creating each missing
 * segment 0700 and tightening any existing one below the root that is wider. Returns the paths it
 * tightened. A link below the root that points outside it is refused. With `checked`, a directory
 * already in it is not looked at again, and one made private is added to it. With `made`, each
 * directory it created (the root included) is pushed to it, outermost first: its name in its
 * parent is not durable until the parent is synced, which is the caller's to do.
 */
export function ensurePrivateDir(
  root: string,
  dir: string,
  checked?: CheckedDirs,
  made?: string[],
): string[] {
  const absRoot = resolvePath(root);
  const absDir = resolvePath(dir, absRoot);
  if (checked?.madePrivate.has(absDir)) return [];
  if (!isInside(absDir, absRoot)) {
    throw new DataRootError(`Refusing ${JSON.stringify(absDir)}: it is outside the data root`, {
      hint: `reins writes only below ${absRoot}`,
    });
  }
  const tightened: string[] = [];
  const rootInfo = lstatOrNull(absRoot);
  if (rootInfo === null) {
    Deno.mkdirSync(absRoot, { recursive: true, mode: DIR_MODE });
    Deno.chmodSync(absRoot, DIR_MODE);
    made?.push(absRoot);
  } else if (rootInfo.isSymlink) {
    // The root itself may be a link the user made (~/.reins → /data/reins): follow it.
    const target = Deno.statSync(absRoot);
    if (!target.isDirectory) throw notADirectory(absRoot);
    tighten(absRoot, target, DIR_MODE, tightened);
  } else if (!rootInfo.isDirectory) {
    throw notADirectory(absRoot);
  } else {
    tighten(absRoot, rootInfo, DIR_MODE, tightened);
  }
  let current = absRoot;
  for (const segment of absDir.slice(absRoot.length).split("/").filter(Boolean)) {
    current = joinPath(current, segment);
    const info = lstatOrNull(current);
    if (info === null) {
      try {
        Deno.mkdirSync(current, { mode: DIR_MODE });
        made?.push(current);
        madePrivate(current);
      } catch (error) {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
        // Made by someone else meanwhile: tightened, whatever its mode.
        Deno.chmodSync(current, DIR_MODE);
      }
      continue;
    }
    if (info.isSymlink) {
      refuseLinkOut(absRoot, current);
      continue;
    }
    if (!info.isDirectory) throw notADirectory(current);
    tighten(current, info, DIR_MODE, tightened);
  }
  checked?.madePrivate.add(absDir);
  return tightened;
}

/**
 * Whether this process's umask takes bits of 0700 off a directory it makes: learned from the first
 * directory it makes (its mode read back), so that later ones are not chmodded for nothing — a
 * chmod is a write of the inode, on a turn's path twice (a new context's directory and the run's).
 * The umask is the process's own and reins never changes it (Deno.umask needs a permission the
 * binary does not have).
 */
let umaskNarrowsDirs: boolean | null = null;

/** After `mkdir(path, 0700)` made it: 0700 whatever the umask. */
export function madePrivate(path: string): void {
  if (umaskNarrowsDirs === null) {
    const { mode } = Deno.lstatSync(path);
    umaskNarrowsDirs = mode === null || (mode & 0o777) !== DIR_MODE;
  }
  if (umaskNarrowsDirs) Deno.chmodSync(path, DIR_MODE);
}

function notADirectory(path: string): DataRootError {
  return new DataRootError(`Cannot use ${JSON.stringify(path)}: it is not a directory`, {
    hint: "move the file away, or point REINS_HOME (or --home) at another directory",
  });
}
