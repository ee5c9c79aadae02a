// The deterministic checks, run once a scenario's last turn has ended: a file's content, the agent's
// text, a command's exit code, the tools it used and what it cost. Each returns a CheckResult with
// a detail a person can act on; none throws for what the agent did. Judges are judge.ts's.
import type { Confinement } from "../confine/mod.ts";
import { assertNever } from "../core/assert_never.ts";
import { describeError } from "../core/errors.ts";
import { joinPath } from "../core/paths.ts";
import type { Check } from "./format.ts";
import { compileRegex } from "./regex.ts";
import type { CheckResult } from "./results.ts";
import { assistantTexts, type Evidence, finalText, scenarioCost, toolUses } from "./evidence.ts";
import { runShell } from "./shell.ts";
import type { PatternMatcher } from "./matcher.ts";

/** How a check that matches a pattern runs it: in the matcher's workers, within the time. */
export interface PatternOptions {
  matcher: PatternMatcher;
  /** At most this; the runner passes what the scenario has left. */
  timeoutSeconds: number;
  signal?: AbortSignal;
}

type Deterministic = Exclude<Check, { kind: "judge" }>;

function result(
  check: Check,
  outcome: "passed" | "failed",
  detail: string,
): CheckResult {
  return {
    name: check.name,
    kind: check.kind,
    outcome,
    met: outcome === "passed",
    checkpoint: true,
    detail,
    score: null,
    by: null,
    reason: null,
  };
}

function quote(text: string, limit = 120): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(flat.length > limit ? `${flat.slice(0, limit)}…` : flat);
}

function regexOf(source: string): RegExp {
  const compiled = compileRegex(source);
  // load.ts refused the file already when a pattern does not compile.
  if (!compiled.ok) throw new RangeError(`Unchecked pattern ${source}: ${compiled.reason}`);
  return compiled.regex;
}

async function fileCheck(
  check: Extract<Check, { kind: "file" }>,
  cwd: string,
  patterns: PatternOptions,
) {
  const path = joinPath(cwd, check.file);
  let text: string | null;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.IsADirectory)) {
      return result(check, "failed", `cannot read ${check.file}: ${describeError(error)}`);
    }
    text = null;
  }
  const absent = check.absent === true;
  if (check.contains === undefined && check.regex === undefined) {
    if (text === null) {
      return result(check, absent ? "passed" : "failed", `${check.file} does not exist`);
    }
    return result(check, absent ? "failed" : "passed", `${check.file} exists`);
  }
  const wanted = check.contains !== undefined ? quote(check.contains) : `/${check.regex}/`;
  if (text === null) {
    return result(check, absent ? "passed" : "failed", `${check.file} does not exist`);
  }
  const found = check.contains !== undefined
    ? text.includes(check.contains)
    : await patterns.matcher.firstMatch(regexOf(check.regex!), [text], patterns) === 0;
  const said = found
    ? `${check.file} contains ${wanted}`
    : `${check.file} does not contain ${wanted}`;
  return result(check, found !== absent ? "passed" : "failed", said);
}

async function regexCheck(
  check: Extract<Check, { kind: "regex" }>,
  evidence: Evidence,
  patterns: PatternOptions,
) {
  const regex = regexOf(check.regex);
  const absent = check.absent === true;
  if (check.in === "final") {
    const text = finalText(evidence);
    if (text === null) {
      return result(check, absent ? "passed" : "failed", "the agent gave no answer");
    }
    const found = await patterns.matcher.firstMatch(regex, [text], patterns) === 0;
    const detail = `the final answer ${found ? "matches" : "does not match"} /${check.regex}/: ${
      quote(text)
    }`;
    return result(check, found !== absent ? "passed" : "failed", detail);
  }
  const texts = assistantTexts(evidence);
  const at = await patterns.matcher.firstMatch(regex, texts, patterns);
  const hit = at < 0 ? undefined : texts[at];
  const detail = hit !== undefined
    ? `the agent said ${quote(hit)}, which matches /${check.regex}/`
    : `nothing the agent said (${texts.length} messages) matches /${check.regex}/`;
  return result(check, (hit !== undefined) !== absent ? "passed" : "failed", detail);
}

async function commandCheck(
  check: Extract<Check, { kind: "command" }>,
  cwd: string,
  signal: AbortSignal | undefined,
  confine: Confinement | null,
) {
  const ran = await runShell(check.command, {
    cwd,
    timeoutSeconds: check.timeoutSeconds,
    signal,
    confine,
  });
  const output = ran.output ? `: ${ran.output}` : "";
  if (ran.timedOut) {
    return result(
      check,
      "failed",
      `${check.command} did not finish within ${check.timeoutSeconds} s${output}`,
    );
  }
  if (ran.code === check.exit) return result(check, "passed", `${check.command} ${ran.exit}`);
  return result(check, "failed", `${check.command} ${ran.exit}, not ${check.exit}${output}`);
}

function toolCheck(check: Extract<Check, { kind: "tool" }>, evidence: Evidence) {
  const calls = toolUses(evidence).filter((use) => use.name === check.tool);
  const ran = calls.filter((use) => !use.refused).length;
  const refused = calls.length - ran;
  const refusedNote = refused ? ` (${refused} refused)` : "";
  if (check.absent) {
    return ran === 0 ? result(check, "passed", `${check.tool} never ran${refusedNote}`) : result(
      check,
      "failed",
      `${check.tool} ran ${ran} time${ran === 1 ? "" : "s"}${refusedNote}`,
    );
  }
  if (ran > 0) {
    return result(
      check,
      "passed",
      `${check.tool} ran ${ran} time${ran === 1 ? "" : "s"}${refusedNote}`,
    );
  }
  const others = [...new Set(toolUses(evidence).map((use) => use.name))];
  return result(
    check,
    "failed",
    `${check.tool} was ${refused ? `only refused${refusedNote}` : "never called"}; tools used: ${
      others.length ? others.join(", ") : "none"
    }`,
  );
}

function costCheck(check: Extract<Check, { kind: "cost" }>, evidence: Evidence): CheckResult {
  const cost = scenarioCost(evidence);
  if (cost === null) {
    const without = evidence.turns.filter((turn) => turn.costUsd === null).length;
    const met = check.unknown === "pass";
    return {
      ...result(check, met ? "passed" : "failed", ""),
      outcome: "unknown",
      met,
      detail: `unknown: ${without} of ${evidence.turns.length} turns reported no cost (counted as ${
        met ? "met" : "not met"
      }, as unknown: ${check.unknown} says)`,
    };
  }
  const spent = `$${cost.toFixed(4)}`;
  return cost <= check.maxUsd
    ? result(check, "passed", `spent ${spent}, at most $${check.maxUsd}`)
    : result(check, "failed", `spent ${spent}, more than $${check.maxUsd}`);
}

/**
 * Runs one deterministic check against what the scenario left. A pattern that does not finish
 * matching in time rejects with a PatternTimeout (the scenario could not be judged), a stop with
 * the signal's reason.
 */
export async function runCheck(
  check: Deterministic,
  evidence: Evidence,
  options: PatternOptions & { confine?: Confinement | null },
): Promise<CheckResult> {
  switch (check.kind) {
    case "file":
      return await fileCheck(check, evidence.cwd, options);
    case "regex":
      return await regexCheck(check, evidence, options);
    case "command":
      return await commandCheck(check, evidence.cwd, options.signal, options.confine ?? null);
    case "tool":
      return toolCheck(check, evidence);
    case "cost":
      return costCheck(check, evidence);
    default:
      return assertNever(check, "check");
  }
}
