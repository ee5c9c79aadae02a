// The `run_command` tool's process handling: `sh -c COMMAND` in the working directory, stdin
// closed, a timeout, and output capped (the head and the tail kept) so a chatty command cannot
// flood the model's context or our memory. It confines the command only with --confine (bubblewrap,
// lib/confine/); otherwise it runs with reins's rights, in the working directory.

import { type AgentProcess, signalGroup, spawnGroupLeader } from "../../core/process_group.ts";
import type { Confinement } from "../../confine/mod.ts";

export interface CommandOutcome {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface RunCommandOptions {
  cwd: string;
  timeoutMs: number;
  /** Bytes kept of each of stdout and stderr. */
  maxOutputBytes: number;
  env?: Record<string, string>;
  /** Stops the command: SIGTERM, then SIGKILL after a grace period. */
  signal: AbortSignal;
  /** Kills the command at once. */
  kill?: AbortSignal;
  /** Told once the command runs (the leader of a group of its own), to keep with the run. */
  onStarted?: (agent: AgentProcess) => void;
  /** The turn's confinement (--confine): the command runs under bubblewrap. */
  confine?: Confinement | null;
}

// After SIGTERM, how long a command has to exit before SIGKILL; and how long to keep reading
// pipes after it exited (a background grandchild may hold them open forever).
const KILL_GRACE_MS = 1_000;
const KILL_NOW_MS = 50;
const DRAIN_GRACE_MS = 200;

// `sh -c` alone does not pass our SIGTERM on: `sh -c "sleep 60; echo"` dies and leaves the sleep
// running. Signalling the process group would need Deno.kill, which needs --allow-run for every
// program, so the shell does it: it runs the command in the background of its own session and,
// on SIGTERM, sends SIGTERM to the whole group (`kill 0`).
const GROUP_WRAPPER = `trap 'trap - TERM; kill -TERM 0' TERM
eval "$1" &
wait $!`;

export async function runShellCommand(
  command: string,
  options: RunCommandOptions,
): Promise<CommandOutcome> {
  // A session (and process group) of its own, which the wrapper can signal as a whole.
  const shell = {
    program: "sh",
    args: ["-c", GROUP_WRAPPER, "reins-command", command],
    cwd: options.cwd,
    env: options.env ?? {},
  };
  const spawned = options.confine ? options.confine.wrap(shell) : { ...shell, clearEnv: false };
  const child = spawnGroupLeader(spawned.program, {
    args: spawned.args,
    cwd: spawned.cwd,
    env: spawned.env,
    clearEnv: spawned.clearEnv,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  options.onStarted?.({ pid: child.pid, pgid: child.pid, startedMs: Date.now(), program: "sh" });
  const stopReading = new AbortController();
  const stdout = collect(child.stdout, options.maxOutputBytes, stopReading.signal);
  const stderr = collect(child.stderr, options.maxOutputBytes, stopReading.signal);

  let timedOut = false;
  let termSent = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let killAtMs = Number.POSITIVE_INFINITY;
  // SIGTERM first in every case (only the wrapper can reach the whole group), SIGKILL for the
  // shell after `graceMs` if it is still there.
  const stop = (graceMs: number) => {
    if (!termSent) {
      termSent = true;
      // Confined, the leader is bubblewrap, which ignores SIGTERM (lib/confine/profile.ts): the
      // wrapper inside, in the same group, hears it from the group's signal.
      if (options.confine) void signalGroup(child.pid, "SIGTERM");
      else trySignal(child, "SIGTERM");
    }
    if (Date.now() + graceMs >= killAtMs) return;
    killAtMs = Date.now() + graceMs;
    clearTimeout(killTimer);
    killTimer = setTimeout(() => trySignal(child, "SIGKILL"), graceMs);
  };
  const timeout = setTimeout(() => {
    timedOut = true;
    stop(KILL_GRACE_MS);
  }, options.timeoutMs);
  const onAbort = () => stop(KILL_GRACE_MS);
  const onKill = () => stop(KILL_NOW_MS);
  options.signal.addEventListener("abort", onAbort, { once: true });
  options.kill?.addEventListener("abort", onKill, { once: true });
  if (options.signal.aborted) onAbort();
  if (options.kill?.aborted) onKill();

  try {
    const status = await child.status;
    const drained = setTimeout(() => stopReading.abort(), DRAIN_GRACE_MS);
    const [out, err] = await Promise.all([stdout, stderr]);
    clearTimeout(drained);
    return {
      exitCode: status.signal === null ? status.code : null,
      signal: status.signal,
      stdout: out,
      stderr: err,
      timedOut,
    };
  } finally {
    clearTimeout(timeout);
    clearTimeout(killTimer);
    options.signal.removeEventListener("abort", onAbort);
    options.kill?.removeEventListener("abort", onKill);
  }
}

function trySignal(child: Deno.ChildProcess, signal: Deno.Signal): void {
  try {
    child.kill(signal);
  } catch {
    // already exited
  }
}

/** Reads a stream to its end (or until `stop`), keeping the first and last `cap / 2` bytes. */
async function collect(
  stream: ReadableStream<Uint8Array>,
  cap: number,
  stop: AbortSignal,
): Promise<string> {
  const reader = stream.getReader();
  const onStop = () => reader.cancel().catch(() => {});
  stop.addEventListener("abort", onStop, { once: true });
  const headCap = Math.ceil(cap / 2);
  const tailCap = cap - headCap;
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let tail: Uint8Array = new Uint8Array(0);
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      let chunk = value;
      if (headBytes < headCap) {
        const take = Math.min(headCap - headBytes, chunk.length);
        head.push(chunk.subarray(0, take));
        headBytes += take;
        chunk = chunk.subarray(take);
      }
      if (chunk.length > 0 && tailCap > 0) tail = keepLast(tail, chunk, tailCap);
    }
  } catch {
    // the pipe broke or was cancelled: keep what arrived
  } finally {
    stop.removeEventListener("abort", onStop);
  }
  const decoder = new TextDecoder();
  const headText = decoder.decode(concat(head));
  const omitted = total - headBytes - tail.length;
  if (omitted <= 0) return headText + decoder.decode(tail);
  return `${headText}\n[… ${omitted} bytes omitted …]\n${decoder.decode(tail)}`;
}

function keepLast(kept: Uint8Array, chunk: Uint8Array, cap: number): Uint8Array {
  if (chunk.length >= cap) return chunk.slice(chunk.length - cap);
  const total = Math.min(cap, kept.length + chunk.length);
  const out = new Uint8Array(total);
  const fromKept = total - chunk.length;
  out.set(kept.subarray(kept.length - fromKept), 0);
  out.set(chunk, fromKept);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
