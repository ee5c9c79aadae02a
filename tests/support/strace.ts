// strace for end-to-end tests that hold what a whole `reins run` asks of the kernel (its syscalls
// are the kernel's, not a seam of ours): whether strace can trace here, a traced run, and its
// calls parsed from the trace.
import { CONFIG, MAIN } from "./reins.ts";

/** Whether strace is installed and may trace here (a container may forbid ptrace). */
export function straceWorks(): boolean {
  try {
    const probe = new Deno.Command("strace", {
      args: ["-f", "-e", "trace=none", "-o", "/dev/null", "true"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return probe.success;
  } catch {
    return false;
  }
}

export const RENAMES = ["rename", "renameat", "renameat2"];

/** The descriptor number a traced call's arguments start with ("24" of `24</path>, …`). */
export function fd(call: Call): string {
  return /^\d*/.exec(call.args)![0];
}

/** `reins run --driver command --exec true --json … hello` in `work`, traced by strace into `trace`. */
export function tracedRun(
  home: string,
  work: string,
  trace: string,
  flags: string[],
  syscalls = ["fsync", "fdatasync", ...RENAMES],
) {
  return new Deno.Command("strace", {
    args: [
      "-f",
      "-y", // descriptors shown with their paths
      "-s",
      "256", // enough of a written line to see its event type
      "-e",
      `trace=${syscalls.join(",")}`,
      "-o",
      trace,
      Deno.execPath(),
      "run",
      "--quiet",
      "--allow-all",
      "--config",
      CONFIG,
      MAIN,
      "--home",
      home,
      "run",
      "--driver",
      "command",
      "--exec",
      "true",
      "--json",
      ...flags,
      "hello",
    ],
    cwd: work,
    env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
}

/** One traced call: where it started and ended in the trace (a call of another thread may split it). */
export interface Call {
  name: string;
  /** Its arguments as strace shows them: the path of a descriptor (-y), the quoted names of a rename. */
  args: string;
  start: number;
  end: number;
  ok: boolean;
}

// strace pads a pid to five columns ("5960  rename(…"): a pid below 10000 is followed by two spaces.
export function tracedCalls(text: string): Call[] {
  const calls: Call[] = [];
  const open = new Map<string, Call>();
  text.split("\n").forEach((line, index) => {
    const started = /^(\d+)\s+(\w+)\((.*?)(?: <unfinished \.\.\.>|\)\s+= (-?\d+).*)$/.exec(line);
    if (started) {
      const [, pid, name, args, result] = started;
      const call = { name, args, start: index, end: index, ok: result === "0" };
      calls.push(call);
      if (result === undefined) open.set(pid, call);
      return;
    }
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>.*\)\s+= (-?\d+)/.exec(line);
    const call = resumed ? open.get(resumed[1]) : undefined;
    if (resumed && call) {
      call.end = index;
      call.ok = resumed[3] === "0";
      open.delete(resumed[1]);
    }
  });
  return calls;
}
