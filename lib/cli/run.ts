// `reins run`: one turn of an agent, recorded, through the turn engine (lib/turn): this command
// reads the flags into a TurnRequest, turns SIGINT/SIGTERM into the engine's stop and kill
// signals, and prints the answer, the JSON summary or the event stream.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { DRIVER_NAMES, type DriverName, HARNESS_DRIVERS } from "../core/config.ts";
import { ExitCode, NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { safeName } from "../core/ids.ts";
import { resolvePath } from "../core/paths.ts";
import type { RunEvent } from "../store/mod.ts";
import { openStore } from "../store/store.ts";
import { loadSqlite } from "../core/sqlite.ts";
import { type AgentSpec, COMMAND_STDIN, type CommandStdin } from "../drivers/driver.ts";
import { runTurn } from "../turn/run_turn.ts";
import { type Progress, startProgress } from "./progress.ts";
import { WaitingAnnouncer } from "./waiting.ts";
import { turnSignals } from "./signals.ts";
import { CONFINE_FLAGS, confineOfFlags } from "./confine_flags.ts";

export const usage = "reins run [PROMPT | -] [--driver NAME] [--context ID] [flags]";
export const description =
  "Runs one turn of an agent and records it. The prompt comes from the argument, or from stdin " +
  "with '-'. With --context, turns on the same context continue the same harness session. " +
  "Prints the final answer (--json: a summary; --events: every event as a JSON line as it " +
  "happens). Exit 0 when the run completed, 1 when it failed or was interrupted.";

/**
 * The flags that describe the agent, shared by reins run and reins serve (and read by agentFlags):
 * the driver, then what the program is, then how long it may stay silent.
 */
export const AGENT_FLAGS = defineFlags({
  driver: {
    type: "choice",
    choices: DRIVER_NAMES,
    value: "NAME",
    description: `loop (default), ${DRIVER_NAMES.slice(1).join(", ")}`,
  },
  model: {
    type: "string",
    value: "SPEC",
    description: "loop: mock:FILE, replay:RUN, openai:MODEL (default: the demo model); " +
      "claude, codex, gemini: the CLI's model; opencode: PROVIDER/MODEL",
  },
  arg: {
    type: "string",
    multiple: true,
    value: "X",
    description: "claude, codex, gemini, opencode: one more raw argument for the CLI " +
      "(repeatable; --arg=--flag for one that starts with --)",
  },
  "base-url": {
    type: "string",
    value: "URL",
    description: "OpenAI-compatible endpoint for openai:MODEL",
  },
  exec: {
    type: "string",
    value: "'PROGRAM ARGS'",
    description: "the program for --driver command",
  },
  "exec-stdin": {
    type: "choice",
    choices: COMMAND_STDIN,
    description: "--exec's stdin: the prompt (default), or events (then the answers it waits for)",
  },
  "idle-timeout": {
    type: "number",
    value: "SECONDS",
    description: "fail a harness that says nothing this long",
  },
});

export const flags = defineFlags({
  driver: AGENT_FLAGS.driver,
  context: { type: "string", value: "ID", description: "thread turns into one conversation" },
  model: AGENT_FLAGS.model,
  arg: AGENT_FLAGS.arg,
  "base-url": AGENT_FLAGS["base-url"],
  exec: AGENT_FLAGS.exec,
  "exec-stdin": AGENT_FLAGS["exec-stdin"],
  cwd: {
    type: "string",
    value: "DIR",
    description: "working directory (default: the current one)",
  },
  parent: { type: "string", value: "RUN", description: "record this run as a child of RUN" },
  timeout: {
    type: "number",
    positive: true,
    value: "SECONDS",
    description: "fail the run after this long",
  },
  approve: {
    type: "choice",
    choices: ["auto", "ask", "deny"],
    description: "tool use: run it, wait for reins approve, or refuse",
  },
  "max-turns": { type: "integer", value: "N", description: "budget: model calls" },
  "max-tokens": { type: "integer", value: "N", description: "budget: input + output tokens" },
  "max-usd": { type: "number", value: "X", description: "budget: dollars" },
  "context-max-turns": {
    type: "integer",
    value: "N",
    description: "with --context: model calls over all its turns, this one included",
  },
  "context-max-tokens": {
    type: "integer",
    value: "N",
    description: "with --context: input + output tokens over all its turns",
  },
  "context-max-usd": {
    type: "number",
    value: "X",
    description: "with --context: dollars over all its turns",
  },
  "no-gateway": {
    type: "boolean",
    description: "let a harness call its model directly, not through reins's model gateway",
  },
  ...CONFINE_FLAGS,
  "idle-timeout": AGENT_FLAGS["idle-timeout"],
  attach: {
    type: "string",
    multiple: true,
    value: "FILE",
    description: "copy FILE into the run as an attachment",
  },
  events: { type: "boolean", description: "stream events as JSON lines on stdout" },
  "no-wait": {
    type: "boolean",
    description: "with --context: exit 7 at once if another turn is running on it",
  },
});
type Flags = typeof flags;

async function readPrompt(ctx: CommandContext<Flags>): Promise<string> {
  if (ctx.positionals.length > 1) {
    throw new UsageError(`reins run takes one prompt: got ${ctx.positionals.length} arguments`, {
      hint: "quote the prompt: reins run 'list the files and summarise them'",
    });
  }
  const given = ctx.positionals[0];
  if (given === undefined) {
    throw new UsageError("reins run needs a prompt", {
      hint: "reins run 'PROMPT', or pipe it in with reins run -",
    });
  }
  if (given !== "-") return given;
  const text = await new Response(Deno.stdin.readable).text();
  if (text.trim() === "") throw new UsageError("The prompt on stdin is empty");
  return text.replace(/\n$/, "");
}

export function checkCwd(path: string): string {
  const absolute = resolvePath(path);
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(absolute);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`The working directory ${absolute} does not exist`, {
        hint: "create it, or give another with --cwd",
      });
    }
    throw error;
  }
  if (!info.isDirectory) throw new UsageError(`--cwd ${absolute} is not a directory`);
  return absolute;
}

