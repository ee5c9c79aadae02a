// The sandbox: the one list of permission flags that `deno task compile` bakes into dist/reins
// and that the end-to-end tests run main.ts under, so what the binary may touch is what is tested.
// Read/write: the data root and the working directory (reins keeps its temp files in the data
// root's tmp/). Net: loopback, the platform host, the model hosts and the OTLP collector. Run: the
// harness programs, `kill` and `ps` (to stop an agent's process group and check it is the one
// reins started), what REINS_ALLOW_RUN adds, and with any of them the trampoline /usr/bin/setsid
// (which starts each agent as a group leader without forking reins). Env: the variables
// lib/core/env.ts reads.
// Deno cannot confine a child process: whatever may run, runs with reins's own rights.
import { ENV_VARS } from "../lib/core/env.ts";

export interface Sandbox {
  /** The data root. */
  home: string;
  /** The working directory; "." in the binary means wherever it is started. */
  cwd: string;
  /** Hosts (host or host:port) besides loopback. */
  netHosts: string[];
  /** Programs the binary may start: names on PATH or absolute paths. */
  programs: string[];
  /** More paths to read and write: what a launcher was given on the command line (--cwd, …). */
  extraPaths?: readonly string[];
  /** Paths to read only: the harness CLIs' own config, where the model gateway learns upstreams. */
  readPaths?: readonly string[];
}

export const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"];
/**
 * Where the harness CLIs call their models by default: the model gateway (lib/gateway/) passes
 * their calls on from reins's own process, so reins must reach them (Anthropic; OpenAI and
 * ChatGPT's Codex backend; Google AI and Code Assist; opencode's own). Another provider's host is
 * added with REINS_ALLOW_NET.
 */
export const HARNESS_MODEL_HOSTS = [
  "api.anthropic.com",
  "api.openai.com",
  "chatgpt.com",
  "generativelanguage.googleapis.com",
  "cloudcode-pa.googleapis.com",
  "opencode.ai",
];
export const HARNESS_PROGRAMS = ["claude", "codex", "gemini", "opencode"];
/**
 * What reins runs itself: `kill` signals an agent's whole process group (Deno.kill of a group
 * needs every program allowed) and `ps` tells a process's start time (reading /proc needs
 * --allow-all). Neither can start another program.
 */
export const PROCESS_TOOLS = ["kill", "ps"];
/**
 * The trampoline agents start through (TRAMPOLINE of lib/core/process_group.ts, held equal by
 * tests/core/process_group_test.ts): setsid(1) makes the agent lead a session and process group of
 * its own without forking reins. On every run list that names a program. It execs what it is
 * given, so reins hands it only programs the list names (lib/core/process_group.ts).
 */
export const TRAMPOLINE = "/usr/bin/setsid";
/**
 * What confining agents runs (--confine, docs/confinement.md), listed only for an invocation that
 * confines (or `reins doctor`, which probes it): bwrap and env run what they are given, and it
 * is the agents' own sandbox, not this one, that confines them then. ls says which of your secret
 * stores exist to be hidden, socat makes the sandbox's sockets. The trampoline comes with them
 * (runList): bubblewrap is started through it, a session and group leader like any agent.
 */
export const CONFINE_PROGRAMS = ["bwrap", "env", "socat", "ls"];
/**
 * The built-in loop's run_command tool runs `sh -c`. It is on the list only when REINS_ALLOW_RUN
 * names it: `sh` runs anything, so with it the list confines nothing.
 */
export const LOOP_SHELL = "sh";

function split(value: string | undefined): string[] {
  return (value ?? "").split(",").map((part) => part.trim()).filter(Boolean);
}

function hostOf(url: string | undefined): string[] {
  if (!url) return [];
  try {
    return [new URL(url).host];
  } catch {
    return [];
  }
}

/**
 * The harness CLIs' config the gateway reads (read only) to tell where their model calls go:
 * Codex's $CODEX_HOME (~/.codex), opencode's config directory and OPENCODE_CONFIG.
 */
