// `reins export otel RUN… [--since WHEN] [--endpoint URL] [--otel-content] [--pending] [--print]`:
// settled runs as OpenTelemetry traces (GenAI semantic conventions), POSTed as OTLP/HTTP JSON to
// the collector the OTEL_EXPORTER_OTLP_* variables (or the config file, or --endpoint) name. On
// demand nothing is kept: a collector that is down makes it exit 5, and it can be run again.
// --pending sends what runs that settled while the collector was away left in the outbox.
import { importLazily } from "../core/lazy_import.ts";
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { ExitCode, ReinsError, UsageError } from "../core/errors.ts";
import { EVENTS_FILE, shownPath } from "../store/run_files.ts";
import { openStore } from "../store/store.ts";
import type { RunRecord } from "../store/mod.ts";
import { isActiveStatus } from "../store/contract_runtime.ts";
import { MAX_LIMIT } from "../store/list.ts";
import type { ExportOutcome } from "../otel/mod.ts";

export const usage =
  "reins export otel RUN ... [--since WHEN] [--endpoint URL] [--otel-content] [--pending] [--print]";
export const description =
  "Exports settled runs (ids, unique prefixes, or last; or every run that started since WHEN: " +
  "an ISO time or a duration such as 30m, 12h, 7d) as OpenTelemetry traces following the GenAI " +
  "semantic conventions, one trace per run, its id the run id without dashes. They are POSTed as " +
  "OTLP/HTTP JSON to --endpoint (a collector's base URL), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT " +
  "or OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), else the config file's otel section, else " +
  "http://localhost:4318, with OTEL_EXPORTER_OTLP_HEADERS. Prompts, answers and tool text are " +
  "left out unless --otel-content (or otel.content in the config) asks for them; secrets never " +
  "leave. Exporting a run again gives the same trace. --pending sends the traces of runs that " +
  "settled while the collector was away. --print writes the OTLP JSON to stdout instead.";
export const flags = defineFlags({
  since: {
    type: "string",
    value: "WHEN",
    description: "also every settled run that started since then (ISO time, or 30m, 12h, 7d)",
  },
  endpoint: {
    type: "string",
    value: "URL",
    description: "the collector's base URL (traces go to URL/v1/traces)",
  },
  "otel-content": {
    type: "boolean",
    description: "include prompts, answers, tool arguments and results",
  },
  pending: {
    type: "boolean",
    description: "also send the traces waiting in the outbox",
  },
  print: {
    type: "boolean",
    description: "print the OTLP JSON on stdout instead of sending it",
  },
});
type Flags = typeof flags;

/**
 * Runs read and built at a time, so that only so many are held at once; what they make is sent as
 * requests of at most 512 spans and 4 MiB (lib/otel/batch.ts), in order.
 */
const RUNS_PER_REQUEST = 50;

const DURATION = /^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `--since`: an ISO date or time, or a duration back from now. */
export function sinceMs(value: string, nowMs = Date.now()): number {
  const duration = DURATION.exec(value.trim());
  if (duration) return nowMs - Number(duration[1]) * UNIT_MS[duration[2].toLowerCase()];
  if (/^\d{4}-\d{2}-\d{2}/.test(value.trim())) {
    const at = Date.parse(value.trim());
    if (Number.isFinite(at)) return at;
  }
  throw new UsageError(`--since takes an ISO time or a duration: got ${JSON.stringify(value)}`, {
    hint: "e.g. --since 2026-01-05, --since 2026-01-05T14:00:00Z, --since 30m, --since 7d",
  });
}

