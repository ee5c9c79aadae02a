// The child process under a harness driver: spawned as the leader of a process group of its own
// (spawnGroupLeader), stdout read as lines, the last 64 KiB of stderr kept, an idle timeout (no
// output for N s → stop it), and stopping on reins's signals (SIGINT, then SIGKILL after a grace
// period, or SIGKILL at once) — sent to the whole group, so what the agent started stops too. It
// knows nothing of any CLI's lines or exit codes: each driver reads those itself (harness.ts).
import { Countdown, onceAfter } from "../core/clock.ts";
import { sandboxRefusal } from "../core/sandbox.ts";
import { type AgentProcess, signalGroup, spawnGroupLeader } from "../core/process_group.ts";
import type { Confinement } from "../confine/mod.ts";

const STDERR_KEEP = 64 * 1024;
const DEFAULT_GRACE_MS = 5_000;
const LAST_SAID_CHARS = 300;
/** How long reins still reads a pipe after the CLI exited, before giving up on it. */
const PIPE_GRACE_MS = 2_000;

export interface HarnessSpawn {
  /** The CLI's name for people: "Claude Code". */
  cli: string;
  program: string;
  args: string[];
  cwd: string;
  /** Added to the inherited environment. */
  env: Record<string, string>;
  /** "piped" for CLIs spoken to over stdin; otherwise stdin is /dev/null. */
  stdin: "null" | "piped";
  /** Seconds without a byte on stdout or stderr after which the CLI counts as hung (0: never). */
  idleTimeoutSeconds: number;
  /** Aborted: SIGINT, then SIGKILL once `graceMs` has passed. */
  signal: AbortSignal;
  /** Aborted: SIGKILL at once. */
  kill?: AbortSignal;
  graceMs?: number;
  /** Told once the child runs: what a later reins needs to stop its group (process_group.ts). */
  onStarted?: (agent: AgentProcess) => void;
  /** The turn's confinement (--confine): the child runs under bubblewrap. Absent: as it is. */
  confine?: Confinement | null;
}

/** Why reins ended the child, when it did. */
export type StopCause = "signal" | "kill" | "idle";

export interface HarnessExit {
  code: number | null;
  signal: Deno.Signal | null;
  /** Set when reins stopped the child (the exit code then says little). */
  stoppedBy: StopCause | null;
  /** The last 64 KiB of stderr, decoded. */
  stderr: string;
  /** The last non-empty line the child wrote on stdout or stderr, shortened. */
  lastSaid: string | null;
}

/** The program could not be started: not found, or not executable. */
export class HarnessStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HarnessStartError";
  }
}

function shorten(line: string): string {
  const flat = line.trim();
  return flat.length > LAST_SAID_CHARS ? `${flat.slice(0, LAST_SAID_CHARS)}…` : flat;
}

function lastLineOf(text: string): string | null {
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  return lines.length ? lines[lines.length - 1] : null;
}

/** A running harness CLI. Read `lines()` to the end, then await `finished()`. */
export class HarnessProcess {
  readonly spec: HarnessSpawn;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array> | null;
  readonly #stderrDone: Promise<void>;
  #stderr: Uint8Array = new Uint8Array(0);
  /** The last stdout line, and whether stderr spoke after it. */
  #lastLine: string | null = null;
  #stderrSpokeLast = false;
  #stoppedBy: StopCause | null = null;
  /** The idle timeout (null: none): restarted by every chunk, paused while reins holds. */
  readonly #idle: Countdown | null;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  #holds = 0;
  #exited = false;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #onAbort = () => this.stop("signal");
  readonly #onKill = () => this.#signal("SIGKILL", "kill");