export function harnessConfigPaths(env: Record<string, string | undefined>): string[] {
  const home = env.HOME ?? "";
  return [
    env.CODEX_HOME || `${home}/.codex`,
    `${env.XDG_CONFIG_HOME || `${home}/.config`}/opencode`,
    ...(env.OPENCODE_CONFIG ? [env.OPENCODE_CONFIG] : []),
  ].filter((path) => path.startsWith("/"));
}

/**
 * The sandbox a build (or a `deno task reins` run) gets from its environment: REINS_HOME or
 * ~/.reins; the platform and model hosts of HARNESS_PLATFORM_URL / FI_BASE_URL and
 * OPENAI_BASE_URL; the collector of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else of
 * OTEL_EXPORTER_OTLP_ENDPOINT; REINS_ALLOW_NET and REINS_ALLOW_RUN add hosts and programs.
 */
export function sandboxFromEnv(
  env: Record<string, string | undefined>,
  cwd = ".",
): Sandbox {
  const home = env.REINS_HOME || `${env.HOME ?? ""}/.reins`;
  const programs = [
    env.REINS_CLAUDE_BIN || "claude",
    env.REINS_CODEX_BIN || "codex",
    env.REINS_GEMINI_BIN || "gemini",
    env.REINS_OPENCODE_BIN || "opencode",
    ...PROCESS_TOOLS,
    ...split(env.REINS_ALLOW_RUN),
  ];
  return {
    home,
    cwd,
    netHosts: [
      ...hostOf(env.HARNESS_PLATFORM_URL || env.FI_BASE_URL),
      ...hostOf(env.OPENAI_BASE_URL || "https://api.openai.com/v1"),
      // The OpenTelemetry collector traces go to (lib/otel/target.ts reads the same variables).
      ...hostOf(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT),
      // The harnesses' model hosts, and any their base-URL variables name (the gateway's upstreams).
      ...HARNESS_MODEL_HOSTS,
      ...hostOf(env.ANTHROPIC_BASE_URL),
      ...hostOf(env.GOOGLE_GEMINI_BASE_URL),
      ...hostOf(env.CODE_ASSIST_ENDPOINT),
      ...split(env.REINS_ALLOW_NET),
    ],
    programs,
    readPaths: harnessConfigPaths(env),
  };
}

/** The permission flags for a sandbox, in a stable order. */
export function permissionFlags(sandbox: Sandbox): string[] {
  const unique = (items: string[]) => [...new Set(items.filter(Boolean))];
  const paths = unique([sandbox.home, sandbox.cwd, ...(sandbox.extraPaths ?? [])]).join(",");
  const readOnly = unique([...(sandbox.readPaths ?? [])]);
  const programs = runList(sandbox);
  return [
    `--allow-read=${[paths, ...readOnly].join(",")}`,
    `--allow-write=${paths}`,
    `--allow-net=${unique([...LOOPBACK_HOSTS, ...sandbox.netHosts]).join(",")}`,
    // Deno refuses an empty --allow-run=; no programs means no flag, so running is denied.
    ...(programs.length ? [`--allow-run=${programs.join(",")}`] : []),
    `--allow-env=${ENV_VARS.join(",")}`,
    // Only the process's own uid: files another user owns are not trusted (lib/core/trust.ts).
    "--allow-sys=uid",
    "--no-prompt",
  ];
}

/** reins's own modules, which a run from a checkout (not a compiled binary) reads as it goes. */
export const SOURCE_DIR = new URL("../lib/", import.meta.url).pathname;

/**
 * The flags for running main.ts from a checkout: the sandbox's, plus reading reins's own lib/
 * (a compiled binary embeds it), since its lazily imported modules are read when first imported
 * (lib/core/lazy_import.ts).
 */
export function sourceRunFlags(sandbox: Sandbox): string[] {
  return codeRunFlags(sandbox, SOURCE_DIR);
}

/**
 * The flags for running reins's code from `dir` (lib/, or a bundle of scripts/bundle.ts) under
 * the binary's sandbox: its flags, and the reading of `dir`, which the binary embeds.
 */