function describe(outcome: ExportOutcome): { out: string[]; err: string[] } {
  const runs = outcome.runIds.length === 1 ? "1 run" : `${outcome.runIds.length} runs`;
  const spans = outcome.spans === 1 ? "1 span" : `${outcome.spans} spans`;
  const where = outcome.id === null ? "" : ` (outbox/otlp/${outcome.id}.json)`;
  switch (outcome.state) {
    case "exported":
      return {
        out: [`exported ${runs} (${spans}) to ${outcome.url}`],
        err: outcome.reason ? [`partly exported${where}: ${outcome.reason}`] : [],
      };
    case "pending":
      return {
        out: [],
        err: [
          `not exported${where} (${runs}): ${outcome.reason}`,
          outcome.id === null
            ? "nothing was kept: run the export again once the collector is up"
            : "kept in the outbox: reins export otel --pending sends it",
        ],
      };
    case "refused":
      return {
        out: [],
        err: [`the collector refused the export${where} (${runs}): ${outcome.reason}`],
      };
    case "busy":
      return { out: [], err: [`outbox/otlp/${outcome.id}.json is being sent by another process`] };
    case "unreadable":
      return { out: [], err: [`${outcome.reason}; move it away to stop seeing this`] };
  }
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const [format, ...refs] = ctx.positionals;
  if (format !== "otel") {
    throw new UsageError(
      format === undefined
        ? "reins export needs a format: otel"
        : `Unknown export format ${JSON.stringify(format)}: reins exports otel`,
      { hint: usage },
    );
  }
  const since = ctx.flags.since;
  const pending = ctx.flags.pending;
  const print = ctx.flags.print;
  if (refs.length === 0 && since === undefined && !pending) {
    throw new UsageError("reins export otel needs runs (ids, prefixes or last) or --since", {
      hint: `${usage}; --pending alone sends what the outbox holds`,
    });
  }
  if (print && pending) {
    throw new UsageError("--print shows what would be sent; it does not go with --pending");
  }
  const fromMs = since === undefined ? null : sinceMs(since);
  const endpoint = ctx.flags.endpoint;
  if (endpoint !== undefined && !/^https?:\/\/[^/]/i.test(endpoint)) {
    throw new UsageError(
      `--endpoint takes an http:// or https:// URL: got ${JSON.stringify(endpoint)}`,
    );
  }

  const settings = await ctx.settings();
  const { exportSettings, explicitTarget } = await importLazily<typeof import("../otel/target.ts")>(
    "otel/target.ts",
  );
  const exporting = exportSettings(settings.otel, {
    endpoint,
    content: ctx.flags["otel-content"],
  });
  for (const warning of exporting.warnings) ctx.io.warn(`ignored: ${warning}`);
  const target = explicitTarget(exporting);
  if (target === null && !print) {
    throw new UsageError(`Cannot export: ${exporting.unusable}`, {
      hint: "reins speaks OTLP/HTTP with JSON, which collectors take on port 4318",
    });
  }
  using store = openStore(ctx.home, { warn: (message) => ctx.io.warn(message) });
  await store.reconcileCheaply();

  const runIds = [...new Set(refs.map((ref) => store.resolveRunId(ref)))];
  const records: RunRecord[] = [];
  for (const runId of runIds) {
    const { record } = store.inspectRun(runId);
    if (isActiveStatus(record.status)) {
      throw new ReinsError("conflict", `Cannot export run ${runId} yet: it is ${record.status}`, {
        hint: `export it once it has ended (reins show ${runId}); nothing was sent`,
      });
    }
    records.push(record);
  }
  if (fromMs !== null) {
    const chosen = new Set(runIds);
    let active = 0;
    // listRuns is newest first; a trace export reads better oldest first.
    for (const record of store.listRuns({ limit: MAX_LIMIT }).reverse()) {
      if (Date.parse(record.startedAt) < fromMs || chosen.has(record.id)) continue;
      if (isActiveStatus(record.status)) {
        active++;
        continue;
      }
      chosen.add(record.id);
      records.push(store.inspectRun(record.id).record);
    }
    if (active > 0) ctx.io.note(`left out ${active} run${active === 1 ? "" : "s"} still going`);
  }
  const load = (record: RunRecord) => {
    const read = store.readEvents(record.id);
    for (const problem of read.problems) {
      ctx.io.warn(
        `${shownPath(record.id, EVENTS_FILE)}:${problem.line}: skipped: ${problem.reason}`,
      );
    }
    return { record, events: read.events };
  };
  // What an export sends: the events read line by line as the trace is made (more than once), each
  // skipped line said once.
  const stream = (record: RunRecord) => {
    const said = new Set<number>();
    const events = store.streamEvents(record.id, (problem) => {
      if (said.has(problem.line)) return;
      said.add(problem.line);
      ctx.io.warn(
        `${shownPath(record.id, EVENTS_FILE)}:${problem.line}: skipped: ${problem.reason}`,
      );
    });
    return { record, events };
  };

  const { buildTrace, exportNow, USER_AGENT } = await importLazily<
    typeof import("../otel/export.ts")
  >("otel/export.ts");
  if (print) {
    const built = buildTrace(records.map(load), settings, exporting, target);
    ctx.io.json(built.request);
    return ExitCode.ok;
  }

  const outcomes: ExportOutcome[] = [];
  const onRetry = (message: string, waitMs: number) =>
    ctx.io.note(`retrying in ${(waitMs / 1000).toFixed(1)} s: ${message}`);
  for (let i = 0; i < records.length; i += RUNS_PER_REQUEST) {
    const batch = records.slice(i, i + RUNS_PER_REQUEST).map(stream);
    outcomes.push(
      await exportNow(batch, settings, exporting, target!, { onRetry }),
    );
  }
  if (pending) {
    const { deliverPendingOtlp } = await importLazily<typeof import("../otel/deliver.ts")>(
      "otel/deliver.ts",
    );
    const more = await deliverPendingOtlp(store, {
      target: target!,
      attempts: 5,
      deadlineMs: null,
      proxy: settings.proxy,
      userAgent: USER_AGENT,
      onRetry,
    }, { includeRefused: true });
    if (more.length === 0 && outcomes.length === 0) ctx.io.note("no traces wait in the outbox");
    outcomes.push(...more);
  }

  const { traceIdOf } = await importLazily<typeof import("../otel/ids.ts")>("otel/ids.ts");
  if (ctx.io.jsonMode) {
    ctx.io.json({
      exports: outcomes,
      traces: Object.fromEntries(records.map((record) => [record.id, traceIdOf(record.id)])),
    });
  } else {
    for (const outcome of outcomes) {
      const { out, err } = describe(outcome);
      for (const line of out) ctx.io.print(line);
      for (const line of err) ctx.io.note(line);
    }
    if (records.length === 1 && outcomes[0]?.state === "exported") {
      ctx.io.note(`trace id ${traceIdOf(records[0].id)}`);
    }
  }
  const clean = outcomes.every((o) => o.state === "exported" && o.rejectedSpans === 0);
  return clean ? ExitCode.ok : ExitCode.platform;
}
