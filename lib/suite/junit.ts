// JUnit XML of a suite run, the report format CI systems render: one testsuite (a matrix: one per
// agent), one testcase per scenario; a failed scenario carries a <failure> with its failing checks' details, one that could
// not run an <error> with the reason, a skipped one <skipped>. Text that XML 1.0 cannot hold
// (most control characters) is replaced, so the file always parses.
import { dirnameOf, isInside, resolvePath } from "../core/paths.ts";
import { UsageError } from "../core/errors.ts";
import { redact } from "../core/redact.ts";
import type { ScenarioState } from "./state.ts";
import { tally } from "./results.ts";
import { byAgent, totalsOf } from "./table.ts";

// XML 1.0 allows tab, LF, CR and everything from U+0020 but the surrogates and U+FFFE/U+FFFF.
// deno-lint-ignore no-control-regex
const NOT_XML = /[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

export function xmlEscape(text: string): string {
  return text.replace(NOT_XML, "\ufffd").replace(/&/g, "&amp;").replace(/</g, "&lt;")
    .replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

function attributes(values: Record<string, string | number>): string {
  return Object.entries(values).map(([key, value]) => ` ${key}="${xmlEscape(String(value))}"`)
    .join("");
}

function seconds(ms: number | null): string {
  return ((ms ?? 0) / 1000).toFixed(3);
}

function testcase(classname: string, state: ScenarioState): string[] {
  const open = `    <testcase${
    attributes({ name: state.instance.id, classname, time: seconds(state.durationMs) })
  }>`;
  const body: string[] = [];
  const { met, of, firstFailing } = tally(state.checks);
  switch (state.status) {
    case "passed":
      break;
    case "failed": {
      const failing = state.checks.filter((c) =>
        c.checkpoint && !c.met && c.outcome !== "grading_error"
      );
      const detail = failing.map((c) => `${c.name} (${c.kind}): ${c.detail}`).join("\n");
      body.push(
        `      <failure${
          attributes({
            message: firstFailing
              ? `${firstFailing.name}: ${firstFailing.detail}`
              : "a check failed",
            type: firstFailing?.kind ?? "check",
          })
        }>${xmlEscape(`${met}/${of} checks met\n${detail}`)}</failure>`,
      );
      break;
    }
    case "error":
      body.push(
        `      <error${attributes({ message: state.reason ?? "could not run", type: "error" })}>${
          xmlEscape(
            state.attempts.map((a) =>
              `attempt ${a.attempt}: ${a.reason ?? a.status ?? "cut short"}`
            ).join("\n"),
          )
        }</error>`,
      );
      break;
    case "skipped":
      body.push(`      <skipped${attributes({ message: state.reason ?? "skipped" })}/>`);
      break;
    case "pending":
    case "running":
      body.push(`      <skipped${attributes({ message: "not finished" })}/>`);
      break;
  }
  const out = [
    `scenario: ${state.name}`,
    `runs: ${state.runIds.join(" ") || "none"}`,
    ...state.checks.map((c) =>
      `${c.outcome.padEnd(13)} ${c.name}: ${c.detail}${
        c.score === null ? "" : ` (score ${c.score})`
      }`
    ),
  ].join("\n");
  body.push(`      <system-out>${xmlEscape(out)}</system-out>`);
  return [open, ...body, "    </testcase>"];
}

function countsOf(states: readonly ScenarioState[], elapsedMs: number | null | undefined) {
  const totals = totalsOf(states);
  return {
    tests: totals.scenarios,
    failures: totals.failed,
    errors: totals.error,
    skipped: totals.skipped + totals.unfinished,
    time: seconds(elapsedMs ?? states.reduce((sum, state) => sum + (state.durationMs ?? 0), 0)),
  };
}

/** A matrix agent's name for people and the platform: `AGENT · SUITE` (the seed's agent first). */
export function agentSuiteName(suite: string, agent: string): string {
  return `${agent} · ${suite}`.slice(0, 255);
}

/**
 * The JUnit XML of a suite run: one testsuite; a matrix, one testsuite per agent (named
 * `AGENT · SUITE`, its testcases' classname `SUITE.AGENT`), in the suite run's order.
 */
export function junitXml(
  suite: string,
  states: readonly ScenarioState[],
  options: { timestamp?: string; elapsedMs?: number | null } = {},
): string {
  const stamp: Record<string, string> = options.timestamp ? { timestamp: options.timestamp } : {};
  const groups = byAgent(states);
  const suites = groups === null
    ? [{ name: suite, classname: suite, states: [...states], elapsedMs: options.elapsedMs }]
    : groups.map(({ agent, states }) => ({
      name: agentSuiteName(suite, agent),
      classname: `${suite}.${agent}`,
      states,
      elapsedMs: undefined,
    }));
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attributes({ name: suite, ...countsOf(states, options.elapsedMs) })}>`,
    ...suites.flatMap((one) => [
      `  <testsuite${
        attributes({ name: one.name, ...countsOf(one.states, one.elapsedMs), ...stamp })
      }>`,
      ...one.states.flatMap((state) => testcase(one.classname, state)),
      "  </testsuite>",
    ]),
    "</testsuites>",
    "",
  ].join("\n");
}

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/**
 * Refuses a --junit FILE that cannot be written, before anything runs: a directory, or a file in a
 * folder that is not there (regression: the whole suite ran, then its table was lost to exit 6) —
 * but for one in the data root `home`, which the run makes (`--junit $REINS_HOME/junit.xml`).
 */
export function checkJunitTarget(path: string, home: string): void {
  const target = resolvePath(path);
  const hint = "give --junit a file in a folder that exists";
  if (isDirectory(target)) {
    throw new UsageError(`--junit ${path} is a directory, not a file to write`, { hint });
  }
  const folder = dirnameOf(target);
  let missing: boolean;
  try {
    if (Deno.statSync(folder).isDirectory) return;
    missing = false;
  } catch (error) {
    // Not ours to look at (the sandbox, a folder this user may not read): the write will say.
    if (!(error instanceof Deno.errors.NotFound)) return;
    if (isInside(folder, resolvePath(home))) return;
    missing = true;
  }
  throw new UsageError(
    `--junit ${path}: its folder ${folder} ${missing ? "does not exist" : "is not a directory"}`,
    { hint },
  );
}

/** Writes the JUnit XML of `states` to `path` (relative to the working directory). */
export async function writeJunitFile(
  path: string,
  suite: string,
  states: readonly ScenarioState[],
  options: { timestamp?: string; elapsedMs?: number | null },
): Promise<void> {
  // Check details quote what agents and judges said: through the secrets choke point first.
  await Deno.writeTextFile(resolvePath(path), redact(junitXml(suite, states, options)));
}
