// What the four harness drivers (claude, codex, gemini, opencode) share: the turn's frame — the
// user's message, the child started through process.ts, each stdout line parsed as JSON and
// handed to the driver's mapping, the outcome when reins had to stop the CLI — and the running
// usage totals. Each driver still reads its own CLI's lines and exit codes.
import { type HarnessDriver, harnessProgram } from "../core/config.ts";
import type { AgentFacts, EventInput, Usage } from "../store/mod.ts";
import {
  type BudgetSupport,
  budgetUse,
  BudgetWatch,
  checkFinalUse,
  describeUse,
  type Exhaustion,
  limitsSet,
} from "./budget_watch.ts";
import { BUDGET_EXHAUSTED } from "../core/budget.ts";
import { agentOf, type DriverInput, type DriverResult, type EventSink } from "./driver.ts";
import {
  describeExit,
  type HarnessExit,
  HarnessProcess,
  type HarnessSpawn,
  HarnessStartError,
  stderrSummary,
} from "./process.ts";
import type { Validator } from "./wire_checks.gen.ts";

/** Seconds of silence before a CLI counts as hung, unless the config or --idle-timeout says. */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 600;

/** A JSON object line from a CLI. */
export type Line = Record<string, unknown>;

/** One turn of one CLI, as a driver maps it. */
export interface TurnMapping {
  /** Called once the child runs, before its first line (claude writes the prompt here). */
  begin?(child: HarnessProcess): Promise<void>;
  /** One JSON line (kept as its events' `native`). May wait (for an approval). */
  line(value: Line, child: HarnessProcess): void | Promise<void>;
  /** The outcome once the CLI exited on its own (reins did not stop it). */
  settle(exit: HarnessExit): DriverResult;
  /** The final answer so far (kept when the turn is stopped). */
  answer(): string | null;
  /** Handed the turn's budget watch, for usage the mapping sees live but records only at the end. */
  watchBudget?(watch: BudgetWatch): void;
}

export interface HarnessCall {
  driver: HarnessDriver;
  /** The CLI's name for people: "Claude Code". */
  cli: string;
  args: string[];
  stdin: "null" | "piped";
  /** Extra variables for this CLI, under the caller's `input.env`. */
  env?: Record<string, string>;
  /**
   * The variables that point the CLI at the model gateway (input.gateway): over the caller's
   * `input.env`, which may name the upstream itself (the gateway passes calls on there).
   */
  gatewayEnv?: Record<string, string>;
  /** For a CLI that cannot ask reins before a tool runs: what --approve ask does instead. */
  askFallback?: string;
  /**
   * What the CLI lets reins do with --max-turns/--max-tokens/--max-usd (budget_watch.ts), and
   * whether its usage.updated events come as it runs ("live") or with its last line ("final").
   */
  budget: BudgetSupport & { usageEvents: "live" | "final" };
}

/**
 * The program, its extra arguments (the config's, then this run's), the model (this run's, else
 * the config's) and the idle timeout of a harness driver.
 */
export function driverSettings(
  input: Pick<DriverInput, "settings" | "agent">,
  driver: HarnessDriver,
) {
  const configured = input.settings.drivers[driver];
  const agent = agentOf(input, "harness", driver);
  return {
    program: harnessProgram(input.settings, driver),
    extraArgs: [...configured.args, ...(agent.args ?? [])],
    model: agent.model ?? configured.model ?? null,
    idleTimeoutSeconds: agent.idleTimeoutSeconds ??
      configured.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
  };
}

/**
 * A harness driver's facts of its agent before it starts (run.started's `agent`): the provider and
 * the input-token accounting the driver knows its CLI by, and the model it is told to use (this
 * run's, else the settings').
 */
export function harnessFacts(
  input: Pick<DriverInput, "settings" | "agent">,
  driver: HarnessDriver,
  known: { provider: string; inputExcludesCache: boolean },
): AgentFacts {
  const { model } = driverSettings(input, driver);
  const perRun = perRunOf(input);
  return {
    provider: known.provider,
    ...(model ? { model } : {}),
    inputExcludesCache: known.inputExcludesCache,
    inProcess: false,
    ...(perRun ? { perRun } : {}),
  };
}

/** The run's own model and arguments (AgentFacts' `perRun`), or null when it has neither. */
export function perRunOf(input: Pick<DriverInput, "agent">): AgentFacts["perRun"] | null {
  if (input.agent.kind !== "harness") return null;
  const { model, args } = input.agent;
  if (!model && !(args && args.length > 0)) return null;
  return { ...(model ? { model } : {}), ...(args && args.length > 0 ? { args: [...args] } : {}) };
}

/**
 * Runs one turn of a harness CLI: starts it, feeds its lines to the mapping `makeMapping` builds
 * (on the sink it must emit to), watches the budget, settles the run. The CLI is started first:
 * what need not precede it (the user's message recorded, the mapping built — a driver may load
 * its mapping's module then) is done while the CLI starts up, rather than added before it.
 */
