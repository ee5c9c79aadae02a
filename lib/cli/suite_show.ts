// `reins suite show [ID]` (a suite run's results table, or JSON) and `reins suite list` (suite
// runs, newest first, with their counts). Both only read the state files under suites/.
import type { SuiteContext } from "./suite_flags.ts";
import { ExitCode, UsageError } from "../core/errors.ts";
import { DataRoot } from "../store/data_root.ts";
import {
  currentState,
  elapsedOf,
  listSuiteRunIds,
  readScenarioStates,
  readSuiteRun,
  resolveSuiteRunId,
  type ScenarioState,
  type SuiteRunFile,
  type SuiteRunState,
} from "../suite/state.ts";
import { exitCodeOf, summaryLine, totalsOf } from "../suite/table.ts";
import { writeJunitFile } from "../suite/junit.ts";
import { suiteRunJson } from "../suite/json.ts";
import { printResults } from "./suite_output.ts";

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
  const state = currentState(root, header);
  const junit = ctx.flags.junit;
  if (junit) {
    await writeJunitFile(junit, header.suite, states, {
      timestamp: header.createdAt,
      elapsedMs: elapsedOf(header),
    });
  }
  if (ctx.io.jsonMode) {
    ctx.io.json(suiteRunJson(header, states, state));
  } else {
    ctx.io.note(`suite run ${header.id} · ${header.suite} · ${header.file} · ${state}`);
    if (state === "interrupted") {
      ctx.io.note(
        `its process is gone: reins suite run ${header.file} --resume ${header.id} plays what is left`,
      );
    }
    if (header.options.rerunOf) {
      ctx.io.note(
        `reruns the ${
          header.options.rerunOf.which.join(" and ")
        } of ${header.options.rerunOf.suiteRunId}`,
      );
    }
    if (header.options.regradeOf) {
      ctx.io.note(`regrades suite run ${header.options.regradeOf}: its checks ran anew, no agent`);
    }
    if (header.options.shard) {
      const { index, count, planId } = header.options.shard;
      ctx.io.note(`shard ${index}/${count} of plan ${planId}`);
    }
    printResults(ctx.io, header, states);
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
      rows.push(listRow(header, readScenarioStates(root, header), currentState(root, header)));
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
        row.state.padEnd(11)
      }  ${row.suite}  ${row.summary}`,
    );
  }
  return Promise.resolve(ExitCode.ok);
}

function listRow(header: SuiteRunFile, states: readonly ScenarioState[], state: SuiteRunState) {
  const totals = totalsOf(states);
  return {
    id: header.id,
    suite: header.suite,
    file: header.file,
    state,
    createdAt: header.createdAt,
    totals,
    summary: summaryLine(totals, elapsedOf(header)),
  };
}
