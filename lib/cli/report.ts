// `reins report RUN ... [--name NAME] [--pending]`: sends settled runs to the evaluation platform
// as one test execution (one scenario per run), through the outbox, and says what was reported,
// what is pending and why. It never changes a run; an outage leaves the report in the outbox for
// `reins report --pending`.
import type { CommandContext } from "./command.ts";
import { stringFlag } from "./args.ts";
import { ExitCode, ReinsError, UsageError } from "../core/errors.ts";
import { reconcileCheaply } from "../store/liveness.ts";
import { resolveRunId } from "../store/lookup.ts";
import { inspectRun } from "../store/run_record.ts";
import { readEvents } from "../store/event_log.ts";
import { EVENTS_FILE, runDir, shownPath } from "../store/run_files.ts";
import { isActiveStatus } from "../store/contracts.ts";
import { PlatformClient, platformTarget } from "../platform/client.ts";
import {
  createReport,
  deliverEntry,
  deliverPending,
  entriesFor,
  type ReportOutcome,
} from "../platform/deliver.ts";
import { displayRunName } from "../platform/payloads.ts";
import { type RunReport, runReportOf } from "../platform/run_outcome.ts";
import { redactValue } from "../core/redact.ts";

export const usage = "reins report RUN ... [--name NAME] [--pending]";
export const description =
  "Reports settled runs (ids, unique prefixes, or last) to the evaluation platform " +
  "(HARNESS_PLATFORM_URL) as one test execution, one scenario per run, recordings included. " +
  "The test is named like 'Claude Code · 05 Jan 2026 14:03 UTC' (harness and start time) unless " +
  "--name says otherwise; reporting under a name again joins the same test. A report is kept in " +
  "the outbox until the platform has acknowledged every step: --pending sends what an outage or " +
  "a crash left there. Prints the dashboard path; --json prints the ids.";
export const flags = {
  name: {
    type: "string" as const,
    value: "NAME",
    description: "the platform test to report into (default: harness · start time)",
  },
  pending: {
    type: "boolean" as const,
    description: "also send the reports waiting in the outbox",
  },
};

function defaultName(runs: readonly { harness: string; startedAt: string }[]): string {
  const harnesses = new Set(runs.map((run) => run.harness));
  const agent = harnesses.size === 1 ? [...harnesses][0] : "reins";
  const earliest = Math.min(...runs.map((run) => Date.parse(run.startedAt)));
  return displayRunName(agent, new Date(earliest));
}

function describe(outcome: ReportOutcome): { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const runs = outcome.runIds.length === 1 ? "1 run" : `${outcome.runIds.length} runs`;
  switch (outcome.state) {
    case "reported":
      if (outcome.url) out.push(`reported to the platform: ${outcome.url}`);
      else err.push(outcome.reason ?? "reported");
      for (const problem of outcome.problems) err.push(`partly reported: ${problem}`);
      break;
    case "pending":
      err.push(`not reported yet (${runs}): ${outcome.reason ?? "it has not been sent"}`);
      err.push(`kept in the outbox (outbox/${outcome.id}.json): reins report --pending sends it`);
      break;
    case "refused":
      err.push(`the platform refused the report (${runs}): ${outcome.reason}`);
      if (outcome.hint) err.push(`hint: ${outcome.hint}`);
      err.push(
        `kept in outbox/${outcome.id}.json and not retried: once fixed, report the runs again ` +
          `(reins report ${outcome.runIds.join(" ")})`,
      );
      break;
    case "busy":
      err.push(`outbox/${outcome.id}.json (${runs}) is being sent by another reins process`);
      break;
    case "unreadable":
      err.push(`${outcome.reason}; move it away to stop seeing this`);
      break;
  }
  return { out, err };
}

export async function run(ctx: CommandContext): Promise<number> {
  const refs = ctx.positionals;
  const pending = ctx.flags.pending === true;
  const name = stringFlag(ctx.flags, "name");
  if (refs.length === 0 && !pending) {
    throw new UsageError("reins report needs a run (an id, a unique prefix of one, or last)", {
      hint: `${usage}; --pending alone sends what the outbox holds`,
    });
  }
  if (name !== undefined && (name.trim() === "" || [...name].length > 255)) {
    throw new UsageError(`--name takes 1 to 255 characters: got ${JSON.stringify(name)}`);
  }
  if (name !== undefined && refs.length === 0) {
    throw new UsageError("--name names the test for the runs given, and no run was given", {
      hint: usage,
    });
  }
  const settings = await ctx.settings();
  const target = platformTarget(settings.platform);
  await reconcileCheaply(ctx.home);

  const runIds = [...new Set(refs.map((ref) => resolveRunId(ctx.home, ref)))];
  const reports: RunReport[] = [];
  const records = [];
  for (const runId of runIds) {
    const { record } = inspectRun(ctx.home, runId);
    if (isActiveStatus(record.status)) {
      throw new ReinsError("conflict", `Cannot report run ${runId} yet: it is ${record.status}`, {
        hint: `report it once it has ended (reins show ${runId}); nothing was sent`,
      });
    }
    const read = readEvents(ctx.home, runId);
    for (const problem of read.problems) {
      ctx.io.warn(`${shownPath(runId, EVENTS_FILE)}:${problem.line}: skipped: ${problem.reason}`);
    }
    records.push(record);
    // A run recorded before its key was known may hold it: what is uploaded never does.
    reports.push(
      redactValue(runReportOf(record, read.events, { runDir: runDir(ctx.home, runId) })),
    );
  }

  // A run already in the outbox (cut short, or refused earlier) is sent by that report: a second
  // one would report it twice.
  const earlier = entriesFor(ctx.home, runIds);
  const covered = new Set(earlier.flatMap((entry) => entry.runIds));
  const fresh = reports.filter((report) => !covered.has(report.runId));

  const outcomes: ReportOutcome[] = [];
  const client = new PlatformClient(target, { proxy: settings.proxy });
  const onRetry = (message: string, waitMs: number) =>
    ctx.io.note(`retrying in ${(waitMs / 1000).toFixed(1)} s: ${message}`);
  try {
    for (const entry of earlier) {
      ctx.io.note(`resuming the report in outbox/${entry.id}.json (${entry.runIds.join(", ")})`);
      outcomes.push(
        await deliverEntry(ctx.home, entry.id, client, { onRetry, retryRefused: true }),
      );
    }
    if (fresh.length > 0) {
      const entry = createReport(ctx.home, {
        name: name ?? defaultName(records.filter((r) => !covered.has(r.id))),
        runs: fresh,
        target,
      });
      outcomes.push(await deliverEntry(ctx.home, entry.id, client, { onRetry }));
    }
    if (pending) {
      const done = new Set(outcomes.map((outcome) => outcome.id));
      const more = await deliverPending(ctx.home, client, { onRetry, skip: done });
      if (more.length === 0 && outcomes.length === 0) ctx.io.note("nothing waits in the outbox");
      outcomes.push(...more);
    }
  } finally {
    client.close();
  }

  if (ctx.io.jsonMode) {
    ctx.io.json({ reports: outcomes });
  } else {
    for (const outcome of outcomes) {
      const { out, err } = describe(outcome);
      for (const line of out) ctx.io.print(line);
      for (const line of err) ctx.io.note(line);
    }
  }
  const clean = outcomes.every((o) => o.state === "reported" && o.problems.length === 0);
  return clean ? ExitCode.ok : ExitCode.platform;
}
