// `reins suite regrade ID`: the suite file's checks and judges, as the file is now, run again on a
// suite run's recorded runs and the end state of their working directories, with no agent
// started; a new suite run holds the result (docs/suites.md, "Regrade").
import { importLazily } from "../core/lazy_import.ts";
import type { SuiteContext } from "./suite_flags.ts";
import { ExitCode, ReinsError, UsageError } from "../core/errors.ts";
import { openStore } from "../store/store.ts";
import { readManifest } from "../snapshot/manifest.ts";
import { restoreSnapshot } from "../snapshot/restore.ts";
import {
  currentState,
  elapsedOf,
  readScenarioStates,
  readSuiteRun,
  resolveSuiteRunId,
} from "../suite/state.ts";
import { exitCodeOf, totalsOf } from "../suite/table.ts";
import { checkJunitTarget, writeJunitFile } from "../suite/junit.ts";
import { suiteRunJson } from "../suite/json.ts";
import { endStateId } from "../suite/end_state.ts";
import { regradeSuiteRun } from "../suite/regrade.ts";
import { loadOrExplain, printResults } from "./suite_output.ts";
import { describeError } from "../core/errors.ts";

export async function suiteRegrade(ctx: SuiteContext): Promise<number> {
  if (ctx.positionals.length !== 1) {
    throw new UsageError("reins suite regrade takes one suite run id", {
      hint: "reins suite regrade ID (reins suite list shows them)",
    });
  }
  const { io } = ctx;
  if (ctx.flags.junit) checkJunitTarget(ctx.flags.junit, ctx.home);
  const settings = await ctx.settings();
  using store = openStore(ctx.home, { warn: (message) => io.warn(message) });
  const from = readSuiteRun(store, resolveSuiteRunId(store, ctx.positionals[0]));
  // regression: a suite run still being played was regraded from its rows so far, into a suite run
  // that said finished with most of them not finished.
  if (currentState(store, from) === "running") {
    throw new ReinsError(
      "conflict",
      `Suite run ${from.id} is still being run by another reins process`,
      {
        hint: "regrade it once it has ended (reins suite show ID follows its progress)",
      },
    );
  }
  const loaded = await loadOrExplain(io, from.file);
  if ("exit" in loaded) return loaded.exit;
  const suite = loaded;
  const { resolveModel } = await importLazily<typeof import("../model/mod.ts")>("model/mod.ts");
  const { recordingLoader } = await importLazily<typeof import("../session/replay.ts")>(
    "session/replay.ts",
  );
  const loadRecording = recordingLoader(store);
  if (!io.jsonMode && !io.quiet) {
    io.note(
      `regrading suite run ${from.id} with ${suite.file}${
        suite.digest === from.digest ? "" : " (changed since)"
      }: no agent runs`,
    );
  }
  using handle = await regradeSuiteRun({
    store,
    suite,
    from,
    makeModel: (spec, baseUrl) => resolveModel(spec, { settings, baseUrl, loadRecording }),
    restoreEndState: async (lastRunId, target) => {
      const read = readManifest(store, endStateId(lastRunId));
      if (read === null) {
        return "no end-state snapshot (a suite run from before regrade, or snapshots off)";
      }
      if (!read.ok) return `its end-state snapshot cannot be read: ${read.reason}`;
      if (read.manifest.state !== "taken") {
        return `its end-state snapshot was skipped: ${read.manifest.reason ?? "over the limits"}`;
      }
      try {
        await restoreSnapshot(store, read.manifest, target);
        return null;
      } catch (error) {
        return `its end-state snapshot cannot be restored: ${describeError(error)}`;
      }
    },
  });
  const states = readScenarioStates(store, handle.header);
  const junit = ctx.flags.junit;
  if (junit) {
    await writeJunitFile(junit, suite.name, states, {
      timestamp: handle.header.createdAt,
      elapsedMs: elapsedOf(handle.header),
    });
  }
  if (io.jsonMode) {
    io.json(suiteRunJson(handle.header, states));
  } else {
    io.note(
      `suite run ${handle.id} regrades ${from.id}: reins suite compare ${from.id} ${handle.id}`,
    );
    printResults(io, handle.header, states);
  }
  const totals = totalsOf(states);
  if (totals.gradingErrors > 0 && !io.jsonMode) {
    io.warn(
      `${totals.gradingErrors} check${
        totals.gradingErrors === 1 ? "" : "s"
      } could not be decided anew (see the table's details: reins suite show ${handle.id} --json)`,
    );
  }
  return exitCodeOf(totals) === 0 ? ExitCode.ok : ExitCode.runFailed;
}
