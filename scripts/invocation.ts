// The sandbox of one `reins …` started from a checkout (the installed launcher, `deno task reins`):
// the binary's sandbox (permissions.ts) built from the command line as given — `--home`, `--cwd`,
// `--attach FILE`, `--model mock:FILE`, `--exec 'PROGRAM …'`, `--base-url URL`, `--endpoint URL`,
// `reins serve`'s `--token-file FILE` and `--host ADDRESS` (to listen on), `reins suite`'s
// `--plan FILE`, the folders of `--out FILE` and `--junit FILE` (written beside, then renamed),
// and the suite file with everything it names (lib/suite/needs.ts) — and from the config file's
// `drivers.*.program`, besides the environment (SANDBOX_ENV) and the directory it starts in. A
// path the person typed is what they mean reins to touch; nothing else widens the sandbox.
import { CONFINE_PROGRAMS, type Sandbox, sandboxFromEnv } from "./permissions.ts";
import { splitCommandLine } from "../lib/core/command_line.ts";

/** Where the data root of an invocation came from, for the messages of a refusal. */
export type HomeOrigin = "--home" | "REINS_HOME" | "HOME";

/**
 * Every variable an invocation's sandbox is built from, and no other: scripts/reins.sh keys its
 * cache of sandboxes on the same list (a test holds the two equal).
 */
export const SANDBOX_ENV = [
  "HOME",
  "REINS_HOME",
  "REINS_CONFIG",
  "REINS_CLAUDE_BIN",
  "REINS_CODEX_BIN",
  "REINS_GEMINI_BIN",
  "REINS_OPENCODE_BIN",
  "REINS_ALLOW_RUN",
  "REINS_ALLOW_NET",
  "HARNESS_PLATFORM_URL",
  "FI_BASE_URL",
  "OPENAI_BASE_URL",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  // Where the harnesses' model calls go, and their own config (the model gateway's upstreams).
  "ANTHROPIC_BASE_URL",
  "GOOGLE_GEMINI_BASE_URL",
  "CODE_ASSIST_ENDPOINT",
  "CODEX_HOME",
  "XDG_CONFIG_HOME",
  "OPENCODE_CONFIG",
] as const;

export type SandboxEnv = Partial<Record<typeof SANDBOX_ENV[number], string>>;

/**
 * Every flag whose value the sandbox is built from, and no other: scripts/reins.sh keys its cache
 * on these flags' values and drops the other words that are not flags (a test holds the two equal).
 */
export const VALUE_FLAGS = [
  "home",
  "cwd",
  "attach",
  "model",
  "exec",
  "base-url",
  "endpoint",
  "host",
  "token-file",
  "plan",
  "junit",
  "out",
] as const;

type ValueFlag = typeof VALUE_FLAGS[number];

export interface Invocation {
  sandbox: Sandbox;
  home: string;
  homeFrom: HomeOrigin;
  /** The directory reins was started in, and the --cwd directories it was given. */
  dirs: string[];
  /** The config file whose programs were granted, and its bytes as read (null: none read). */
  config: { path: string; bytes: Uint8Array | null };
  /**
   * Whether the sandbox follows from the command line, SANDBOX_ENV, the start directory and the
   * config file alone: false when a suite file was read (what it names is not in that key).
   */
  cacheable: boolean;
}

/** The value of each `--NAME VALUE` or `--NAME=VALUE` in `args`, in order (up to a `--`). */
export function flagValues(args: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") break;
    if (arg === `--${name}` && i + 1 < args.length) values.push(args[++i]);
    else if (arg.startsWith(`--${name}=`)) values.push(arg.slice(name.length + 3));
  }
  return values;
}

function absolute(path: string, from: string): string {
  const joined = path.startsWith("/") ? path : `${from.replace(/\/+$/, "")}/${path}`;
  // Normalise `.` and `..` segments: Deno compares permission paths as given.
  const parts: string[] = [];
  for (const part of joined.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

/** The folder a file is written in: reins writes beside it and renames (an atomic replace). */
function folderOf(path: string): string {
  return path.replace(/\/[^/]*$/, "") || "/";
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

/** The program of an `--exec` command line, split as the command driver splits it. */
function programOf(exec: string): string | null {
  try {
    return splitCommandLine(exec)[0];
  } catch {
    return null; // the command driver refuses it with the reason
  }
}

/** Whether the config file turns confinement on for every turn (`confine.enabled`). */
function configConfines(bytes: Uint8Array | null): boolean {
  if (bytes === null) return false;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes));
    return parsed?.confine?.enabled === true;
  } catch {
    return false;
  }
}

function parseConfigPrograms(bytes: Uint8Array | null): string[] {
  if (bytes === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return [];
  }
  const drivers = (parsed as { drivers?: Record<string, { program?: unknown }> } | null)?.drivers;
  if (drivers === null || typeof drivers !== "object") return [];
  return Object.values(drivers).flatMap((driver) =>
    typeof driver?.program === "string" && driver.program !== "" ? [driver.program] : []
  );
}

function readConfig(path: string): Uint8Array | null {
  try {
    return Deno.readFileSync(path);
  } catch {
    return null; // an unreadable file is main.ts's to report
  }
}

/** The `drivers.*.program` of the config file, or none (an unreadable file is main.ts's to report). */
export function configuredPrograms(configPath: string): string[] {
  return parseConfigPrograms(readConfig(configPath));
}

interface SuiteGrants {
  files: string[];
  programs: string[];
  hosts: string[];
}

/**
 * What `reins suite run|validate|plan FILE` and `reins suite merge DIR…` name, read with the
 * parser reins itself uses: the suite file, and what lib/suite/needs.ts says it asks for (a file
 * that cannot be used is granted alone: reins reports its problems); merge's folders. Null when
 * the command is not one of these.
 */
