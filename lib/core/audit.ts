// An audit of the data root's owners and modes for `reins doctor`: what another user owns, what
// others may write (which reins then refuses to use, see trust.ts), what others may read,
// and links that lead out. Repairing is separate and explicit: tightening a file that others could
// write makes reins trust it again, so a person should see the list first.
import { currentUid, distrustOf } from "./trust.ts";
import { basenameOf, isInside, joinPath } from "./paths.ts";

export type FindingKind =
  /** Owned by another user: never used, and reins cannot repair it. */
  | "foreign"
  /** Writable by group or others: not used until repaired. */
  | "writable"
  /** Readable by group or others: used, but not private. */
  | "readable"
  /** A link that leads out of the data root (or nowhere): never followed. */
  | "link";

export interface Finding {
  /** Absolute. */
  path: string;
  kind: FindingKind;
  isDirectory: boolean;
  reason: string;
}

/** A context's session file: repaired by removing it (its next turn starts afresh). */
export const SESSION_FILE = "harness-session.json";

/** Every entry below `root` (and the root) whose owner or mode is not what reins makes. */
export function auditDataRoot(root: string): Finding[] {
  const findings: Finding[] = [];
  let realRoot: string;
  try {
    realRoot = Deno.realPathSync(root);
  } catch {
    return findings;
  }
  const tmp = joinPath(root, "tmp");
  const visit = (path: string, info: Deno.FileInfo) => {
    if (info.isSymlink) {
      let target: string | null = null;
      try {
        target = Deno.realPathSync(path);
      } catch { /* dangling */ }
      if (target === null || !isInside(target, realRoot)) {
        findings.push({
          path,
          kind: "link",
          isDirectory: false,
          reason: target === null
            ? "it is a link to nothing"
            : `it is a link out of the data root, to ${target}`,
        });
      }
      return;
    }
    const finding = judge(path, info);
    if (finding !== null) findings.push(finding);
    if (!info.isDirectory) return;
    // Below tmp/ lie copies of working directories (a replay's): their modes are the project's.
    if (path.startsWith(`${tmp}/`)) return;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(path)];
    } catch {
      return;
    }
    entries.sort((a, b) => a.name < b.name ? -1 : 1);
    for (const entry of entries) {
      const child = joinPath(path, entry.name);
      try {
        visit(child, Deno.lstatSync(child));
      } catch { /* gone meanwhile */ }
    }
  };
  visit(root, Deno.statSync(root));
  return findings;
}

function judge(path: string, info: Deno.FileInfo): Finding | null {
  const isDirectory = info.isDirectory;
  const uid = currentUid();
  if (info.uid !== null && uid !== null && info.uid !== uid && info.uid !== 0) {
    return { path, kind: "foreign", isDirectory, reason: distrustOf(info)! };
  }
  if (info.mode === null) return null;
  if ((info.mode & 0o022) !== 0) {
    return { path, kind: "writable", isDirectory, reason: distrustOf(info)! };
  }
  if ((info.mode & 0o077) !== 0) {
    const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
    return { path, kind: "readable", isDirectory, reason: `others may read it (mode ${mode})` };
  }
  return null;
}

export interface Repair {
  /** Modes set to 0600 (files) and 0700 (directories). */
  tightened: string[];
  /** Untrusted context sessions removed rather than tightened. */
  removed: string[];
  /** What could not be repaired, with why. */
  failed: { path: string; reason: string }[];
}

/**
 * Repairs what reins owns: modes to 0600/0700, except a context session that others could write,
 * which is removed (trusting it would let them pick the session an agent continues). Another
 * user's files and links out are left for a person.
 */
export function repairDataRoot(findings: readonly Finding[]): Repair {
  const repair: Repair = { tightened: [], removed: [], failed: [] };
  const remove = (path: string) => {
    try {
      Deno.removeSync(path);
      repair.removed.push(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      repair.failed.push({ path, reason: (error as Error).message.split("\n")[0] });
    }
  };
  for (const finding of findings) {
    if (finding.kind === "foreign" || finding.kind === "link") continue;
    if (finding.kind === "writable" && basenameOf(finding.path) === SESSION_FILE) {
      remove(finding.path);
      continue;
    }
    if (finding.kind === "writable" && finding.isDirectory) {
      // Sessions in a directory others could write are as untrusted as the directory.
      for (const session of sessionsBelow(finding.path)) remove(session);
    }
    try {
      Deno.chmodSync(finding.path, finding.isDirectory ? 0o700 : 0o600);
      repair.tightened.push(finding.path);
    } catch (error) {
      repair.failed.push({ path: finding.path, reason: (error as Error).message.split("\n")[0] });
    }
  }
  return repair;
}

function* sessionsBelow(dir: string): Generator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = joinPath(dir, entry.name);
    if (entry.isFile && entry.name === SESSION_FILE) yield path;
    else if (entry.isDirectory && !entry.isSymlink) yield* sessionsBelow(path);
  }
}
