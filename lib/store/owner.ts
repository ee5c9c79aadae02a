// Who owns a run. The process running a run holds an flock (exclusive) on the run's directory
// itself for as long as its writer is open, and the OS drops it when the process dies: that is
// how reconciliation knows a dead owner. The run's `owner.lock` is a hard link to its process's
// owner file (`runs/.owners/<pid>.<random>`), which the process holds locked for its whole life
// and which lists the agent processes its runs started, one JSON line each with its run's id
// (what a later reins stops should this one die, lib/store/left_agents.ts). A link makes no file:
// a turn's owner lock was a file of its own, the dearest thing a turn makes (docs/engine.md
// "What a turn writes and syncs"). An older reins, which knows only owner.lock, finds it held
// while the process lives (later than the run, never earlier), so it never takes a live run for
// dead. A run an older reins made has an owner.lock of its own (one name), whose lock decides.
// Imports nothing that imports the index, so that reading a record (run_record.ts) may ask.
import { releaseLocks } from "../core/flock.ts";
import { openNewPrivateFile, writeAll } from "../core/atomic_write.ts";
import { joinPath, resolvePath } from "../core/paths.ts";
import { redact } from "../core/redact.ts";
import type { DataRoot } from "./data_root.ts";
import { OWNER_LOCK_FILE } from "./run_files.ts";

/** `alive`: a process holds the run's owner lock; `gone`: nobody does; `no-run`: no such run. */
export type OwnerState = "alive" | "gone" | "no-run";

export function ownerState(root: DataRoot, runId: string): OwnerState {
  const held = holdRun(root, root.layout.run(runId));
  if (held === "no-run") return "no-run";
  if (held === null) return "alive";
  held[Symbol.dispose]();
  return "gone";
}

/**
 * Takes a run's ownership (its directory's lock, and an older reins's owner.lock where it has
 * one; `dir` is the run's directory, or its staging directory) when nobody holds it: released
 * by disposing of the result. Null when its owner (or another reconciler) holds it; "no-run"
 * when there is no such directory. flock conflicts between open files, even in one process: a
 * writer in this process counts as a holder.
 */
export function holdRun(root: DataRoot, dir: string): Disposable | null | "no-run" {
  const path = resolvePath(dir, root.home);
  let handle: Deno.FsFile;
  try {
    handle = Deno.openSync(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "no-run";
    throw error;
  }
  const held: Deno.FsFile[] = [handle];
  try {
    if (!handle.tryLockSync(true)) {
      releaseLocks(held);
      return null;
    }
    const own = ownOwnerLock(joinPath(path, OWNER_LOCK_FILE));
    if (own !== null) {
      held.push(own);
      if (!own.tryLockSync(true)) {
        releaseLocks(held);
        return null;
      }
    }
  } catch (error) {
    releaseLocks(held);
    throw error;
  }
  return { [Symbol.dispose]: () => releaseLocks(held) };
}

/**
 * A run's owner.lock when it is the run's own file (one name: an older reins made the run, or
 * the link to its process's file could not be made), else null: a link to a process's owner
 * file is held for that process's life, not the run's, and the directory's lock decides.
 */
function ownOwnerLock(path: string): Deno.FsFile | null {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true });
  } catch {
    return null;
  }
  try {
    if (file.statSync().nlink === 1) return file;
  } catch { /* unreadable: the directory's lock decides */ }
  file.close();
  return null;
}

/** How many runs share one owner file before the process starts another (see OwnerFile). */
export const RUNS_PER_OWNER_FILE = 256;

/** A run's handle on the owner file its owner.lock links to: for noting its agents. */
export interface RunOwnership {
  /** Notes one agent process (a JSON object's text) with the run. */
  noteAgent(line: string): void;
  /** The run's writer is closed: the owner file may be let go once none of its runs is open. */
  release(): void;
}

/**
 * One of a process's owner files, held locked (exclusive) until the last run linked to it is
 * closed after the process has moved on to another (every RUNS_PER_OWNER_FILE runs, so that a
 * reader of one run's agents reads a few hundred lines at most), or until the process ends.
 */