export async function driveHarness(
  call: HarnessCall,
  makeMapping: (sink: EventSink) => TurnMapping | Promise<TurnMapping>,
  context: { input: DriverInput; sink: EventSink; signal: AbortSignal },
): Promise<DriverResult> {
  const { input, signal } = context;
  const settings = driverSettings(input, call.driver);
  // The budget's live limits stop the CLI once crossed: its usage events feed the watch when they
  // come as it runs, and the last one is checked against every limit when the turn has ended.
  let child: HarnessProcess | null = null;
  let lastUsage: Usage | null = null;
  // Through the model gateway, the turn's budget is held there, call by call (lib/gateway/).
  const gated = input.gateway ? {} : input.budget;
  const watch = new BudgetWatch(gated, call.budget, {
    sink: context.sink,
    stop: () => child?.stop("signal"),
  });
  const sink: EventSink = {
    emit(event: EventInput) {
      context.sink.emit(event);
      if (event.type !== "usage.updated") return;
      lastUsage = event.payload;
      if (call.budget.usageEvents === "live") watch.observe(budgetUse(event.payload));
    },
  };
  const userMessage: EventInput = {
    type: "message.completed",
    payload: { role: "user", text: input.prompt },
  };
  const spawn: HarnessSpawn = {
    cli: call.cli,
    program: settings.program,
    args: call.args,
    cwd: input.cwd,
    // PWD too: some CLIs (opencode) take their directory from it, not from getcwd().
    env: { ...call.env, ...input.env, ...call.gatewayEnv, PWD: input.cwd },
    stdin: call.stdin,
    idleTimeoutSeconds: settings.idleTimeoutSeconds,
    signal,
    kill: input.kill,
    onStarted: input.onProcess,
    confine: input.confine,
  };
  try {
    child = HarnessProcess.start(spawn);
  } catch (error) {
    if (!(error instanceof HarnessStartError)) throw error;
    sink.emit(userMessage);
    return {
      status: "failed",
      reason: `${error.message}: set drivers.${call.driver}.program in the config file or ` +
        `REINS_${call.driver.toUpperCase()}_BIN`,
      result: null,
      exitCode: null,
    };
  }
  // ── The CLI is starting up: what follows overlaps with it.
  let mapping: TurnMapping;
  try {
    sink.emit(userMessage);
    if (input.approval === "ask" && call.askFallback) {
      sink.emit({
        type: "problem",
        payload: {
          source: call.driver,
          reason:
            `${call.cli} cannot ask reins before a tool runs: --approve ask ${call.askFallback}`,
        },
      });
    }
    mapping = await makeMapping(sink);
  } catch (error) {
    // A turn that cannot be recorded (its log is unwritable) or read (no mapping) must not go on
    // acting: the CLI is killed, its pipes drained, and the error goes on.
    child.stop("kill");
    for await (const _ of child.lines()) { /* drained */ }
    await child.finished();
    throw error;
  }
  mapping.watchBudget?.(watch);
  const outcome = await driveChild(child, call, mapping, sink, settings.idleTimeoutSeconds);
  if (watch.exhausted !== null) {
    return {
      status: "failed",
      reason: BudgetWatch.reason(watch.exhausted),
      code: BUDGET_EXHAUSTED,
      result: mapping.answer(),
      exitCode: outcome.exitCode,
    };
  }
  // What the CLI does not enforce itself, checked against the usage it ended with (a live count
  // may fall short of the final one: Claude Code streams its output tokens late).
  const unwatched = limitsSet(gated).filter((limit) => !call.budget.native.includes(limit));
  const over: Exhaustion | null = lastUsage === null
    ? null
    : checkFinalUse(gated, unwatched, budgetUse(lastUsage), sink);
  if (over !== null && outcome.status === "completed") {
    return { ...outcome, reason: `went over its budget: ${describeUse(over)}` };
  }
  return outcome;
}

/** Feeds the child's lines to the mapping until it exits; the outcome, before the budget's say. */
async function driveChild(
  child: HarnessProcess,
  call: HarnessCall,
  mapping: TurnMapping,
  sink: EventSink,
  idleTimeoutSeconds: number,
): Promise<DriverResult> {
  // A sink that throws (the run's log is unwritable) stops the CLI: a turn nobody records must
  // not go on acting. The lines are still drained so the child is never blocked on a full pipe.
  let mappingError: unknown = null;
  const guard = async (work: () => void | Promise<void>) => {
    if (mappingError !== null) return;
    try {
      await work();
    } catch (error) {
      mappingError = error;
      child.stop("kill");
    }
  };
  if (mapping.begin) await guard(() => mapping.begin!(child));
  for await (const raw of child.lines()) {
    await guard(() => {
      const value = parseLine(raw);
      if (value === null) {
        sink.emit({
          type: "problem",
          payload: {
            source: call.driver,
            reason: `${call.cli} wrote a line that is not a JSON object`,
            text: raw.slice(0, 4096),
          },
        });
        return;
      }
      return mapping.line(value, child);
    });
  }
  const exit = await child.finished();
  if (mappingError !== null) throw mappingError;
  return stoppedOutcome(exit, {
    cli: call.cli,
    idleTimeoutSeconds,
    answer: mapping.answer(),
  }) ?? mapping.settle(exit);
}

