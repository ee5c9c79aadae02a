// Exporting runs as traces, the two ways reins does it: on demand (`reins export otel`), which
// sends now and keeps nothing, and when a run settles, through the outbox within a short budget,
// so that a collector that is down, hangs or fails never changes how the run ends and delays the
// process by at most the budget; what did not go out waits in the outbox. Runs are read through
// the caller's loader, so this module needs no store.
import type { Settings } from "../core/mod.ts";
import type { DataRoot, Store } from "../store/mod.ts";
import { describeError } from "../core/errors.ts";
import { VERSION } from "../core/version.ts";
import {
  deliverOtlpEntry,
  deliverPendingOtlp,
  type ExportOutcome,
  exportOutcomeOf,
  sendBatches,
  type SendPolicy,
} from "./deliver.ts";
import { countSpans } from "./batch.ts";
import { createOtlpEntry } from "./outbox.ts";
import { exportRedactor } from "./redact.ts";
import {
  type RecordedRun,
  type StreamedRun,
  streamTraceRequests,
  type TraceOptions,
  traceRequest,
} from "./request.ts";
import { type ExportSettings, exportSettings, type OtlpTarget } from "./target.ts";
import type { ExportTraceServiceRequest } from "./wire.ts";

/** How long a settling run may spend exporting itself (and what waited before it). */
export const SETTLE_BUDGET_MS = 2_000;
/** Tries of one request on demand (the first included). */
export const EXPLICIT_ATTEMPTS = 5;

export interface TraceBuild {
  /** The whole trace as one request (what --print shows). */
  request: ExportTraceServiceRequest;
  spans: number;
}

function traceOptions(
  settings: Settings,
  exporting: ExportSettings,
  target: OtlpTarget | null,
): TraceOptions {
  return {
    content: exporting.content,
    serviceName: exporting.serviceName,
    serviceVersion: VERSION,
    resourceAttributes: exporting.resourceAttributes,
    valueLengthLimit: exporting.valueLengthLimit,
    redact: exportRedactor({ ...settings.otel.file.headers, ...target?.headers }),
  };
}

/** The request for `runs` under these settings, redacted, whole (`reins export otel --print`). */
export function buildTrace(
  runs: readonly RecordedRun[],
  settings: Settings,
  exporting: ExportSettings,
  target: OtlpTarget | null = exporting.target,
): TraceBuild {
  const request = traceRequest(runs, traceOptions(settings, exporting, target));
  return { request, spans: countSpans(request) };
}

export const USER_AGENT = `reins/${VERSION} (OTLP/HTTP JSON exporter)`;

/**
 * Sends `runs` now, as the requests of at most 512 spans and 4 MiB it splits into, in order, each
 * with retries, stopping at the first not accepted; nothing is written anywhere. The requests are
 * made as they are sent, from events read as they are needed (streamTraceRequests), so a run of
 * a million events goes out in bounded memory.
 */
export async function exportNow(
  runs: readonly StreamedRun[],
  settings: Settings,
  exporting: ExportSettings,
  target: OtlpTarget,
  options: { onRetry?: (reason: string, waitMs: number) => void } = {},
): Promise<ExportOutcome> {
  const requests = streamTraceRequests(runs, traceOptions(settings, exporting, target));
  let spans = 0;
  const batches = {
    *[Symbol.iterator]() {
      spans = yield* requests;
    },
  };
  const { outcome } = await sendBatches(batches, 0, {
    target,
    proxy: settings.proxy,
    attempts: EXPLICIT_ATTEMPTS,
    deadlineMs: null,
    userAgent: USER_AGENT,
    onRetry: options.onRetry,
  });
  return exportOutcomeOf(outcome, {
    id: null,
    runIds: runs.map((run) => run.record.id),
    spans,
    url: target.url,
  });
}

export interface SettleExport {
  root: DataRoot;
  settings: Settings;
  runId: string;
  /**
   * A run's record and its events, which are read twice (streamRunSpans): a reader of its
   * events.jsonl line by line (the store's streamEvents) keeps a large run out of memory.
   */
  load: (runId: string) => StreamedRun;
  /** One line for people (stderr). */
  warn: (message: string) => void;
  /**
   * Whether a warning about the settings is said for the first time (the store's firstTime): a
   * server settles many runs with the same settings. Without it, every export says them.
   */
  firstTime?: (key: string) => boolean;
  budgetMs?: number;
}

