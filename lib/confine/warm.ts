// A sandbox started ahead of its agent: bubblewrap's namespaces and mounts, and the bridges
// inside, made while the turn makes its run (its files, the snapshot, the gateway), so that the
// agent, once the driver knows its command line, starts in a sandbox that is ready. It decides
// nothing of what the agent may reach: it is the sandbox profile.ts makes for any agent of the
// turn, started early; the agent's command comes later, on its stdin (releaseLine()).
import { signalGroup, spawnGroupLeader } from "../core/process_group.ts";
import type { ConfinedCommand } from "./profile.ts";

export class WarmSandbox {
  /** The working directory it was made for (bound read-write, and its cwd). */
  readonly cwd: string;
  /** When it was started (epoch ms): the agent's start, for the record of its process. */
  readonly startedMs: number;
  #child: Deno.ChildProcess | null;
  #exited = false;

  private constructor(cwd: string, child: Deno.ChildProcess) {
    this.cwd = cwd;
    this.#child = child;
    this.startedMs = Date.now();
    // A sandbox that ended untaken (bubblewrap failed, its working directory went) is no use.
    child.status.then(() => this.#exited = true, () => this.#exited = true);
  }

  /**
   * Starts `sandbox` (sandboxAhead()) as the leader of a group of its own, as every agent starts;
   * null where it cannot be started: the agent's own spawn then meets (and reports) the same
   * trouble, as it would have without one started ahead.
   */
  static start(sandbox: ConfinedCommand): WarmSandbox | null {
    try {
      return new WarmSandbox(
        sandbox.cwd,
        spawnGroupLeader(sandbox.program, {
          args: sandbox.args,
          cwd: sandbox.cwd,
          env: sandbox.env,
          clearEnv: sandbox.clearEnv,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }),
      );
    } catch {
      return null;
    }
  }

  /** Whether it is still there to be taken. */
  get available(): boolean {
    return this.#child !== null && !this.#exited;
  }

  /**
   * Hands the sandbox to an agent: writes `line` (releaseLine()) on its stdin, which the sandbox
   * reads once its bridges listen, and returns the child, which then becomes the agent. With
   * stdin "null" the pipe is closed after the line (the line gave the agent /dev/null); "piped":
   * what the caller writes after comes to the agent. Only once: null after.
   */
  take(line: Uint8Array, stdin: "null" | "piped"): Deno.ChildProcess | null {
    const child = this.#child;
    if (child === null) return null;
    this.#child = null;
    const writer = child.stdin.getWriter();
    // A sandbox that died already (bubblewrap failed) says why on stderr, and in its exit.
    writer.write(line).catch(() => {});
    if (stdin === "null") writer.close().catch(() => {});
    else writer.releaseLock();
    return child;
  }

  /** Ends it untaken (the turn ended before its agent started): its whole group, at once. */
  async discard(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    this.#child = null;
    if (!(await signalGroup(child.pid, "SIGKILL"))) {
      try {
        child.kill("SIGKILL");
      } catch {
        // gone already
      }
    }
    await Promise.allSettled([
      child.status,
      child.stdin.close(),
      child.stdout.cancel(),
      child.stderr.cancel(),
    ]);
  }
}
