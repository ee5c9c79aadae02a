// The dispatcher: argv → command module (loaded on demand) → exit code, with the one catch that
// turns any error into a line for people (and JSON with --json).
import type { Settings } from "../core/mod.ts";
import { diskFullError, ExitCode, isDiskFull, ReinsError } from "../core/errors.ts";
import { importLazily } from "../core/lazy_import.ts";
import { loadSqlite } from "../core/sqlite.ts";
import { type Env, readEnv, resolveHome, withholdFromAgents } from "../core/env.ts";
import { redact, rememberSecrets, secretsInEnv } from "../core/redact.ts";
import { type FlagSpecs, GLOBAL_FLAGS, parseArgs, valueHint } from "./args.ts";
import { COMMANDS, findCommand } from "./commands.ts";
import type { CommandContext, CommandModule } from "./command.ts";
import { type Output, terminalOutput } from "./output.ts";
import { nearest } from "../core/suggest.ts";
import { VERSION } from "../core/version.ts";
import {
  builtSandboxOrigin,
  launcherCacheRefusal,
  parseSandboxOrigin,
  sandboxRefusal,
  setSandboxOrigin,
} from "../core/sandbox.ts";

/** What reportError needs of a command that failed: its data root, once resolved. */
interface Failing {
  home: string | null;
}

export async function runCli(argv: readonly string[]): Promise<number> {
  const failing: Failing = { home: null };
  const json = argv.includes("--json");
  const quiet = argv.includes("--quiet") || argv.includes("-q");
  let env: Env = {};
  let io: Output = terminalOutput({ json, quiet, noColor: false });
  try {
    env = readEnv();
    // A binary says what its build baked in; a checkout's launcher, what it built the sandbox from.
    setSandboxOrigin(builtSandboxOrigin() ?? parseSandboxOrigin(env.REINS_SANDBOX));
    // Known before anything can print or write them; agents started later never inherit the
    // platform's credentials.
    rememberSecrets(...secretsInEnv(env));
    withholdFromAgents(env);
    io = terminalOutput({ json, quiet, noColor: Boolean(env.NO_COLOR) });
    return await dispatch(argv, env, io, failing);
  } catch (error) {
    return reportError(error, io, failing);
  }
}

/**
 * Splits leading global flags (`reins --home X runs`) from the command and its arguments. The
 * launcher of a checkout splits a command line the same way (scripts/invocation.ts).
 */
export function splitCommand(argv: readonly string[]): { name?: string; rest: string[] } {
  const leading: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("-") || arg === "-") {
      return { name: arg, rest: [...leading, ...argv.slice(i + 1)] };
    }
    leading.push(arg);
    if (arg === "--home") leading.push(argv[++i] ?? "");
  }
  return { rest: leading };
}

async function dispatch(
  argv: readonly string[],
  env: Env,
  io: Output,
  failing: Failing,
): Promise<number> {
  const { name, rest } = splitCommand(argv);
  if (name === undefined) {
    if (rest.includes("--version") || rest.includes("-V")) {
      if (io.jsonMode) io.json({ version: VERSION, deno: Deno.version.deno });
      else io.print(`reins ${VERSION}`);
      return ExitCode.ok;
    }
    if (rest.includes("--help") || rest.includes("-h")) {
      printGeneralHelp(io);
      return ExitCode.ok;
    }
    if (rest.length > 0) parseArgs(rest, {}, "");
    io.note(generalHelp());
    return ExitCode.usage;
  }
  if (name === "help") {
    const topic = rest.find((arg) => !arg.startsWith("-"));
    if (topic === undefined) {
      printGeneralHelp(io);
      return ExitCode.ok;
    }
    const entry = lookup(topic);
    printCommandHelp(io, entry.name, await entry.load());
    return ExitCode.ok;
  }
  // Before a command runs under the launcher's cached flags, whether others could have written
  // them (--version and help, above, touch nothing).
  if (env.REINS_LAUNCHER_CACHE) {
    const refused = launcherCacheRefusal(env.REINS_LAUNCHER_CACHE);
    if (refused !== null) throw refused;
  }
  const entry = lookup(name);
  const module = await entry.load();
  // Every command but `run` may read the index, whose node:sqlite is not loaded at start-up
  // (lib/store/sqlite.ts): loaded here, before the command's synchronous store calls need it.
  if (entry.name !== "run") await loadSqlite();
  const { flags, positionals } = parseArgs(rest, module.flags, entry.name);
  if (flags.help) {
    printCommandHelp(io, entry.name, module);
    return ExitCode.ok;
  }
  // The data root, resolved once for the whole process: the settings are given it, not the flag.
  const dataRoot = resolveHome(env, flags.home);
  failing.home = dataRoot.home;
  const settings = new Map<boolean, Promise<Settings>>();
  const ctx: CommandContext = {
    name: entry.name,
    flags,
    positionals,
    env,
    home: dataRoot.home,
    io,
    settings: ({ skipConfigFile = false } = {}) => {
      let loaded = settings.get(skipConfigFile);
      if (loaded === undefined) {
        loaded = importLazily<typeof import("../core/config.ts")>("core/config.ts").then((
          config,
        ) =>
          config.loadSettings(
            env,
            { json: io.jsonMode, quiet: io.quiet },
            { stdout: io.stdoutIsTerminal },
            { skipConfigFile, dataRoot },
          )
        );
        settings.set(skipConfigFile, loaded);
      }
      return loaded;
    },
  };
  return await module.run(ctx);
}

