// Runs main.ts as a subprocess under the binary's own sandbox (scripts/permissions.ts), with a
// scratch HOME and only the environment a test gives it.
import {
  BINARY_V8_FLAGS,
  HARNESS_PROGRAMS,
  harnessConfigPaths,
  permissionFlags,
  PROCESS_TOOLS,
  TRAMPOLINE,
} from "../../scripts/permissions.ts";

const REPO = new URL("../../", import.meta.url).pathname;
export const MAIN = `${REPO}main.ts`;
export const CONFIG = `${REPO}deno.json`;
// REINS_TEST_BUNDLE=FILE runs the tests against a bundle's entry (scripts/bundle.ts, what the
// binary is compiled from) instead: `deno run -A scripts/bundle.ts /tmp/b && REINS_TEST_BUNDLE=
// /tmp/b/reins.js deno task test`.
const BUNDLE = Deno.env.get("REINS_TEST_BUNDLE") || null;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;

export interface ReinsOptions {
  home: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  /** Programs the sandbox may run (the harness programs, kill and ps are always listed). */
  allowRun?: string[];
  /** Hosts besides loopback. */
  allowNet?: string[];
  /** Extra paths to read and write, beyond home and cwd. */
  allowPaths?: string[];
  /**
   * Run main.ts with --allow-all instead of the sandbox: what a program embedding reins without
   * one sees (reins starts its agents through setsid(1) there too: lib/core/process_group.ts).
   */
  allowAll?: boolean;
  /**
   * Leave the trampoline (/usr/bin/setsid) off the run list: reins then starts agents with Deno's
   * detached spawn, as where setsid is missing.
   */
  withoutTrampoline?: boolean;
  /** A bundle's entry to run instead of main.ts (and of REINS_TEST_BUNDLE): its directory is read. */
  bundle?: string;
}

export interface ReinsResult {
  code: number;
  stdout: string;
  stderr: string;
}

function command(args: string[], options: ReinsOptions): Deno.Command {
  const cwd = options.cwd ?? options.home;
  const tempDir = Deno.env.get("TMPDIR") || "/tmp";
  const flags = permissionFlags({
    home: options.home,
    cwd,
    netHosts: options.allowNet ?? [],
    programs: [...HARNESS_PROGRAMS, ...PROCESS_TOOLS, ...(options.allowRun ?? [])],
    // As the launcher grants them: where the gateway reads the harnesses' own config.
    readPaths: harnessConfigPaths(options.env ?? {}),
  });
  const extra = options.allowPaths ?? [];
  const bundle = options.bundle ?? BUNDLE;
  const code = bundle ?? MAIN;
  const codeDir = bundle === null ? `${REPO}lib` : bundle.slice(0, bundle.lastIndexOf("/"));
  const withPaths = flags.map((flag) => {
    // Source runs may need to read their own modules (a compiled binary embeds them): seen once
    // in ~150 runs as "Requires read access to …/lib/core/ids.ts" while lazy imports loaded.
    if (flag.startsWith("--allow-read=")) return [flag, ...extra, codeDir].join(",");
    if (flag.startsWith("--allow-write=") && extra.length) return [flag, ...extra].join(",");
    if (flag.startsWith("--allow-run=") && options.withoutTrampoline) {
      return flag.split(",").filter((program) => program !== TRAMPOLINE).join(",");
    }
    return flag;
  });
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--config",
      CONFIG,
      // A bundle runs as the binary does, under its V8 flags.
      ...(bundle === null ? [] : [BINARY_V8_FLAGS]),
      ...(options.allowAll ? ["--allow-all", "--no-prompt"] : withPaths),
      code,
      ...args,
    ],
    cwd,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: options.home,
      REINS_HOME: options.home,
      NO_COLOR: "1",
      TMPDIR: tempDir,
      // The child's HOME is scratch; keep Deno's module cache where the test runner's is.
      DENO_DIR: DENO_DIR,
      // regression: Deno's own update check (CONNECT dl.deno.land, once a day per DENO_DIR) went
      // through a test's HTTP_PROXY, which the test counted as reins's traffic.
      DENO_NO_UPDATE_CHECK: "1",
      ...options.env,
    },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs `reins ARGS` to completion. */
export async function reins(args: string[], options: ReinsOptions): Promise<ReinsResult> {
  const child = command(args, options).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Starts `reins ARGS` and returns the child, for tests that signal it mid-run. */
export function spawnReins(args: string[], options: ReinsOptions): Deno.ChildProcess {
  return command(args, options).spawn();
}

/** A fresh temp directory, removed when the returned handle is disposed. */
export async function tempDir(prefix = "reins-test-"): Promise<
  { path: string } & AsyncDisposable
> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}
