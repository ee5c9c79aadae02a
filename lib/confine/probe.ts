// Whether agents can be confined here: bubblewrap installed and allowed to make its namespaces
// (user namespaces, for anyone but root), and socat there for the bridges. One probe per process
// (a sandbox that worked once works for the process's life); `reins doctor` says what it found.
import { ReinsError } from "../core/errors.ts";

/**
 * Every sandbox's start: all namespaces new, gone with its parent, the system read-only, a /dev
 * and a /proc of its own. The probe starts the same way as a run (lib/confine/profile.ts), so
 * what it finds holds for one.
 */
export const BWRAP_BASE: readonly string[] = [
  "--unshare-all",
  "--die-with-parent",
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
];

/** Why confinement cannot work here (one line, saying what to install or enable), or null. */
export type ConfineProblem = string | null;

let probed: Promise<ConfineProblem> | null = null;

/** The probe's verdict, run once per process. */
export function confinementProblem(): Promise<ConfineProblem> {
  probed ??= probe();
  return probed;
}

/** Throws the refusal (exit 4) when agents cannot be confined here: never a silent unconfined run. */
export async function requireConfinement(): Promise<void> {
  const problem = await confinementProblem();
  if (problem !== null) {
    throw new ReinsError("sandbox", `Cannot confine the agent (--confine): ${problem}`);
  }
}

async function probe(): Promise<ConfineProblem> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("bwrap", {
      args: [...BWRAP_BASE, "--", "socat", "-V"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return "bubblewrap is not installed: install it (apt-get install bubblewrap)";
    }
    if (error instanceof Deno.errors.NotCapable) {
      return "this reins may not run bwrap: its sandbox does not list it (start it with --confine, " +
        "or add bwrap and env to REINS_ALLOW_RUN when you build it)";
    }
    return `bwrap could not be started: ${error instanceof Error ? error.message : error}`;
  }
  if (output.success) return null;
  const said = new TextDecoder().decode(output.stderr).trim().split("\n").pop() ?? "";
  if (/execvp socat|socat: No such file/i.test(said)) {
    return "socat is not installed: install it (apt-get install socat)";
  }
  if (/namespace|uid map|Operation not permitted|Permission denied/i.test(said)) {
    return `bubblewrap cannot make its namespaces (${said}): enable unprivileged user namespaces ` +
      "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also " +
      "kernel.apparmor_restrict_unprivileged_userns=0), or run reins where they are allowed";
  }
  return `bubblewrap failed to start a sandbox (exit ${output.code}): ${said}`;
}
