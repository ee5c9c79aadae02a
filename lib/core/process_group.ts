// An agent's process group: reins starts every agent as the leader of a group of its own (a new
// session: spawnGroupLeader), so that stopping the agent stops what it started too, and a later
// reins can stop what a killed one left running. What Deno 2.9 offers, measured: `detached: true`
// makes the child a session and group leader (pgid = pid) by forking reins (a plain spawn is a
// vfork-like posix_spawn, which copies nothing); the trampoline, setsid(1), does the same without
// the fork; ChildProcess.kill() reaches the leader only; Deno.kill(-pgid) reaches the group but
// needs --allow-run for every program, and reading /proc needs --allow-all. So in the sandbox the
// group is signalled with the `kill` program and a process's start time is asked of `ps` (both on
// the binary's run list, neither runs anything).
import { joinPath, resolvePath } from "./paths.ts";

/**
 * The trampoline agents are started through: util-linux's setsid(1), which calls setsid() and
 * execs the program it is given (it forks only when it already leads a group, which a freshly
 * spawned child never does). By its absolute path, so that the sandbox's run list names this one
 * file (scripts/permissions.ts adds it to every list that names a program) and no `setsid`
 * earlier on someone's PATH; Debian, Ubuntu, Fedora and Arch install it there. It runs whatever it
 * is given, so reins hands it only a program the sandbox would let reins run itself
 * (trampolineTarget).
 */
export const TRAMPOLINE = "/usr/bin/setsid";

/**
 * Starts `program` as the leader of a session and process group of its own (pgid = pid): signals
 * to the group reach what it starts, and a terminal's Ctrl-C reaches reins alone, which passes it
 * on. Through the trampoline (TRAMPOLINE), spawned as a plain child: setsid execs the program, so
 * the pid is the program's, its parent reins, its exit status, signals and standard streams the
 * program's own, and nothing of reins is copied. Where the trampoline is missing or not allowed
 * (how: agentStart), with Deno's `detached`, which forks the whole of reins to call setsid() in
 * the child instead — a cost that grows with the process and holds its thread: 200 one-turn
 * command runs, 8 at a time, under the binary's flags, made 0.09–0.12× the rate of spawning the
 * program bare with the fork (`deno task bench engine`).
 * Throws as Deno.Command's spawn() does: NotCapable for a program the sandbox does not list,
 * NotFound for none on PATH, PermissionDenied for one that is not executable. One exception, in
 * the sandbox only (where reins may not look at PATH's directories): a program that Deno found on
 * PATH when reins started and that has gone since is reported by setsid, in the agent's stderr
 * and exit status 127, rather than thrown.
 */
export function spawnGroupLeader(
  program: string,
  options: Omit<Deno.CommandOptions, "detached">,
): Deno.ChildProcess {
  if (trampolineUsable()) {
    const target = trampolineTarget(program, options);
    if (target !== null) {
      try {
        return new Deno.Command(TRAMPOLINE, {
          ...options,
          args: [target, ...(options.args ?? [])],
        }).spawn();
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
        // Allowed but not there after all (a sandbox cannot look before): fork from now on.
        trampolineState = { usable: false, why: `no ${TRAMPOLINE}` };
      }
    }
  }
  return new Deno.Command(program, { ...options, detached: true }).spawn();
}

/** How agents start here, for `reins doctor`: through the trampoline, or by forking reins. */
export function agentStart(): { via: "trampoline" | "fork"; detail: string } {
  return trampolineUsable()
    ? { via: "trampoline", detail: `through ${TRAMPOLINE} (no fork of reins)` }
    : {
      via: "fork",
      detail: `by forking reins (Deno's detached spawn): ${
        (trampolineState as { why: string }).why
      }; install util-linux for a cheaper start`,
    };
}

/** Whether the trampoline is used: unknown until the first spawn (or agentStart) asks. */
let trampolineState: { usable: true } | { usable: false; why: string } | null = null;

function trampolineUsable(): boolean {
  if (trampolineState === null) {
    if (Deno.permissions.querySync({ name: "run", command: TRAMPOLINE }).state !== "granted") {
      trampolineState = { usable: false, why: `the sandbox does not list ${TRAMPOLINE}` };
    } else {
      const state = runnable(TRAMPOLINE);
      // "unknown": the sandbox may not look; the first spawn tells.
      trampolineState = state === "yes" || state === "unknown"
        ? { usable: true }
        : { usable: false, why: `no ${TRAMPOLINE}` };
    }
  }
  return trampolineState.usable;
}