/**
 * Exports a run that has just settled, when the settings ask for it: written to the outbox, then
 * sent within the budget, then (time allowing) what waited there before. Returns the outcomes, or
 * null when export on settle is off. Never throws: a failure is a warning and a pending entry.
 */
export async function exportOnSettle(request: SettleExport): Promise<ExportOutcome[] | null> {
  const deadlineMs = Date.now() + (request.budgetMs ?? SETTLE_BUDGET_MS);
  let exporting: ExportSettings;
  try {
    exporting = exportSettings(request.settings.otel);
  } catch (error) {
    request.warn(`the run's trace was not exported: ${describeError(error)}`);
    return null;
  }
  for (const warning of exporting.warnings) {
    if (request.firstTime?.(`otel settings: ${warning}`) === false) continue;
    request.warn(`OpenTelemetry export: ${warning}`);
  }
  if (!exporting.onSettle || exporting.target === null) return null;
  const target = exporting.target;
  const policy: SendPolicy = {
    target,
    proxy: request.settings.proxy,
    attempts: 3,
    deadlineMs,
    userAgent: USER_AGENT,
  };
  try {
    const run = request.load(request.runId);
    // Written to the outbox as they are made, one request held at a time (createOtlpEntry).
    const entry = await createOtlpEntry(request.root, {
      runIds: [request.runId],
      requests: streamTraceRequests([run], traceOptions(request.settings, exporting, target)),
      content: exporting.content,
      endpoint: target.url,
    });
    const first = await deliverOtlpEntry(request.root, entry.id, policy);
    const outcomes = [first];
    if (first.state === "exported") {
      outcomes.push(
        ...await deliverPendingOtlp(request.root, policy, {
          skip: new Set([entry.id]),
          stopOnFailure: true,
        }),
      );
    }
    for (const outcome of outcomes) {
      if (outcome.state === "exported" && outcome.reason === null) continue;
      // Another turn of this process (a server's) or another process is sending it: theirs.
      if (outcome.state === "busy") continue;
      request.warn(describeSettleOutcome(outcome));
    }
    return outcomes;
  } catch (error) {
    const why = error instanceof Deno.errors.NotCapable
      ? `the sandbox may not reach ${new URL(target.url).host} (build with ` +
        `OTEL_EXPORTER_OTLP_ENDPOINT set, or add the host to REINS_ALLOW_NET)`
      : describeError(error);
    request.warn(
      `the trace of run ${request.runId} was not exported: ${why}; reins export otel --pending ` +
        `sends what the outbox keeps`,
    );
    return [];
  }
}

/**
 * The export a turn makes once its run has settled (lib/turn calls it for every run, whatever
 * started it: the command line, a suite, the A2A server): nothing without an endpoint, else
 * exportOnSettle() with the store's reading of the run.
 */
export async function exportSettledRun(
  store: Store,
  settings: Settings,
  runId: string,
  warn: (message: string) => void,
): Promise<ExportOutcome[] | null> {
  return await exportOnSettle({
    root: store,
    settings,
    runId,
    load: (id) => ({ record: store.inspectRun(id).record, events: store.streamEvents(id) }),
    warn,
    firstTime: (key) => store.firstTime(key),
  });
}

/** One line for a settle-time outcome that did not simply go out. */
export function describeSettleOutcome(outcome: ExportOutcome): string {
  const runs = outcome.runIds.join(", ");
  const where = outcome.id === null ? "" : ` (outbox/otlp/${outcome.id}.json)`;
  switch (outcome.state) {
    case "exported":
      return `trace of run ${runs} exported with a warning: ${outcome.reason}`;
    case "pending":
      return `trace of run ${runs} not exported yet: ${outcome.reason}; kept${where} for ` +
        `reins export otel --pending`;
    case "refused":
      return `the collector refused the trace of run ${runs}: ${outcome.reason}; kept${where}, ` +
        `reins export otel --pending tries it again`;
    case "busy":
      return `trace of run ${runs}${where} is being sent by another reins process`;
    case "unreadable":
      return `${outcome.reason}; move it away to stop seeing this`;
  }
}