/** The flags that describe an agent (reins run's, and reins serve's). */
export interface AgentFlagValues {
  readonly "idle-timeout": number | undefined;
  readonly exec: string | undefined;
  readonly model: string | undefined;
  readonly "base-url": string | undefined;
  /** Raw arguments for a harness CLI (a front end without the flag passes none). */
  readonly arg?: readonly string[];
  /** reins run's; a front end without it runs command agents with the prompt on stdin. */
  readonly "exec-stdin"?: CommandStdin | undefined;
}

/** The agent the flags describe; a flag that belongs to another driver is refused. */
export function agentFlags(f: AgentFlagValues, driverName: DriverName): AgentSpec {
  const idleTimeoutSeconds = f["idle-timeout"] ?? null;
  const exec = f.exec ?? null;
  if (exec !== null && driverName !== "command") {
    throw new UsageError("--exec goes with --driver command", { hint: "add --driver command" });
  }
  if (f["exec-stdin"] !== undefined && driverName !== "command") {
    throw new UsageError("--exec-stdin goes with --driver command", {
      hint: "add --driver command --exec 'PROGRAM ARGS'",
    });
  }
  const model = f.model ?? null;
  if (model !== null && model.trim() === "") {
    // An empty --model (a shell's unset "$MODEL") would reach the harness as `--model ''`.
    throw new UsageError(`--model takes a model name, not ${JSON.stringify(model)}`, {
      hint: "leave --model out for the driver's default model",
    });
  }
  if (model !== null && driverName === "command") {
    throw new UsageError("--model does not go with --driver command", {
      hint: "name the model in the program's own arguments: --exec 'PROGRAM --model M'",
    });
  }
  const args = f.arg ?? [];
  if (args.length > 0 && (driverName === "loop" || driverName === "command")) {
    throw new UsageError(`--arg goes with a harness driver (claude, codex, gemini, opencode)`, {
      hint: driverName === "command"
        ? "put the program's arguments in --exec 'PROGRAM ARGS'"
        : "the built-in loop takes no arguments; --model picks its model",
    });
  }
  if (driverName === "loop") {
    return { kind: "loop", model, baseUrl: f["base-url"] ?? null };
  }
  if (driverName === "command") {
    if (exec === null) throw new UsageError("--driver command needs --exec 'PROGRAM ARGS'");
    return { kind: "command", exec, idleTimeoutSeconds, stdin: f["exec-stdin"] ?? "prompt" };
  }
  const driver = HARNESS_DRIVERS.find((name) => name === driverName)!;
  if (driver === "opencode" && model !== null && !/^[^/\s]+\/\S+$/.test(model)) {
    throw new UsageError(
      `--model for opencode takes PROVIDER/MODEL: got ${JSON.stringify(model)}`,
      { hint: "name the provider of its config: --model openai/gpt-5-mini" },
    );
  }
  return {
    kind: "harness",
    driver,
    idleTimeoutSeconds,
    ...(model !== null ? { model } : {}),
    ...(args.length > 0 ? { args: [...args] } : {}),
  };
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const { flags: f, io } = ctx;
  const driverName = f.driver ?? "loop";
  const contextId = f.context === undefined ? null : safeName(f.context, "context id");
  const approval = f.approve ?? "auto";
  const timeoutSeconds = f.timeout ?? null;
  const budget = { maxTurns: f["max-turns"], maxTokens: f["max-tokens"], maxUsd: f["max-usd"] };
  const contextBudget = {
    maxTurns: f["context-max-turns"],
    maxTokens: f["context-max-tokens"],
    maxUsd: f["context-max-usd"],
  };
  const contextLimited = Object.values(contextBudget).some((value) => value !== undefined);
  if (contextLimited && contextId === null) {
    throw new UsageError(
      "--context-max-turns, --context-max-tokens and --context-max-usd go with --context",
      {
        hint: "name the context whose turns they add up: --context ID",
      },
    );
  }
  if (f["no-wait"] && contextId === null) {
    throw new UsageError("--no-wait goes with --context", {
      hint: "a turn without --context never waits for another",
    });
  }
  const agent = agentFlags(ctx.flags, driverName);
  const cwd = checkCwd(f.cwd ?? Deno.cwd());
  const prompt = await readPrompt(ctx);
  const settings = await ctx.settings();
  // An allowed host with no confinement would let nothing through that is not open already: the
  // turn would run unconfined, when what was asked for was a confined one with a way out.
  if (f["allow-host"]?.length && !f.confine && !settings.confine.enabled) {
    throw new UsageError("--allow-host goes with --confine", {
      hint: "add --confine (or the config's confine.enabled): without it the agent is not " +
        "confined, and reaches every host",
    });
  }
  using store = openStore(ctx.home, { warn: (message) => io.warn(message) });
  // A run ref is looked up in the index, which `reins run` loads only when it needs it.
  if (f.parent !== undefined) await loadSqlite();
  const parentRunId = f.parent === undefined ? null : store.resolveRun(f.parent).id;
  const attachments = f.attach.map((file) => {
    const path = resolvePath(file);
    // Checked before the run exists, so a typo does not leave a failed run behind.
    let isFile = false;
    try {
      isFile = Deno.statSync(path).isFile;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      throw new NotFoundError(`Cannot attach ${JSON.stringify(file)}: no such file`, {
        hint: "give the path of an existing file to --attach",
      });
    }
    if (!isFile) throw new UsageError(`Cannot attach ${JSON.stringify(file)}: it is not a file`);
    return path;
  });

  let progress: Progress | null = null;
  let waiting: WaitingAnnouncer | null = null;
  const printEvent = f.events ? (event: RunEvent) => io.json(event) : null;
  using signals = turnSignals((message) => io.warn(message));
  const { summary, problems, error } = await runTurn(
    store,
    settings,
    {
      agent,
      prompt,
      cwd,
      contextId,
      approval,
      budget,
      timeoutSeconds,
      parentRunId,
      trigger: "cli",
      attachments,
      contextBusy: f["no-wait"] ? "fail" : "wait",
      ...(contextLimited ? { contextBudget } : {}),
      ...(f["no-gateway"] ? { gateway: false, noGatewayReason: "--no-gateway" } : {}),
      ...confineOfFlags(f),
    },
    signals,
    {
      warn: (message) => io.warn(message),
      onEvent: (event) => {
        printEvent?.(event);
        progress?.update(event);
        // Without the progress line (piped, --json, --events), one line on stderr says what the
        // run waits for and the command that answers it.
        for (const asked of waiting?.update(event) ?? []) io.note(`reins: ${waiting!.line(asked)}`);
        // What the model gateway saw go wrong (a 5xx, a 429) is said at once, not at the end.
        if (
          waiting !== null && event.type === "problem" && event.payload.source === "gateway"
        ) io.note(`reins: ${event.payload.reason}`);
      },
      onContextBusy: (holder) => {
        io.note(
          `reins: waiting for run ${
            holder ?? "(being started)"
          } to finish: it holds context '${contextId}' (--no-wait exits at once instead)`,
        );
      },
      onCreated: async (runId) => {
        signals.runStarted(runId);
        const shortId = () => store.uniqueRunPrefix(runId);
        if (io.stderrIsTerminal && !io.quiet && !io.jsonMode && !f.events) {
          await loadSqlite(); // the progress line shows the run's shortest unique prefix
          progress = await startProgress(shortId);
        } else {
          waiting = new WaitingAnnouncer(shortId);
        }
      },
    },
  );
  (progress as Progress | null)?.stop();

  if (error instanceof ReinsError && error.exitCode !== ExitCode.runFailed) throw error;
  if (problems > 0) {
    io.warn(
      `${problems} problem${
        problems === 1 ? " was" : "s were"
      } kept with the run (a refused protocol line, an error the harness reported): reins show ${summary.runId}`,
    );
  }
  if (io.jsonMode && !f.events) io.json(summary);
  else if (!f.events && summary.result !== null && summary.result !== "") io.print(summary.result);
  if (summary.status !== "completed") {
    io.warn(`run ${summary.runId} ${summary.status}${summary.reason ? `: ${summary.reason}` : ""}`);
    return ExitCode.runFailed;
  }
  return ExitCode.ok;
}