function parseLine(raw: string): Line | null {
  try {
    const value = JSON.parse(raw);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** The outcome of a turn reins stopped: hung → failed; stopped by a signal → interrupted. */
function stoppedOutcome(
  exit: HarnessExit,
  context: { cli: string; idleTimeoutSeconds: number; answer: string | null },
): DriverResult | null {
  const { cli, answer } = context;
  const lastSaid = exit.lastSaid === null
    ? "it had said nothing"
    : `the last thing it said: ${exit.lastSaid}`;
  switch (exit.stoppedBy) {
    case null:
      return null;
    case "idle":
      return {
        status: "failed",
        reason: `${cli} said nothing for ${context.idleTimeoutSeconds} s and was stopped (it ${
          describeExit(exit)
        }); ${lastSaid}`,
        result: answer,
        exitCode: exit.code,
      };
    case "signal":
    case "kill":
      return {
        status: "interrupted",
        reason: `${cli} was stopped (it ${describeExit(exit)}); ${lastSaid}`,
        result: answer,
        exitCode: exit.code,
      };
  }
}

export interface ExitFailure {
  /** What went wrong, as the CLI's lines or exit code tell it; null: let stderr tell. */
  what: string | null;
  /** Add the last lines of stderr after `what` (they are always given when `what` is null). */
  withStderr?: boolean;
  answer: string | null;
}

/** A failed outcome that says how the CLI exited, why, and (or) the tail of its stderr. */
export function exitFailure(cli: string, exit: HarnessExit, failure: ExitFailure): DriverResult {
  const tail = stderrSummary(exit.stderr) || exit.lastSaid;
  const said = failure.what === null
    ? tail
    : failure.withStderr && tail
    ? `${failure.what}; it said: ${tail}`
    : failure.what;
  return {
    status: "failed",
    reason: `${cli} ${describeExit(exit)}${said ? `: ${said}` : ""}`,
    result: failure.answer,
    exitCode: exit.code,
  };
}

/** Running usage totals for the run, emitted as `usage.updated` whenever they change. */
export class UsageTotals {
  #usage: Usage = {
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    costUsd: null,
    requests: null,
  };

  /** Adds one call's (or step's) counters; a counter not given stays as it was. */
  add(counters: Partial<Record<Exclude<keyof Usage, "costEstimated">, number>>): void {
    for (const [key, value] of Object.entries(counters)) {
      if (typeof value !== "number") continue;
      const name = key as Exclude<keyof Usage, "costEstimated">;
      const sum = ((this.#usage[name] as number | null) ?? 0) + value;
      (this.#usage as Record<string, unknown>)[name] = name === "costUsd"
        ? Math.round(sum * 1e8) / 1e8
        : sum;
    }
  }

  /** Replaces the totals with what the CLI reports as its own totals for the run. */
  set(usage: Partial<Usage>): void {
    this.#usage = { ...this.#usage, ...usage };
  }

  get current(): Usage {
    return { ...this.#usage };
  }

  emit(sink: EventSink, native?: unknown): void {
    sink.emit({ type: "usage.updated", payload: this.current, native });
  }
}

/**
 * Checks a line against the wire schema of its type (the validators generated from the
 * driver's `*_wire.ts`; the one under "*" for types without their own): true when the mapping
 * may read it. A line that fails is kept as a `problem` naming the field, and none of it is used.
 */
export function readableLine(
  sink: EventSink,
  driver: HarnessDriver,
  cli: string,
  validators: Record<string, Validator>,
  value: Line,
): boolean {
  const type = typeof value.type === "string" ? value.type : "";
  const validate = Object.hasOwn(validators, type) ? validators[type] : validators["*"];
  const issue = validate?.(value) ?? null;
  if (issue === null) return true;
  const what = type === "" ? "an untyped" : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
  sink.emit({
    type: "problem",
    payload: {
      source: driver,
      reason: `${cli} wrote ${what} line reins cannot read (${issue.message}${
        issue.path ? ` at ${issue.path}` : ""
      }); it was skipped`,
    },
    native: value,
  });
  return false;
}

/** Records an error the CLI reported that is not (yet) the turn's outcome, as a `problem`. */
export function reportCliError(
  sink: EventSink,
  driver: string,
  cli: string,
  message: string | undefined,
  native: unknown,
): void {
  sink.emit({
    type: "problem",
    payload: { source: driver, reason: `${cli} reports: ${message || "an error"}` },
    native,
  });
}

/** A number field of a line (finite, not negative), or undefined. */
export function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** A string field of a line, or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** An object field of a line, or an empty object. */
export function obj(value: unknown): Line {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value as Line : {};
}

/** Tool output as the `result` of tool.completed: text as is, anything else as given. */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    return value.map((part) => typeof part === "string" ? part : str(obj(part).text) ?? "")
      .join("");
  }
  return value === undefined || value === null ? "" : JSON.stringify(value);
}
