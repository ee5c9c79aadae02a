// `reins report RUN ... [--name NAME] [--again] [--modality text|voice] [--pending]`: sends
// settled runs to the evaluation platform as one test execution (one scenario per run), through
// the outbox, and says what was reported, what is pending and why. Reporting is idempotent per
// run and platform: a run platform.json says is there already is not sent again (--again makes
// it a new execution of the same test), and a run whose report was cut short resumes that report
// under the name it was started with. It never changes a run; an outage leaves the report in the
// outbox for `reins report --pending`.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { assertNever } from "../core/assert_never.ts";
import { ExitCode, ReinsError, UsageError } from "../core/errors.ts";
import { EVENTS_FILE, shownPath } from "../store/run_files.ts";
import { openStore } from "../store/store.ts";
import type { RunRecord } from "../store/mod.ts";
import { isActiveStatus } from "../store/contract_runtime.ts";
import { PlatformClient, platformTarget } from "../platform/client.ts";
import {
  deliverEntry,
  deliverPending,
  entriesFor,
  type ReportOutcome,
} from "../platform/deliver.ts";
import { displayRunName } from "../platform/payloads.ts";
import { createReport, type Modality } from "../platform/report_entry.ts";
import { type RememberedCall, reportedCalls } from "../platform/reported.ts";
import { type RunReport, runReportOf } from "../platform/run_outcome.ts";
import { redactValue } from "../core/redact.ts";

export const usage =
  "reins report RUN ... [--name NAME] [--again] [--modality text|voice] [--pending]";
export const description =
  "Reports settled runs (ids, unique prefixes, or last) to the evaluation platform " +
  "(HARNESS_PLATFORM_URL) as one test execution, one scenario per run, recordings included. " +
  "The test is named like 'Claude Code · 05 Jan 2026 14:03 UTC' (harness and start time) unless " +
  "--name says otherwise; reporting under a name again joins the same test. A run already " +
  "reported to this platform is not sent again: its dashboard path is printed (--again reports " +
  "it as a new execution of the test it went to). Runs with an audio recording are reported as " +
  "voice calls, others as text (--modality decides instead). A report is kept in the outbox " +
  "until the platform has acknowledged every step: --pending sends what an outage or a crash " +
  "left there. Prints the dashboard path; --json prints the ids.";
export const flags = defineFlags({
  name: {
    type: "string",
    value: "NAME",
    description: "the platform test to report into (default: harness · start time)",
  },
  again: {
    type: "boolean",
    description: "report runs that were reported already, as a new execution",
  },
  modality: {
    type: "choice",
    choices: ["text", "voice"],
    description: "how the platform shows the calls (default: voice if a run has audio)",
  },
  pending: {
    type: "boolean",
    description: "also send the reports waiting in the outbox",
  },
});
type Flags = typeof flags;

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
      // A report with problems (a recording refused, calls the platform did not allocate) is
      // not a report: it says so on stdout too, and the exit code is 5.
      if (outcome.url) {
        const said = outcome.problems.length > 0 ? "partly reported" : "reported to the platform";
        out.push(`${said}: ${outcome.url}`);
      } else err.push(outcome.reason ?? "reported");
      for (const problem of outcome.problems) err.push(`partly reported: ${problem}`);
      break;
    case "open":
      if (outcome.url) out.push(`reporting to the platform: ${outcome.url}`);
      err.push(`still open (outbox/${outcome.id}.json): ${outcome.reason}`);
      err.push("the suite that made it sends the rest as its scenarios finish");
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
    default:
      assertNever(outcome.state, "report state");
  }
  return { out, err };
}

interface Already {
  runId: string;
  /** Where it went last (every execution it is part of is in platform.json). */
  name: string;
  url: string;
  runTestId: string;
  testExecutionId: string;
  callExecutionId: string;
  reportedAt: string;
}