  private constructor(spec: HarnessSpawn, child: Deno.ChildProcess) {
    this.spec = spec;
    this.#child = child;
    this.#writer = spec.stdin === "piped" ? child.stdin.getWriter() : null;
    // No idle timeout (0 or Infinity): a timer would fire at once on Infinity.
    const idleSeconds = spec.idleTimeoutSeconds;
    this.#idle = idleSeconds > 0 && Number.isFinite(idleSeconds)
      ? new Countdown(idleSeconds * 1000, () => this.stop("idle"))
      : null;
    this.#status = child.status.then((status) => {
      this.#exited = true;
      this.#idle?.dispose();
      clearTimer(this.#graceTimer);
      // What a stopped agent's group still holds (a child that ignored the signal) goes with it.
      if (this.#stoppedBy !== null) void signalGroup(child.pid, "SIGKILL");
      return status;
    });
    this.#stderrDone = this.#readStderr();
    this.#armIdle();
    if (spec.signal.aborted) this.#onAbort();
    else spec.signal.addEventListener("abort", this.#onAbort, { once: true });
    if (spec.kill?.aborted) this.#onKill();
    else spec.kill?.addEventListener("abort", this.#onKill, { once: true });
  }

  /** Starts the CLI; throws HarnessStartError when the program cannot be run. */
  static start(spec: HarnessSpawn): HarnessProcess {
    let child: Deno.ChildProcess;
    let startedMs = Date.now();
    try {
      if (spec.confine) {
        const command = { program: spec.program, args: spec.args, cwd: spec.cwd, env: spec.env };
        ({ child, startedMs } = spec.confine.spawn(command, spec.stdin));
      } else {
        child = spawnGroupLeader(spec.program, {
          args: spec.args,
          cwd: spec.cwd,
          env: spec.env,
          stdin: spec.stdin,
          stdout: "piped",
          stderr: "piped",
        });
      }
    } catch (error) {
      // Not on the sandbox's run list: exit 4 with how to grant it, not a failed start.
      if (error instanceof Deno.errors.NotCapable) throw sandboxRefusal(error);
      if (error instanceof Deno.errors.NotFound) {
        throw new HarnessStartError(
          `Cannot start ${spec.cli}: no program ${JSON.stringify(spec.program)} on PATH`,
          { cause: error },
        );
      }
      if (error instanceof Deno.errors.PermissionDenied) {
        throw new HarnessStartError(
          `Cannot start ${spec.cli}: ${JSON.stringify(spec.program)} is not executable`,
          { cause: error },
        );
      }
      throw error;
    }
    spec.onStarted?.({
      pid: child.pid,
      pgid: child.pid,
      startedMs,
      program: spec.program,
    });
    return new HarnessProcess(spec, child);
  }

  get pid(): number {
    return this.#child.pid;
  }

  /** stdout, one line at a time (without the newline; empty lines skipped). */
  async *lines(): AsyncGenerator<string> {
    for await (const batch of this.lineBatches()) yield* batch;
  }

  /**
   * stdout as the lines of each chunk read: a caller that handles a batch without awaiting keeps
   * the run store's lock for the whole batch (the store holds it until the microtask ends), which
   * is most of a fast recording's speed.
   */
  async *lineBatches(): AsyncGenerator<string[]> {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of this.#chunks(this.#child.stdout)) {
      this.#armIdle();
      pending += decoder.decode(chunk, { stream: true });
      const batch: string[] = [];
      let from = 0;
      let at: number;
      while ((at = pending.indexOf("\n", from)) >= 0) {
        const line = pending.slice(from, at).replace(/\r$/, "");
        from = at + 1;
        if (line.trim() !== "") batch.push(line);
      }
      pending = pending.slice(from);
      if (batch.length > 0) {
        this.#lastLine = batch[batch.length - 1];
        this.#stderrSpokeLast = false;
        yield batch;
      }
    }
    pending += decoder.decode();
    if (pending.trim() !== "") {
      this.#lastLine = pending;
      this.#stderrSpokeLast = false;
      yield [pending];
    }
  }

  /** Writes `value` as one JSON line on stdin; false when the CLI no longer reads it. */
  send(value: unknown): Promise<boolean> {
    return this.write(`${JSON.stringify(value)}\n`);
  }

  /** Writes `text` on stdin as is; false when the CLI no longer reads it. */
  async write(text: string): Promise<boolean> {
    if (!this.#writer || this.#exited) return false;
    try {
      await this.#writer.write(new TextEncoder().encode(text));
      return true;
    } catch {
      return false;
    }
  }

  /** Closes stdin (some CLIs end their session when it closes). */
  async closeStdin(): Promise<void> {
    if (!this.#writer) return;
    try {
      await this.#writer.close();
    } catch {
      // already closed, or the child is gone
    }
  }

  /**
   * Waits for `work` with the idle timer paused: silence while reins itself is waiting (for a
   * person's approval, say) is not a hung CLI.
   */
  async hold<T>(work: Promise<T>): Promise<T> {
    this.#holds++;
    this.#idle?.cancel();
    try {
      return await work;
    } finally {
      this.#holds--;
      this.#armIdle();
    }
  }

  /**
   * Stops the child: SIGINT (SIGTERM for a hung one), then SIGKILL once the grace period has
   * passed. The first cause is the one reported.
   */
  stop(cause: StopCause): void {
    if (this.#exited) return;
    const first = this.#stoppedBy === null;
    this.#stoppedBy ??= cause;
    if (cause === "kill") {
      this.#signal("SIGKILL", cause);
      return;
    }
    if (!first) return;
    // A hung CLI gets SIGTERM: SIGINT is what a person sends, and several CLIs treat it as
    // "cancel the current step" rather than "exit".
    this.#signal(cause === "idle" ? "SIGTERM" : "SIGINT", cause);
    this.#graceTimer = setTimeout(
      () => this.#signal("SIGKILL", cause),
      this.spec.graceMs ?? DEFAULT_GRACE_MS,
    );
  }

  /** Resolves once the child has exited and its stderr is read. */
  async finished(): Promise<HarnessExit> {
    const status = await this.#status;
    await this.#stderrDone;
    await this.closeStdin();
    this.spec.signal.removeEventListener("abort", this.#onAbort);
    this.spec.kill?.removeEventListener("abort", this.#onKill);
    const stderr = new TextDecoder().decode(this.#stderr);
    const said = this.#stderrSpokeLast ? lastLineOf(stderr) : this.#lastLine ?? lastLineOf(stderr);
    return {
      code: status.signal ? null : status.code,
      signal: status.signal,
      stoppedBy: this.#stoppedBy,
      stderr,
      lastSaid: said === null ? null : shorten(said),
    };
  }

  /**
   * The chunks of one of the child's pipes until it closes — or, once the child has exited,
   * until PIPE_GRACE_MS have passed: something the CLI left running in the background (a
   * server its agent started, say) may hold the pipe open for ever, and the turn is over. What
   * holds it is in the agent's group, and is stopped with it: no agent outlives its turn.
   */
  async *#chunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const reader = stream.getReader();
    let done = false;
    let timer: { cancel(): void } | undefined;
    this.#status.then(() => {
      if (done) return;
      // Armed on every run's path: onceAfter, not setTimeout (see lib/core/clock.ts).
      timer = onceAfter(PIPE_GRACE_MS, () => {
        void signalGroup(this.#child.pid, "SIGTERM");
        void reader.cancel().catch(() => {});
      });
    });
    try {
      while (true) {
        const read = await reader.read();
        if (read.done) return;
        yield read.value;
      }
    } finally {
      done = true;
      timer?.cancel();
      reader.releaseLock();
    }
  }

  #signal(signal: Deno.Signal, cause: StopCause): void {
    this.#stoppedBy ??= cause;
    if (this.#exited) return;
    void this.#signalGroup(signal);
  }

  /** The whole group; the leader alone when the group cannot be signalled. */
  async #signalGroup(signal: Deno.Signal): Promise<void> {
    if (await signalGroup(this.#child.pid, signal)) return;
    try {
      this.#child.kill(signal);
    } catch {
      // exited between the check and the kill
    }
  }

  #armIdle(): void {
    if (this.#exited || this.#holds > 0 || this.#stoppedBy !== null) this.#idle?.cancel();
    else this.#idle?.restart();
  }

  async #readStderr(): Promise<void> {
    for await (const chunk of this.#chunks(this.#child.stderr)) {
      this.#armIdle();
      this.#stderr = keepTail(this.#stderr, chunk);
      if (chunk.some((byte) => byte > 32)) this.#stderrSpokeLast = true;
    }
  }
}

function keepTail(tail: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (chunk.length >= STDERR_KEEP) return chunk.slice(chunk.length - STDERR_KEEP);
  const keep = Math.min(tail.length, STDERR_KEEP - chunk.length);
  const out = new Uint8Array(keep + chunk.length);
  out.set(tail.subarray(tail.length - keep));
  out.set(chunk, keep);
  return out;
}

/** "exited with code 1" / "was ended by SIGKILL". */
export function describeExit(exit: Pick<HarnessExit, "code" | "signal">): string {
  return exit.signal ? `was ended by ${exit.signal}` : `exited with code ${exit.code}`;
}

/** The last few lines of stderr on one line, for a failure reason ("" when there are none). */
export function stderrSummary(stderr: string, lines = 3, chars = 600): string {
  const kept = stderr.split("\n").map((line) => line.trim()).filter(Boolean).slice(-lines);
  const joined = kept.join(" ⏎ ");
  return joined.length > chars ? `…${joined.slice(-chars)}` : joined;
}

/**
 * clearTimeout, only for a timer there is: the first clearTimeout in a process, even of
 * undefined, loads Deno's Node timers (~7 ms of CPU: `deno task bench startup`).
 */
function clearTimer(timer: ReturnType<typeof setTimeout> | undefined): void {
  if (timer !== undefined) clearTimeout(timer);
}
