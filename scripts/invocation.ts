// The sandbox of one `reins …` started from a checkout (the installed launcher, `deno task reins`):
// the binary's sandbox (permissions.ts) built from the command line as given — `--home`, `--cwd`,
// `--attach FILE`, `--model mock:FILE`, `--exec 'PROGRAM …'`, `--base-url URL`, `--endpoint URL`,
// the files of `reins suite`, and `reins serve`'s `--token-file FILE` and `--host ADDRESS` (to
// listen on) — and from the config file's `drivers.*.program`, besides the environment and the
// directory it starts in. A
// flag the person typed is what they mean reins to touch; nothing else widens the sandbox.
import { type Sandbox, sandboxFromEnv } from "./permissions.ts";

/** Where the data root of an invocation came from, for the messages of a refusal. */
export type HomeOrigin = "--home" | "REINS_HOME" | "HOME";

export interface Invocation {
  sandbox: Sandbox;
  home: string;
  homeFrom: HomeOrigin;
  /** The directory reins was started in, and the --cwd directories it was given. */
  dirs: string[];
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

function hostOf(url: string): string | null {
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

/** The first word of an `--exec` command line (quotes allowed), as the program to allow. */
function programOf(exec: string): string | null {
  const match = /^\s*(?:'([^']*)'|"([^"]*)"|(\S+))/.exec(exec);
  return match?.[1] ?? match?.[2] ?? match?.[3] ?? null;
}

/**
 * The files and directories `reins suite run|validate|plan FILE` and `reins suite merge DIR…`
 * name: the words after the subcommand that are not flags or their values.
 */
function suiteOperands(args: readonly string[]): string[] {
  const at = args.indexOf("suite");
  const sub = args[at + 1];
  if (at < 0 || !["run", "validate", "plan", "merge"].includes(sub)) return [];
  const withValue = new Set([
    "--home",
    "--jobs",
    "--filter",
    "--repeat",
    "--rerun",
    "--from",
    "--plan",
    "--shard",
    "--shards",
    "--out",
    "--junit",
  ]);
  const operands: string[] = [];
  for (let i = at + 2; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") break;
    if (withValue.has(arg)) i++;
    else if (!arg.startsWith("-")) operands.push(arg);
  }
  return operands;
}

/** The `drivers.*.program` of the config file, or none (an unreadable file is main.ts's to report). */
export function configuredPrograms(configPath: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Deno.readTextFileSync(configPath));
  } catch {
    return [];
  }
  const drivers = (parsed as { drivers?: Record<string, { program?: unknown }> } | null)?.drivers;
  if (drivers === null || typeof drivers !== "object") return [];
  return Object.values(drivers).flatMap((driver) =>
    typeof driver?.program === "string" && driver.program !== "" ? [driver.program] : []
  );
}

/** The sandbox for `reins ARGS` started in `startDir` with `env`. */
export function invocationSandbox(
  args: readonly string[],
  env: Record<string, string | undefined>,
  startDir: string,
): Invocation {
  const base = sandboxFromEnv(env, startDir);
  const homeFlag = flagValues(args, "home").at(-1);
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
  const dirs = [startDir, ...flagValues(args, "cwd").map((dir) => absolute(dir, startDir))];
  const files = [
    ...flagValues(args, "attach"),
    ...flagValues(args, "model").filter((spec) => spec.startsWith("mock:")).map((spec) =>
      spec.slice("mock:".length)
    ),
    // reins serve's token, reins suite's plan, JUnit and plan output files.
    ...["token-file", "plan", "junit", "out"].flatMap((name) => flagValues(args, name)),
    ...suiteOperands(args),
  ].map((file) => absolute(file, startDir));
  const configPath = env.REINS_CONFIG
    ? absolute(env.REINS_CONFIG, startDir)
    : `${home}/config.json`;
  const programs = [
    ...base.programs,
    ...configuredPrograms(configPath),
    ...flagValues(args, "exec").flatMap((exec) => programOf(exec) ?? []),
  ];
  const netHosts = [
    ...base.netHosts,
    ...["base-url", "endpoint"].flatMap((name) => flagValues(args, name))
      .flatMap((url) => hostOf(url) ?? []),
    // An address to listen on is granted like a host to reach (`--allow-net` covers both).
    ...flagValues(args, "host").map((host) => host.includes(":") ? `[${host}]` : host),
  ];
  return {
    sandbox: {
      ...base,
      home,
      cwd: startDir,
      extraPaths: [...dirs.slice(1), ...files, ...(env.REINS_CONFIG ? [configPath] : [])],
      programs,
      netHosts,
    },
    home,
    homeFrom,
    dirs,
  };
}