async function suiteGrants(
  args: readonly string[],
  startDir: string,
  home: string,
): Promise<SuiteGrants | null> {
  if (!args.includes("suite")) return null;
  const [{ splitCommand }, { parseArgs }, suite] = await Promise.all([
    import("../lib/cli/main.ts"),
    import("../lib/cli/args.ts"),
    import("../lib/cli/suite_flags.ts"),
  ]);
  const { name, rest } = splitCommand(args);
  if (name !== "suite") return null;
  let positionals: string[];
  try {
    positionals = parseArgs(rest, suite.flags, "suite").positionals;
  } catch {
    return null; // reins says what is wrong with the command line
  }
  const [sub, ...operands] = positionals;
  if (sub === "merge") {
    return { files: operands.map((dir) => absolute(dir, startDir)), programs: [], hosts: [] };
  }
  // regrade ID reads the suite file its suite run names: what that file names is granted as for run.
  const named = sub === "regrade" ? regradedSuiteFile(home, operands[0]) : operands[0];
  if (!["run", "validate", "plan", "regrade"].includes(sub) || named === undefined) return null;
  const file = absolute(named, startDir);
  const grants: SuiteGrants = { files: [file], programs: [], hosts: [] };
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(file);
  } catch {
    return grants;
  }
  const [{ parseSuite }, { suiteNeeds }] = await Promise.all([
    import("../lib/suite/load.ts"),
    import("../lib/suite/needs.ts"),
  ]);
  let needs: ReturnType<typeof suiteNeeds>;
  try {
    needs = suiteNeeds(parseSuite(file, bytes));
  } catch {
    return grants; // a suite file that cannot be used: reins lists its problems
  }
  for (const need of needs) {
    if (need.kind === "read") grants.files.push(need.target);
    else if (need.kind === "run") grants.programs.push(need.target);
    else grants.hosts.push(need.target);
  }
  return grants;
}

/**
 * The suite file of the suite run `ref` (an id, a unique prefix, `last`) under `home`, as its
 * suite-run.json names it; undefined when there is no such one (reins then says so).
 */
function regradedSuiteFile(home: string, ref: string | undefined): string | undefined {
  if (ref === undefined) return undefined;
  let ids: string[];
  try {
    ids = [...Deno.readDirSync(`${home}/suites`)].filter((e) => e.isDirectory).map((e) => e.name)
      .sort();
  } catch {
    return undefined;
  }
  const matches = ref === "last"
    ? ids.slice(-1)
    : ids.includes(ref)
    ? [ref]
    : ids.filter((id) => id.startsWith(ref));
  if (matches.length !== 1) return undefined;
  try {
    const header = JSON.parse(Deno.readTextFileSync(`${home}/suites/${matches[0]}/suite-run.json`));
    return typeof header.file === "string" ? header.file : undefined;
  } catch {
    return undefined;
  }
}

/** The sandbox for `reins ARGS` started in `startDir` with `env`. */
export async function invocationSandbox(
  args: readonly string[],
  env: SandboxEnv,
  startDir: string,
): Promise<Invocation> {
  const value = (name: ValueFlag) => flagValues(args, name);
  const base = sandboxFromEnv(env, startDir);
  const homeFlag = value("home").at(-1);
  const home = homeFlag !== undefined
    ? absolute(homeFlag, startDir)
    : env.REINS_HOME
    ? absolute(env.REINS_HOME, startDir)
    : base.home;
  const homeFrom: HomeOrigin = homeFlag !== undefined
    ? "--home"
    : env.REINS_HOME
    ? "REINS_HOME"
    : "HOME";
  const dirs = [startDir, ...value("cwd").map((dir) => absolute(dir, startDir))];
  const suite = await suiteGrants(args, startDir, home);
  const files = [
    ...value("attach"),
    ...value("model").filter((spec) => spec.startsWith("mock:")).map((spec) =>
      spec.slice("mock:".length)
    ),
    // reins serve's token; the plan reins suite run reads.
    ...(["token-file", "plan"] as const).flatMap(value),
  ].map((file) => absolute(file, startDir));
  // reins suite's plan and JUnit files: written beside, then renamed over.
  const outputs = (["junit", "out"] as const).flatMap(value)
    .map((file) => folderOf(absolute(file, startDir)));
  const configPath = env.REINS_CONFIG
    ? absolute(env.REINS_CONFIG, startDir)
    : `${home}/config.json`;
  const configBytes = readConfig(configPath);
  const confines = args.includes("--confine") || args[0] === "doctor" ||
    configConfines(configBytes);
  const programs = [
    ...base.programs,
    ...(confines ? CONFINE_PROGRAMS : []),
    ...parseConfigPrograms(configBytes),
    ...value("exec").flatMap((exec) => programOf(exec) ?? []),
    ...suite?.programs ?? [],
  ];
  const netHosts = [
    ...base.netHosts,
    ...(["base-url", "endpoint"] as const).flatMap(value)
      .flatMap((url) => hostOf(url) ?? []),
    // An address to listen on is granted like a host to reach (`--allow-net` covers both).
    ...value("host").map((host) => host.includes(":") ? `[${host}]` : host),
    ...suite?.hosts ?? [],
  ];
  return {
    sandbox: {
      ...base,
      home,
      cwd: startDir,
      extraPaths: [
        ...dirs.slice(1),
        ...files,
        ...outputs,
        ...suite?.files ?? [],
        ...(env.REINS_CONFIG ? [configPath] : []),
      ],
      programs,
      netHosts,
    },
    home,
    homeFrom,
    dirs,
    config: { path: configPath, bytes: configBytes },
    cacheable: suite === null,
  };
}
