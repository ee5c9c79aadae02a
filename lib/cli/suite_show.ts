// `reins suite show [ID]` (a suite run's results table, or JSON) and `reins suite list` (suite
// runs, newest first, with their counts). Both only read the state files under suites/.
import type { SuiteContext } from "./suite.ts";
import { ExitCode, UsageError } from "../core/errors.ts";
import { resolvePath } from "../core/paths.ts";
import { redact } from "../core/redact.ts";
import { DataRoot } from "../store/data_root.ts";
import type { Output } from "./output.ts";
import {
  listSuiteRunIds,
  readScenarioStates,
  readSuiteRun,
  resolveSuiteRunId,
  type ScenarioState,
  type SuiteRunFile,
} from "../suite/state.ts";
import { exitCodeOf, formatTable, summaryLine, totalsOf } from "../suite/table.ts";
import { tally } from "../suite/results.ts";
import { junitXml } from "../suite/junit.ts";

/** One scenario as the JSON output shows it. */
export function scenarioJson(state: ScenarioState) {
  const { met, of } = tally(state.checks);
  return {
    instance: state.instance.id,
    key: state.instance.key,
    repeat: state.instance.repeat,
    name: state.name,
    status: state.status,
    reason: state.reason,
    met,
    of,
    turns: state.turns,
    costUsd: state.costUsd,
    durationMs: state.durationMs,
    runIds: state.runIds,
    attempts: state.attempts.length,
    checks: state.checks,
    ended: state.ended,
  };
}

export function suiteRunJson(header: SuiteRunFile, states: readonly ScenarioState[]) {
  return {
    suiteRunId: header.id,
    suite: header.suite,
    file: header.file,
    digest: header.digest,
    state: header.state,
    createdAt: header.createdAt,
    finishedAt: header.finishedAt,
    options: header.options,
    totals: totalsOf(states),
    scenarios: states.map(scenarioJson),
  };
}

/** Elapsed wall time of a suite run: first start to last end of this header's sessions. */
export function elapsedOf(header: SuiteRunFile): number | null {
  let total = 0;
  for (const session of header.sessions) {
    if (session.endedAt === null) return null;
    total += Date.parse(session.endedAt) - Date.parse(session.startedAt);
  }
  return total;
}

export async function writeJunit(
  path: string,
  suite: string,
  states: readonly ScenarioState[],
  options: { timestamp?: string; elapsedMs?: number | null },
): Promise<void> {
  // Check details quote what agents and judges said: through the secrets choke point first.
  await Deno.writeTextFile(resolvePath(path), redact(junitXml(suite, states, options)));
}

/** Notes about where to look: kept working directories, the platform. */
export function followUps(header: SuiteRunFile, states: readonly ScenarioState[]): string[] {
  const kept = states.flatMap((state) => {
    const last = state.attempts[state.attempts.length - 1];
    return last?.workdir && state.status !== "passed"
      ? [`  ${state.instance.id}: ${last.workdir}`]
      : [];
  });
  const lines: string[] = [];
  if (kept.length) {
    lines.push("working directories kept for a look:", ...kept.slice(0, 20));
    if (kept.length > 20) {
      lines.push(`  … and ${kept.length - 20} more (reins suite show ${header.id} --json)`);
    }
  }
  return lines;
}

export function printResults(
  io: Output,
  header: SuiteRunFile,
  states: readonly ScenarioState[],
): void {
  for (const line of formatTable(states, { elapsedMs: elapsedOf(header) })) io.print(line);
}

export async function suiteShow(ctx: SuiteContext): Promise<number> {
  if (ctx.positionals.length > 1) {
    throw new UsageError("reins suite show takes one suite run id", {
      hint: "reins suite show [ID]",
    });
  }
  using root = new DataRoot(ctx.home);
  const id = resolveSuiteRunId(root, ctx.positionals[0] ?? "last");
  const header = readSuiteRun(root, id);
  const states = readScenarioStates(root, header);
  const junit = ctx.flags.junit;
  if (junit) {
    await writeJunit(junit, header.suite, states, {
      timestamp: header.createdAt,
      elapsedMs: elapsedOf(header),
    });
  }
  if (ctx.io.jsonMode) {
    ctx.io.json(suiteRunJson(header, states));
  } else {
    ctx.io.note(`suite run ${header.id} · ${header.suite} · ${header.file} · ${header.state}`);
    if (header.options.rerunOf) {
      ctx.io.note(
        `reruns the ${
          header.options.rerunOf.which.join(" and ")
        } of ${header.options.rerunOf.suiteRunId}`,
      );
    }
    if (header.options.shard) {
      const { index, count, planId } = header.options.shard;
      ctx.io.note(`shard ${index}/${count} of plan ${planId}`);
    }
    printResults(ctx.io, header, states);
    for (const line of followUps(header, states)) ctx.io.note(line);
  }
  return header.state === "finished" ? exitCodeOf(totalsOf(states)) : ExitCode.runFailed;
}

export function suiteList(ctx: SuiteContext): Promise<number> {
  const limit = ctx.flags.limit ?? 20;
  if (ctx.positionals.length > 0) {
    throw new UsageError("reins suite list takes no arguments", {
      hint: "reins suite list [--limit N]",
    });
  }
  const rows: ReturnType<typeof listRow>[] = [];
  using root = new DataRoot(ctx.home);
  for (const id of listSuiteRunIds(root).slice(0, limit)) {
    try {
      const header = readSuiteRun(root, id);
      rows.push(listRow(header, readScenarioStates(root, header)));
    } catch (error) {
      ctx.io.warn(`suite run ${id} cannot be read: ${(error as Error).message}`);
    }
  }
  if (ctx.io.jsonMode) {
    ctx.io.json({ suiteRuns: rows });
    return Promise.resolve(ExitCode.ok);
  }
  if (rows.length === 0) {
    ctx.io.note("no suite runs yet: reins suite run FILE plays one");
    return Promise.resolve(ExitCode.ok);
  }
  for (const row of rows) {
    ctx.io.print(
      `${row.id}  ${row.createdAt.slice(0, 19).replace("T", " ")}  ${
        row.state.padEnd(8)
      }  ${row.suite}  ${row.summary}`,
    );
  }
  return Promise.resolve(ExitCode.ok);
}

function listRow(header: SuiteRunFile, states: readonly ScenarioState[]) {
  const totals = totalsOf(states);
  return {
    id: header.id,
    suite: header.suite,
    file: header.file,
    state: header.state,
    createdAt: header.createdAt,
    totals,
    summary: summaryLine(totals, elapsedOf(header)),
  };
}
