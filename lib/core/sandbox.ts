// Deno's refusal of a permission as reins says it: one line that names the program, host or path
// and how to grant it, exit 4. A refusal is permanent (the binary's permissions are baked in),
// so whoever meets one stops at once and never retries it like a network error. Deno's message
// reads: Requires run access to "/bin/ls", run again with the --allow-run flag
import { ExitCode, ReinsError } from "./errors.ts";

/** Where a sandbox is made: the build of the binary, or the launcher of a checkout. */
const WHERE = "when you build reins (deno task compile) or start it (deno task reins)";

/**
 * What the sandbox of this process was built from, when reins knows: `launcher` — the launcher
 * of a checkout (scripts/reins.sh) built it for this invocation and says so in REINS_SANDBOX;
 * `compile` — `deno task compile` baked it into this binary. A refusal then names the data root,
 * where it came from, and the directories it holds, and what would grant the rest.
 */
export interface SandboxOrigin {
  by: "launcher" | "compile";
  /** The data root the sandbox holds. */
  home: string;
  /** What named it: the flag or variable, or HOME for the default ~/.reins. */
  homeFrom: "--home" | "REINS_HOME" | "HOME";
  /** The launcher's: the directory reins started in, then each --cwd. The binary's: none. */
  dirs: string[];
}

let origin: SandboxOrigin | null = null;
let baked: SandboxOrigin | null = null;

/** Called by the entry `deno task compile` builds (scripts/compile_entry.ts), before main runs. */
export function bakeSandboxOrigin(value: SandboxOrigin): void {
  baked = value;
}

/** The origin baked into this binary, or null when reins runs from source. */
export function builtSandboxOrigin(): SandboxOrigin | null {
  return baked;
}

/**
 * Tells refusals what this process's sandbox was built from (main.ts, at start: the binary's
 * baked origin, else the launcher's REINS_SANDBOX). One per process, as the sandbox is.
 */
export function setSandboxOrigin(value: SandboxOrigin | null): void {
  origin = value;
}

/** REINS_SANDBOX as the launcher writes it, or null for anything else. */
export function parseSandboxOrigin(text: string | undefined): SandboxOrigin | null {
  if (!text) return null;
  try {
    const value = JSON.parse(text) as Partial<SandboxOrigin>;
    if (
      (value.by === "launcher" || value.by === "compile") && typeof value.home === "string" &&
      (value.homeFrom === "--home" || value.homeFrom === "REINS_HOME" ||
        value.homeFrom === "HOME") &&
      Array.isArray(value.dirs) && value.dirs.every((dir) => typeof dir === "string")
    ) {
      return { by: value.by, home: value.home, homeFrom: value.homeFrom, dirs: value.dirs };
    }
  } catch {
    // not ours
  }
  return null;
}

function homeNamed(from: SandboxOrigin["homeFrom"]): string {
  return from === "HOME" ? "the default ~/.reins" : from;
}

/** The sandbox refused something: exit 4, never retried. */
export class SandboxRefusal extends ReinsError {
  /** run, net, read, write, env, sys, … */
  readonly kind: string;
  /** The program, host or path, unquoted. */
  readonly target: string;
  constructor(
    kind: string,
    target: string,
    message: string,
    options: { cause?: unknown; hint?: string } = {},
  ) {
    super("sandbox", message, { exitCode: ExitCode.sandbox, ...options });
    this.name = "SandboxRefusal";
    this.kind = kind;
    this.target = target;
  }
}

/** Whether `error` is a refusal by the sandbox (Deno's, or one reins already translated). */
export function isSandboxRefusal(error: unknown): boolean {
  return error instanceof Deno.errors.NotCapable || error instanceof SandboxRefusal;
}

// Deno names no path when it refuses a link: "Deno.symlink() requires unscoped --allow-read and
// --allow-write permissions; path-scoped grants … are not supported because a symlink's target is
// only resolved when the link is traversed". Whoever makes a link names it (createLink).
const LINK_REFUSED = /^Deno\.symlink(?:Sync)?\(\) requires unscoped/;