function lookup(name: string) {
  const entry = findCommand(name);
  if (entry) return entry;
  const guess = nearest(name, COMMANDS.map((c) => c.name));
  throw new ReinsError("usage", `Unknown command '${name}'`, {
    hint: guess ? `did you mean 'reins ${guess}'? (see reins --help)` : "see reins --help",
  });
}

/** The general help: text, or with --json the commands as data. */
function printGeneralHelp(io: Output): void {
  if (!io.jsonMode) return io.print(generalHelp());
  io.json({
    usage: GENERAL_USAGE,
    version: VERSION,
    commands: COMMANDS.map((c) => ({ name: c.name, summary: c.summary })),
    globalFlags: flagsAsData(GLOBAL_FLAGS),
  });
}

/** A command's help: text, or with --json its usage, description and flags as data. */
function printCommandHelp(io: Output, name: string, module: CommandModule): void {
  if (!io.jsonMode) return io.print(commandHelp(name, module));
  io.json(commandHelpData(name, module));
}

/** What `reins help COMMAND --json` prints: the command's usage as data. */
export function commandHelpData(name: string, module: CommandModule) {
  return {
    command: name,
    usage: usageLine(name, module),
    description: module.description,
    flags: [...flagsAsData(module.flags), ...flagsAsData(GLOBAL_FLAGS, true)],
  };
}

/** Each flag as data: its name, short alias, type, value placeholder or choices, description. */
function flagsAsData(specs: FlagSpecs, global = false) {
  return Object.entries(specs).map(([flag, spec]) => ({
    name: `--${flag}`,
    short: spec.short ? `-${spec.short}` : null,
    type: spec.type,
    value: valueHint(spec),
    ...(spec.type === "choice" ? { choices: [...spec.choices] } : {}),
    ...(spec.type === "string" && spec.multiple ? { repeatable: true } : {}),
    description: spec.description ?? null,
    global,
  }));
}

const GENERAL_USAGE = "reins COMMAND [ARGS] [--home DIR] [--json] [--quiet]";

function generalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    `reins ${VERSION} — runs, records, resumes and reports agent sessions`,
    "",
    `Usage: ${GENERAL_USAGE}`,
    "",
    "Commands:",
    ...lines,
    "",
    "More: reins help COMMAND (or reins COMMAND --help). Version: reins --version.",
    "Data root: --home DIR, else $REINS_HOME, else ~/.reins.",
  ].join("\n");
}

export function commandHelp(name: string, module: CommandModule): string {
  const all: FlagSpecs = { ...module.flags, ...GLOBAL_FLAGS };
  const flagLines = Object.entries(all).map(([flag, spec]) => {
    const left = `${spec.short ? `-${spec.short}, ` : "    "}--${flag}${
      valueHint(spec) === null ? "" : ` ${valueHint(spec)}`
    }`;
    return `  ${left.padEnd(28)} ${spec.description ?? ""}`.trimEnd();
  });
  return [
    `Usage: ${usageLine(name, module)}`,
    "",
    wrap(module.description, 96),
    "",
    "Flags:",
    ...flagLines,
  ].join("\n");
}

/** The command's synopsis, starting with `reins NAME` (a module's usage may leave it out). */
function usageLine(name: string, module: CommandModule): string {
  return module.usage.startsWith("reins") ? module.usage : `reins ${name} ${module.usage}`;
}

/** Breaks a paragraph into lines of at most `width` characters, at spaces. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines.join("\n");
}

function reportError(error: unknown, io: Output, failing: Failing): number {
  // `reins show RUN | head`: the reader went away, which is how pipelines end, not an error.
  if (error instanceof Deno.errors.BrokenPipe) return ExitCode.ok;
  let failure: ReinsError;
  if (error instanceof ReinsError) failure = error;
  else if (isDiskFull(error)) failure = diskFullError(error, failing.home);
  else if (error instanceof Deno.errors.NotCapable) failure = sandboxRefusal(error);
  else if (
    error instanceof Deno.errors.NotADirectory || error instanceof Deno.errors.IsADirectory ||
    error instanceof Deno.errors.NotFound
  ) {
    // A path reins was given (or its data root) is not what it must be: not a bug in reins.
    failure = new ReinsError("data_root", (error as Error).message.split("\n")[0], {
      hint: "check the path named above: reins could not use it as it is",
      cause: error,
    });
  } else if (error instanceof Deno.errors.PermissionDenied) {
    failure = new ReinsError("data_root", (error as Error).message, {
      hint: "check the owner and mode of the path; reins runs as the user who owns its data root",
      cause: error,
    });
  } else {
    const message = error instanceof Error ? error.message : String(error);
    failure = new ReinsError("internal", `Unexpected error: ${message.split("\n")[0]}`, {
      hint: "this is a bug in reins: please report it with the command you ran",
      cause: error,
    });
  }
  if (io.jsonMode) {
    io.json({
      error: { code: failure.code, message: failure.message, hint: failure.hint ?? null },
    });
  }
  const lines = [`reins: ${failure.message}`];
  if (failure.hint) lines.push(`hint: ${failure.hint}`);
  try {
    Deno.stderr.writeSync(new TextEncoder().encode(redact(`${lines.join("\n")}\n`)));
  } catch { /* stderr closed */ }
  return failure.exitCode;
}
