// Trace exports not yet acknowledged, an outbox (lib/store/outbox.ts): one file per export in
// `outbox/otlp/<id>.json` (0600), written before the first request so that a collector that is
// down, hangs or fails leaves the export to be sent later (`reins export otel --pending`, or the
// next run that settles). Beside the platform's reports rather than among them: their readers
// list only the files directly in `outbox/`. A file holds the finished request (already
// redacted) and never the headers, which are credentials and are taken from the settings when
// it is sent. The trace goes as several requests (lib/otel/batch.ts); how many were acknowledged
// is noted after each (`outbox/otlp/<id>.progress`, and `sentBatches` when the entry is next
// written), so a delivery that fails part way resumes after them.
import { nowIso } from "../core/clock.ts";
import { z } from "zod";
import { newId } from "../core/ids.ts";
import type { DataRoot } from "../store/mod.ts";
import { Outbox, type ReadOutboxEntry } from "../store/outbox.ts";
import type { ExportTraceServiceRequest } from "./wire.ts";
import { countSpans } from "./batch.ts";

export const OTLP_ENTRY_TYPE = "reins.otlp-export";

export const OtlpEntry = z.object({
  type: z.literal(OTLP_ENTRY_TYPE),
  version: z.literal(1),
  id: z.string().min(1),
  createdAt: z.string(),
  updatedAt: z.string(),
  runIds: z.array(z.string().min(1)).min(1),
  spans: z.number().int().nonnegative(),
  /** Whether the request carries prompts, answers and tool text. */
  content: z.boolean(),
  /** Where it was first meant to go; it goes wherever the settings point when it is sent. */
  endpoint: z.string().nullable(),
  /** "pending": to be sent; "refused": the collector said no, and only --pending tries again. */
  state: z.enum(["pending", "refused"]),
  attempts: z.number().int().nonnegative(),
  /**
   * How many of the requests the trace is sent as (lib/otel/batch.ts splitRequest) the collector
   * acknowledged: the next delivery starts at the one after. Absent in what an older reins wrote.
   */
  sentBatches: z.number().int().nonnegative().default(0),
  lastError: z.string().nullable(),
  request: z.looseObject({ resourceSpans: z.array(z.unknown()) }),
});
export type OtlpEntry = z.infer<typeof OtlpEntry>;

const exports = new Outbox<OtlpEntry>({
  place: {
    folder: (layout) => layout.otlpOutbox(),
    entry: (layout, id) => layout.otlpEntry(id),
    lock: (layout, id) => layout.otlpLock(id),
  },
  schema: OtlpEntry,
});

/** Writes the entry (atomic replace, 0600), stamping updatedAt. */
export function writeOtlpEntry(root: DataRoot, entry: OtlpEntry): void {
  exports.write(root, entry);
}

/** A new pending entry for `request`, written before anything is sent. */
export function createOtlpEntry(
  root: DataRoot,
  fields: {
    runIds: string[];
    request: ExportTraceServiceRequest;
    content: boolean;
    endpoint: string | null;
  },
): OtlpEntry {
  const now = nowIso();
  const spans = countSpans(fields.request);
  const entry: OtlpEntry = {
    type: OTLP_ENTRY_TYPE,
    version: 1,
    id: newId(),
    createdAt: now,
    updatedAt: now,
    runIds: fields.runIds,
    spans,
    content: fields.content,
    endpoint: fields.endpoint,
    state: "pending",
    attempts: 0,
    sentBatches: 0,
    lastError: null,
    request: fields.request as unknown as OtlpEntry["request"],
  };
  writeOtlpEntry(root, entry);
  return entry;
}

export type ReadOtlpEntry = ReadOutboxEntry<OtlpEntry>;

/**
 * The entry, null when it is gone (sent meanwhile), or why it cannot be read; its sentBatches
 * counts what noteSentBatches() noted since the entry was last written.
 */
export function readOtlpEntry(root: DataRoot, id: string): ReadOtlpEntry | null {
  const read = exports.read(root, id);
  if (read?.ok) {
    read.entry.sentBatches = Math.max(read.entry.sentBatches, exports.progress(root, id));
  }
  return read;
}

/**
 * Notes that the collector acknowledged the entry's first `sent` requests: atomically, fsynced, in
 * `<id>.progress` beside it, so that a trace of hundreds of requests is not rewritten after each.
 */
export function noteSentBatches(root: DataRoot, entry: OtlpEntry, sent: number): void {
  entry.sentBatches = sent;
  exports.writeProgress(root, entry.id, sent);
}

/** Ids of the entries waiting, oldest first (ids are uuid v7). */
export function listOtlpEntryIds(root: DataRoot): string[] {
  return exports.ids(root);
}

/** Takes the entry's sending lock without waiting, or returns null when another holds it. */
export function lockOtlpEntry(root: DataRoot, id: string): Disposable | null {
  return exports.lock(root, id);
}

/** Removes a sent entry and its lock file. */
export function removeOtlpEntry(root: DataRoot, id: string): void {
  exports.remove(root, id);
}

export interface WaitingExports {
  /** Ids of the entries `reins export otel --pending` (and the next settling run) sends. */
  pending: string[];
  /** Ids of the entries the collector refused: only `--pending` tries them again. */
  refused: string[];
  /** Entries that cannot be read, as `outbox/otlp/<file>: why`. */
  unreadable: string[];
}

/** What the outbox holds of trace exports, for `reins doctor`; changes nothing. */
export function waitingExports(root: DataRoot): WaitingExports {
  const out: WaitingExports = { pending: [], refused: [], unreadable: [] };
  for (const id of listOtlpEntryIds(root)) {
    const read = readOtlpEntry(root, id);
    if (read === null) continue;
    if (!read.ok) out.unreadable.push(`outbox/otlp/${id}.json: ${read.reason}`);
    else (read.entry.state === "refused" ? out.refused : out.pending).push(id);
  }
  return out;
}