/** Deno's NotCapable (or any error naming a refused access) as a SandboxRefusal. */
export function sandboxRefusal(error: Error): SandboxRefusal {
  if (error instanceof SandboxRefusal) return error;
  if (LINK_REFUSED.test(error.message)) return linkRefusal(null, error);
  const match = /Requires (\w+) access to ("[^"]*"|[^,]+)/.exec(error.message);
  const kind = match?.[1] ?? "some";
  const target = (match?.[2] ?? "a resource").trim().replace(/^"(.*)"$/, "$1");
  return new SandboxRefusal(kind, target, refusalMessage(kind, target), { cause: error });
}

function linkRefusal(
  link: { path: string; target: string; copyOf?: string } | null,
  cause: unknown,
): SandboxRefusal {
  const why = "Deno lets a program make links only with read and write access everywhere, which " +
    "reins never has";
  if (link === null) {
    return new SandboxRefusal(
      "link",
      "a symbolic link",
      `The sandbox refused to create a symbolic link: ${why}`,
      { cause },
    );
  }
  const to = JSON.stringify(link.target);
  return new SandboxRefusal(
    "link",
    link.copyOf ?? link.path,
    link.copyOf === undefined
      ? `The sandbox refused to create the symbolic link ${JSON.stringify(link.path)} (pointing ` +
        `to ${to}): ${why}`
      : `The sandbox refused to recreate the symbolic link ${JSON.stringify(link.copyOf)} ` +
        `(pointing to ${to}) as ${JSON.stringify(link.path)}: ${why}`,
    {
      cause,
      hint: link.copyOf === undefined
        ? "reins cannot make this link where it runs"
        : `replace ${JSON.stringify(link.copyOf)} with what it points to, or remove it`,
    },
  );
}

/**
 * `Deno.symlink(target, path)`, and a refusal that names the link when the sandbox refuses it
 * (`copyOf`: the link it copies, which is the one to name).
 */
export async function createLink(
  target: string,
  path: string,
  options: { copyOf?: string } = {},
): Promise<void> {
  try {
    await Deno.symlink(target, path);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) {
      throw linkRefusal({ path, target, copyOf: options.copyOf }, error);
    }
    throw error;
  }
}

/** Something a command needs of the sandbox, and what in its input asks for it. */
export interface SandboxNeed {
  kind: "read" | "run" | "net";
  /** A path, a program (a name on PATH or a path) or a host:port. */
  target: string;
  /** What asks for it, for the hint: `scenarios[2] (refund): exec`. */
  by: string;
}

/**
 * The first of `needs` this process's sandbox refuses, as the refusal reins reports, else null:
 * asked before a command starts anything, so that it stops before its first step, not at it.
 */
export function refusedNeed(needs: readonly SandboxNeed[]): SandboxRefusal | null {
  for (const need of needs) {
    const descriptor: Deno.PermissionDescriptor = need.kind === "run"
      ? { name: "run", command: need.target }
      : need.kind === "net"
      ? { name: "net", host: need.target }
      : { name: "read", path: need.target };
    if (Deno.permissions.querySync(descriptor).state === "granted") continue;
    return new SandboxRefusal(need.kind, need.target, refusalMessage(need.kind, need.target), {
      hint: `${need.by} needs it; nothing was started or reported`,
    });
  }
  return null;
}

function refusalMessage(kind: string, target: string): string {
  if (origin !== null) {
    const said = originMessage(origin, kind, target);
    if (said !== null) return said;
  }
  switch (kind) {
    case "run":
      return `The sandbox refused to run ${JSON.stringify(target)}: grant it with ` +
        `REINS_ALLOW_RUN=${target} ${WHERE}`;
    case "net":
      return `The sandbox refused to connect to ${target}: grant it with ` +
        `REINS_ALLOW_NET=${target} (or name it in OPENAI_BASE_URL, HARNESS_PLATFORM_URL or ` +
        `OTEL_EXPORTER_OTLP_ENDPOINT) ${WHERE}`;
    case "read":
    case "write":
      return `The sandbox refused to ${kind} ${JSON.stringify(target)}: reins touches only its ` +
        `data root and the directory it was started in (set REINS_HOME ${WHERE}, or start it ` +
        "in a directory that holds the path)";
    case "env":
      return `The sandbox refused to read the variable ${target}: reins reads only the ` +
        "variables lib/core/env.ts lists";
    default:
      return `The sandbox refused ${kind} access to ${target}: scripts/permissions.ts does not ` +
        "grant it";
  }
}