class OwnerFile {
  readonly path: string;
  readonly #file: Deno.FsFile;
  #linked = 0;
  #open = 0;
  #retired = false;
  #closed = false;

  constructor(path: string, file: Deno.FsFile) {
    this.path = path;
    this.#file = file;
  }

  get full(): boolean {
    return this.#linked >= RUNS_PER_OWNER_FILE;
  }

  /** Links `at` (a run's owner.lock, in its staging directory) to this file. */
  link(at: string, runId: string): RunOwnership {
    Deno.linkSync(this.path, at);
    this.#linked++;
    this.#open++;
    let released = false;
    return {
      noteAgent: (line) => this.#append(runId, line),
      release: () => {
        if (released) return;
        released = true;
        this.#open--;
        if (this.#retired && this.#open === 0) this.close();
      },
    };
  }

  /** No more runs are linked to it; it is let go once those that are have closed. */
  retire(): void {
    this.#retired = true;
    if (this.#open === 0) this.close();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    releaseLocks([this.#file]);
  }

  #append(runId: string, line: string): void {
    if (this.#closed) throw new Error(`The owner file ${this.path} is closed`);
    writeAll(this.#file, new TextEncoder().encode(ownedLine(runId, line)));
  }
}

/** An agent's line as an owner file keeps it: its run's id first, redacted, one line. */
export function ownedLine(runId: string, line: string): string {
  let text = line;
  try {
    const value = JSON.parse(line);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      text = JSON.stringify({ run: runId, ...value });
    }
  } catch { /* kept as given: a reader skips what it cannot use */ }
  return `${redact(text).replaceAll("\n", " ")}\n`;
}

const OWNERS_KEY = Symbol("owner files");

/** The owner files this data root's process holds, closed with the root. */
class OwnerFiles implements Disposable {
  current: OwnerFile | null = null;
  readonly all = new Set<OwnerFile>();

  [Symbol.dispose](): void {
    for (const file of this.all) file.close();
    this.all.clear();
    this.current = null;
  }
}

/**
 * Makes `at` (a new run's owner.lock, in its staging directory) a link to this process's owner
 * file, making the file (0600, locked, its first line the pid) when the process has none yet or
 * its current one is full. Throws when the link cannot be made (a filesystem without hard links):
 * the caller then makes the run an owner.lock of its own.
 */
export function linkOwnerLock(root: DataRoot, at: string, runId: string): RunOwnership {
  let files = root.kept<OwnerFiles>(OWNERS_KEY);
  if (files === null) {
    files = new OwnerFiles();
    root.keep(OWNERS_KEY, files);
  }
  let current = files.current;
  if (current === null || current.full) {
    current?.retire();
    files.current = null;
    current = openOwnerFile(root);
    files.current = current;
    files.all.add(current);
  }
  return current.link(at, runId);
}

function openOwnerFile(root: DataRoot): OwnerFile {
  root.ensureDir(root.layout.owners());
  const random = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);
  const path = root.layout.ownerFile(`${Deno.pid}.${random}`);
  const file = openNewPrivateFile(path, { append: true });
  try {
    file.lockSync(true);
    writeAll(file, new TextEncoder().encode(`${Deno.pid}\n`));
  } catch (error) {
    file.close();
    try {
      Deno.removeSync(path);
    } catch { /* gone already */ }
    throw error;
  }
  return new OwnerFile(path, file);
}

/**
 * A run's owner.lock of its own, locked, its first line the pid: where no link to the process's
 * owner file can be made (as an older reins made every run's).
 */
export function ownOwnerLockFile(at: string, runId: string): RunOwnership {
  const file = openNewPrivateFile(at, { write: true });
  try {
    file.lockSync(true);
    writeAll(file, new TextEncoder().encode(`${Deno.pid}\n`));
  } catch (error) {
    file.close();
    throw error;
  }
  let released = false;
  return {
    noteAgent: (line) => {
      if (released) throw new Error(`The owner lock ${at} is released`);
      writeAll(file, new TextEncoder().encode(ownedLine(runId, line)));
    },
    release: () => {
      if (released) return;
      released = true;
      releaseLocks([file]);
    },
  };
}