function alreadyOf(runId: string, calls: readonly RememberedCall[]): Already {
  const last = calls.at(-1)!;
  return {
    runId,
    name: last.name,
    url: last.url,
    runTestId: last.run_test_id,
    testExecutionId: last.test_execution_id,
    callExecutionId: last.call_execution_id,
    reportedAt: new Date(last.reported_ms).toISOString(),
  };
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const refs = ctx.positionals;
  const pending = ctx.flags.pending;
  const again = ctx.flags.again;
  const name = ctx.flags.name;
  const modality: Modality | undefined = ctx.flags.modality;
  if (refs.length === 0 && !pending) {
    throw new UsageError("reins report needs a run (an id, a unique prefix of one, or last)", {
      hint: `${usage}; --pending alone sends what the outbox holds`,
    });
  }
  if (name !== undefined && (name.trim() === "" || [...name].length > 255)) {
    throw new UsageError(`--name takes 1 to 255 characters: got ${JSON.stringify(name)}`);
  }
  const runFlag = name !== undefined
    ? "--name"
    : again
    ? "--again"
    : modality
    ? "--modality"
    : null;
  if (runFlag !== null && refs.length === 0) {
    throw new UsageError(`${runFlag} is about the runs given, and no run was given`, {
      hint: usage,
    });
  }
  const settings = await ctx.settings();
  const target = platformTarget(settings.platform);
  using store = openStore(ctx.home, { warn: (message) => ctx.io.warn(message) });
  await store.reconcileCheaply();

  const runIds = [...new Set(refs.map((ref) => store.resolveRunId(ref)))];
  const records = new Map<string, RunRecord>();
  const reports = new Map<string, RunReport>();
  for (const runId of runIds) {
    const { record } = store.inspectRun(runId);
    if (isActiveStatus(record.status)) {
      throw new ReinsError("conflict", `Cannot report run ${runId} yet: it is ${record.status}`, {
        hint: `report it once it has ended (reins show ${runId}); nothing was sent`,
      });
    }
    const read = store.readEvents(runId);
    for (const problem of read.problems) {
      ctx.io.warn(`${shownPath(runId, EVENTS_FILE)}:${problem.line}: skipped: ${problem.reason}`);
    }
    records.set(runId, record);
    // A run recorded before its key was known may hold it: what is uploaded never does.
    reports.set(
      runId,
      redactValue(runReportOf(record, read.events, { runDir: store.layout.run(runId) })),
    );
  }

  // A run whose report was cut short (or refused) is finished by that report, under the name it
  // was started with: a second report would send it twice. A different --name is refused rather
  // than dropped, before anything is sent.
  const earlier = entriesFor(store, runIds);
  if (name !== undefined) {
    const other = earlier.find((entry) => entry.name !== name);
    if (other) {
      const mine = other.runIds.filter((id) => reports.has(id));
      throw new UsageError(
        `Cannot report ${mine.length === 1 ? `run ${mine[0]}` : `runs ${mine.join(", ")}`} as ` +
          `${JSON.stringify(name)}: its report as ${
            JSON.stringify(other.name)
          } is not finished (outbox/${other.id}.json)`,
        {
          hint: `reins report ${mine.join(" ")} finishes it as ${JSON.stringify(other.name)}; ` +
            `then --again --name ${JSON.stringify(name)} reports it there too`,
        },
      );
    }
  }
  const covered = new Set(earlier.flatMap((entry) => entry.runIds));

  // A run platform.json says is on this platform already is not sent again without --again;
  // with it, each such run goes to the test it went to last (unless --name says otherwise).
  const where = { baseUrl: target.url, workspaceId: target.workspaceId };
  const already: Already[] = [];
  const groups = new Map<string, RunReport[]>();
  const fresh: RunRecord[] = [];
  for (const runId of runIds) {
    if (covered.has(runId)) continue;
    const calls = reportedCalls(store, runId, where);
    if (calls.length > 0 && !again) {
      already.push(alreadyOf(runId, calls));
      continue;
    }
    if (calls.length > 0 && name === undefined) {
      const into = calls.at(-1)!.name;
      groups.set(into, [...(groups.get(into) ?? []), reports.get(runId)!]);
    } else fresh.push(records.get(runId)!);
  }
  if (fresh.length > 0) {
    const into = name ?? defaultName(fresh);
    groups.set(into, [...(groups.get(into) ?? []), ...fresh.map((r) => reports.get(r.id)!)]);
  }

  const outcomes: ReportOutcome[] = [];
  const client = new PlatformClient(target, { proxy: settings.proxy });
  const onRetry = (message: string, waitMs: number) =>
    ctx.io.note(`retrying in ${(waitMs / 1000).toFixed(1)} s: ${message}`);
  try {
    for (const entry of earlier) {
      ctx.io.note(
        `resuming the report as ${JSON.stringify(entry.name)} in outbox/${entry.id}.json ` +
          `(${entry.runIds.join(", ")})`,
      );
      outcomes.push(
        await deliverEntry(store, entry.id, client, { onRetry, retryRefused: true }),
      );
    }
    for (const [into, scenarios] of groups) {
      const entry = createReport(store, { name: into, scenarios, target, modality });
      outcomes.push(await deliverEntry(store, entry.id, client, { onRetry }));
    }
    if (pending) {
      const done = new Set(outcomes.map((outcome) => outcome.id));
      const more = await deliverPending(store, client, { onRetry, skip: done });
      if (more.length === 0 && outcomes.length === 0 && already.length === 0) {
        ctx.io.note("nothing waits in the outbox");
      }
      outcomes.push(...more);
    }
  } finally {
    client.close();
  }

  if (ctx.io.jsonMode) {
    ctx.io.json({ reports: outcomes, alreadyReported: already });
  } else {
    for (const item of already) {
      ctx.io.print(`already reported to the platform: ${item.url}`);
      ctx.io.note(
        `run ${item.runId} went to ${JSON.stringify(item.name)} at ${item.reportedAt}; ` +
          `reins report ${item.runId} --again reports it as a new execution`,
      );
    }
    for (const outcome of outcomes) {
      const { out, err } = describe(outcome);
      for (const line of out) ctx.io.print(line);
      for (const line of err) ctx.io.note(line);
    }
  }
  // An open report (a suite still running, or cut short) is not a failure to report.
  const clean = outcomes.every((o) =>
    (o.state === "reported" || o.state === "open") && o.problems.length === 0
  );
  return clean ? ExitCode.ok : ExitCode.platform;
}