/** What a refusal says when the sandbox's origin is known; null to say it the general way. */
function originMessage(from: SandboxOrigin, kind: string, target: string): string | null {
  const quoted = JSON.stringify(target);
  if (kind === "read" || kind === "write") {
    if (from.by === "launcher") {
      const [start, ...given] = from.dirs;
      const dirs = [
        ...(start === undefined ? [] : [`${start} (where it started)`]),
        ...given.map((dir) => `${dir} (--cwd)`),
      ];
      return `The sandbox refused to ${kind} ${quoted}: this reins may touch only its data root ` +
        `${from.home} (${homeNamed(from.homeFrom)})${
          dirs.length ? ` and ${dirs.join(", ")}` : ""
        }` +
        ": name the path on the command line — --cwd DIR for a working directory, --home DIR " +
        "for a data root, --attach FILE for a file — or start reins in a directory that holds it";
    }
    return `The sandbox refused to ${kind} ${quoted}: this binary was built (deno task compile) ` +
      `for the data root ${from.home} (${homeNamed(from.homeFrom)} at the build) and may touch ` +
      "only that and the directory it is started in: start it in a directory that holds the " +
      `path, or build it again for another data root (REINS_HOME=DIR deno task compile)`;
  }
  if (kind === "run") {
    return from.by === "launcher"
      ? `The sandbox refused to run ${quoted}: grant it with REINS_ALLOW_RUN=${target} (read ` +
        "each time reins starts), the config file's drivers.NAME.program, or name it with --exec"
      : `The sandbox refused to run ${quoted}: this binary was built (deno task compile) ` +
        `without it: build it again with REINS_ALLOW_RUN=${target} (or with the program in the ` +
        "data root's config file)";
  }
  if (kind === "net") {
    return from.by === "launcher"
      ? `The sandbox refused to connect to ${target}: grant it with REINS_ALLOW_NET=${target} ` +
        "(read each time reins starts), or name it with --base-url or in OPENAI_BASE_URL, " +
        "HARNESS_PLATFORM_URL or OTEL_EXPORTER_OTLP_ENDPOINT"
      : `The sandbox refused to connect to ${target}: this binary was built (deno task ` +
        `compile) without it: build it again with REINS_ALLOW_NET=${target}`;
  }
  return null;
}

/**
 * The launcher's cached flags (scripts/reins.sh) this process runs under, when someone else may
 * have written them: reins.sh takes an entry only if this user owns it and it is no link, but a
 * shell cannot read a file's mode for free, so the mode is checked here, before anything runs —
 * a file others may write, or one linked in from elsewhere, may grant what no one asked for.
 */
export function launcherCacheRefusal(entry: string): SandboxRefusal | null {
  let problem: string | null;
  try {
    const info = Deno.lstatSync(entry);
    problem = !info.isFile
      ? "is not a plain file"
      : info.uid !== Deno.uid()
      ? "belongs to another user"
      : (info.mode! & 0o022) !== 0
      ? `may be written by others (mode ${(info.mode! & 0o777).toString(8).padStart(4, "0")})`
      : info.nlink !== 1
      ? `has ${info.nlink} names (a hard link from elsewhere)`
      : null;
  } catch (error) {
    problem = error instanceof Deno.errors.NotFound
      ? "was removed as reins started (the launcher keeps at most 1,000: run again)"
      : `cannot be checked (${(error as Error).message})`;
  }
  if (problem === null) return null;
  return new SandboxRefusal(
    "cache",
    entry,
    `The launcher's cached sandbox ${JSON.stringify(entry)} ${problem}: reins did not run under it`,
    { hint: `remove it (rm ${JSON.stringify(entry)}) and run again: the launcher makes it anew` },
  );
}