/**
 * What the trampoline is to exec for `program`: the program's path, found as Deno would find it
 * (on the PATH the child gets, or relative to its working directory) among what the sandbox lets
 * reins run — or its name, for setsid to look up on the PATH the child inherits, where this
 * process may not read PATH and Deno found that name on it when reins started (the run list's
 * names are resolved then). A program that is missing or not executable is refused here as Deno's
 * spawn would refuse it, where this process may look; null when only Deno can tell (a program the
 * sandbox does not list, or whose path cannot be checked here): then Deno spawns it itself, and
 * refuses it itself.
 */
function trampolineTarget(program: string, options: Deno.CommandOptions): string | null {
  // A name setsid would take for an option of its own is left to Deno.
  if (program.startsWith("-") || !granted(program)) return null;
  const cwd = typeof options.cwd === "string" ? options.cwd : options.cwd?.pathname ?? Deno.cwd();
  if (program.includes("/")) return firstRunnable(program, [resolvePath(program, cwd)]);
  let path = options.env?.PATH;
  if (path === undefined && !options.clearEnv) {
    // The child inherits reins's PATH, on which Deno resolved the name at start.
    if (pathHidden) return program;
    try {
      path = Deno.env.get("PATH");
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
      pathHidden = true;
      return program;
    }
  }
  const dirs = (path ?? "").split(":").filter((dir) => dir !== "");
  return firstRunnable(program, dirs.map((dir) => joinPath(resolvePath(dir, cwd), program)));
}

/**
 * Whether this process may read PATH: found out by the first spawn that asks (the sandbox's env
 * list does not name it), and asked no more after that — Deno refuses the same way every time
 * (it never prompts under --no-prompt, and remembers a refused prompt), and each refusal is an
 * exception built on the spawn's path.
 */
let pathHidden = false;

function granted(program: string): boolean {
  return Deno.permissions.querySync({ name: "run", command: program }).state === "granted";
}

/**
 * The first of `candidates` that is a program reins may run; throws NotFound or PermissionDenied
 * as Deno's spawn would, where every candidate could be looked at; null where one could not and
 * none was found that the sandbox grants by its path.
 */
function firstRunnable(program: string, candidates: string[]): string | null {
  let denied = false;
  let unknown = false;
  for (const candidate of candidates) {
    const state = runnable(candidate);
    if (state === "unknown") {
      // Deno resolves the run list's names to paths when it starts: a granted path was there.
      if (granted(candidate)) return candidate;
      unknown = true;
      continue;
    }
    // Not the path the sandbox grants: Deno's spawn tells what it makes of it.
    if (state === "yes") return granted(candidate) ? candidate : null;
    if (state === "not executable") denied = true;
  }
  if (unknown) return null;
  if (denied) throw new Deno.errors.PermissionDenied(`${program} is not executable`);
  throw new Deno.errors.NotFound(`No program ${program} on PATH`);
}

/** Whether `path` is a program that can be run ("unknown": this process may not look). */
function runnable(path: string): "yes" | "no" | "not executable" | "unknown" {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return "unknown";
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return "no";
    }
    throw error;
  }
  if (!info.isFile) return "no";
  return ((info.mode ?? 0o755) & 0o111) !== 0 ? "yes" : "not executable";
}

/** What is kept of a started agent so that it can be stopped later: see stopAgentGroup. */
export interface AgentProcess {
  pid: number;
  /** The process group: the pid, as the agent leads a group of its own. */
  pgid: number;
  /** When reins started it (epoch ms): a later pid with the same number started later. */
  startedMs: number;
  /** The program, for people. */
  program: string;
}

/** How far a start time told by `ps` (to the second) may be from the one reins noted. */
const START_TOLERANCE_MS = 2_000;