export function codeRunFlags(sandbox: Sandbox, dir: string): string[] {
  return permissionFlags(sandbox).map((flag) =>
    flag.startsWith("--allow-read=") ? `${flag},${dir}` : flag
  );
}

/**
 * The V8 flags `deno task compile` builds the binary with. --no-lazy: Deno keeps a module's V8 code
 * cache from when the module is compiled, before it runs, so the cache holds only what V8 compiled
 * eagerly — a function it compiles lazily, on its first call, is compiled anew by every process.
 * Compiled with its module, every function is in the cache. With it, and the bundle's common chunk
 * (scripts/bundle.ts), `deno task bench engine`'s whole `reins run --driver command` went from 2.5×
 * to 1.71–1.78× the script spawning `true` (three runs, 2026-12-01); the flag alone, 49.6 → 41.7
 * ms (medians of 30 interleaved runs each, with the common chunk). The first run after a build,
 * which fills the cache, takes ~8 ms longer.
 *
 * --optimize-for-size: V8 keeps its young generation small (it grows to 2 x 32 MiB by default
 * over any process that allocates as fast as JSON parsing does, whatever little it holds) and
 * grows its old generation less between collections. `deno task bench otel`'s export of a
 * 1,000,000-event run peaks at 91-97 MiB with it, 141-157 MiB without (docs/otel.md); a whole
 * `reins run --driver command` from the sources takes no more CPU with it (0.142-0.148 s median
 * against 0.156-0.179, blocks of 10 runs in turn, shared 2-core machine, 2026-12-03).
 */
export const BINARY_V8_FLAGS = "--v8-flags=--no-lazy,--optimize-for-size";

/**
 * The flags for running a bundle of scripts/bundle.ts in `dir` as the binary runs it: the
 * binary's V8 flags, its sandbox, and the reading of `dir`, which the binary embeds.
 */
export function bundleRunFlags(sandbox: Sandbox, dir: string): string[] {
  return [BINARY_V8_FLAGS, ...codeRunFlags(sandbox, dir)];
}

/** The programs a sandbox lets run: its own, and the trampoline with them (none: none). */
export function runList(sandbox: Sandbox): string[] {
  const programs = [...new Set(sandbox.programs.filter(Boolean))];
  return programs.length ? [...new Set([...programs, TRAMPOLINE])] : [];
}

/** What a sandbox allows, for people: the lines `deno task compile` prints. */
export function describeSandbox(sandbox: Sandbox): string[] {
  const unique = (items: string[]) => [...new Set(items.filter(Boolean))];
  const programs = runList(sandbox);
  return [
    `data root    ${sandbox.home} (baked in: --home and REINS_HOME elsewhere are refused)`,
    sandbox.cwd === "."
      ? "working dir  the directory reins is started in, and below it (--cwd elsewhere is refused)"
      : `working dir  ${sandbox.cwd}, and below it`,
    `net          ${unique([...LOOPBACK_HOSTS, ...sandbox.netHosts]).join(", ")}`,
    ...(sandbox.readPaths?.length
      ? [`read only    ${unique([...sandbox.readPaths]).join(", ")} (the harnesses' own config)`]
      : []),
    `run          ${programs.join(", ")}${
      programs.includes(LOOP_SHELL)
        ? " (with sh, the loop's run_command tool is on, and anything can run)"
        : " (no sh: the loop's run_command tool is off; REINS_ALLOW_RUN=sh turns it on)"
    }`,
    ...(programs.length
      ? [
        `             agents start through ${TRAMPOLINE}, which reins hands only the programs above`,
      ]
      : []),
    "             Deno cannot confine a program it starts: it runs with your rights",
    `env          ${ENV_VARS.length} variables reins reads (lib/core/env.ts); sys: uid only`,
  ];
}

if (import.meta.main) {
  console.log(permissionFlags(sandboxFromEnv(Deno.env.toObject())).join("\n"));
}