/** Sends `signal` to every process of group `pgid`; false when none is left (or none may be). */
export async function signalGroup(pgid: number, signal: Deno.Signal): Promise<boolean> {
  if (!Number.isSafeInteger(pgid) || pgid <= 1) return false;
  try {
    Deno.kill(-pgid, signal);
    return true;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) return false; // ESRCH: the group is gone
  }
  try {
    const output = await new Deno.Command("kill", {
      args: ["-s", signal.replace(/^SIG/, ""), "--", `-${pgid}`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return output.success;
  } catch {
    return false; // no `kill` program, or the sandbox does not list it
  }
}

export interface GroupMember {
  pid: number;
  pgid: number;
  startedMs: number;
}

/**
 * The processes of group `pgid` with their start times, from `ps`; null when `ps` cannot be run
 * (then nothing can be verified, and nothing should be signalled).
 */
export async function groupMembers(pgid: number): Promise<GroupMember[] | null> {
  const groups = await processGroups();
  return groups === null ? null : groups.get(pgid) ?? [];
}

/**
 * Every process group with its members and their start times, from one run of `ps`; null when
 * `ps` cannot be run. For a caller about to look at many groups (a recovery of many runs).
 */
export async function processGroups(): Promise<Map<number, GroupMember[]> | null> {
  let text: string;
  try {
    const output = await new Deno.Command("ps", {
      args: ["-e", "-o", "pid=,pgid=,lstart="],
      env: { LC_ALL: "C", TZ: "UTC" },
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!output.success) return null;
    text = new TextDecoder().decode(output.stdout);
  } catch {
    return null;
  }
  const groups = new Map<number, GroupMember[]>();
  for (const line of text.split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)\s+(.+?)\s*$/.exec(line);
    if (match === null) continue;
    const startedMs = Date.parse(`${match[3]} UTC`);
    if (Number.isNaN(startedMs)) continue;
    const pgid = Number(match[2]);
    const members = groups.get(pgid) ?? [];
    members.push({ pid: Number(match[1]), pgid, startedMs });
    groups.set(pgid, members);
  }
  return groups;
}

/** What stopAgentGroup did, in a form a recovery report can say. */
export type GroupStop =
  | { state: "stopped"; pids: number[] }
  | { state: "gone" }
  | { state: "not-ours"; why: string }
  | { state: "unknown"; why: string };

/**
 * Stops what is left of an agent's group after the reins that started it died: SIGTERM, then
 * SIGKILL for what is still there after `graceMs`. Only a group that is verifiably the agent's is
 * touched: its leader alive with the start time reins noted, or, with the leader gone, members
 * that all started after it (the kernel hands out a group's number again only once the whole
 * group is gone). Anything else is left alone and said.
 */
export async function stopAgentGroup(
  agent: AgentProcess,
  options: { graceMs?: number; groups?: Map<number, GroupMember[]> | null } = {},
): Promise<GroupStop> {
  // A census of the groups taken since the agent's reins died (processGroups) spares a `ps`.
  const members = options.groups === undefined || options.groups === null
    ? await groupMembers(agent.pgid)
    : options.groups.get(agent.pgid) ?? [];
  if (members === null) {
    return { state: "unknown", why: "ps cannot be run to check it is the agent's" };
  }
  if (members.length === 0) return { state: "gone" };
  const leader = members.find((member) => member.pid === agent.pgid);
  if (leader !== undefined && Math.abs(leader.startedMs - agent.startedMs) > START_TOLERANCE_MS) {
    return {
      state: "not-ours",
      why: `process ${agent.pgid} started at ${new Date(leader.startedMs).toISOString()}, ` +
        `not at ${new Date(agent.startedMs).toISOString()}: its number was reused`,
    };
  }
  if (leader === undefined) {
    const early = members.find((member) => member.startedMs < agent.startedMs - START_TOLERANCE_MS);
    if (early !== undefined) {
      return {
        state: "not-ours",
        why: `process ${early.pid} of group ${agent.pgid} started before the agent did`,
      };
    }
  }
  const pids = members.map((member) => member.pid);
  await signalGroup(agent.pgid, "SIGTERM");
  const deadline = Date.now() + (options.graceMs ?? 2_000);
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const left = await groupMembers(agent.pgid);
    if (left === null || left.length === 0) return { state: "stopped", pids };
  }
  await signalGroup(agent.pgid, "SIGKILL");
  return { state: "stopped", pids };
}
