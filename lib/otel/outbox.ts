// Trace exports not yet acknowledged, an outbox (lib/store/outbox.ts): one file per export in
// `outbox/otlp/<id>.json` (0600), written before the first request so that a collector that is
// down, hangs or fails leaves the export to be sent later (`reins export otel --pending`, or the
// next run that settles). Beside the platform's reports rather than among them: their readers
// list only the files directly in `outbox/`. The entry never holds the headers, which are
// credentials and are taken from the settings when it is sent. The requests themselves (already
// redacted, in the order they go, lib/otel/batch.ts) are in `outbox/otlp/<id>.requests.jsonl`, one
// a line, written as they are made and read back one at a time, so that neither writing nor
// sending an export of a million events holds its trace (an entry of an older reins holds its
// whole request in `request` instead). How many were acknowledged is noted after each
// (`outbox/otlp/<id>.progress`, and `sentBatches` when the entry is next written), so a delivery
// that fails part way resumes after them.
import { nowIso } from "../core/clock.ts";
import { z } from "zod";
import { newId } from "../core/ids.ts";
import type { DataRoot } from "../store/mod.ts";
import { Outbox, type ReadOutboxEntry } from "../store/outbox.ts";
import type { TraceBody } from "./batch.ts";

export const OTLP_ENTRY_TYPE = "reins.otlp-export";

const entryFields = {
  type: z.literal(OTLP_ENTRY_TYPE),
  id: z.string().min(1),
  createdAt: z.string(),
  updatedAt: z.string(),
  runIds: z.array(z.string().min(1)).min(1),
  spans: z.number().int().nonnegative(),
  /** Whether the requests carry prompts, answers and tool text. */
  content: z.boolean(),
  /** Where it was first meant to go; it goes wherever the settings point when it is sent. */
  endpoint: z.string().nullable(),
  /** "pending": to be sent; "refused": the collector said no, and only --pending tries again. */
  state: z.enum(["pending", "refused"]),
  attempts: z.number().int().nonnegative(),
  /**
   * How many of the requests the trace is sent as the collector acknowledged: the next delivery
   * starts at the one after. Absent in what an older reins wrote.
   */
  sentBatches: z.number().int().nonnegative().default(0),
  lastError: z.string().nullable(),
};

export const OtlpEntry = z.discriminatedUnion("version", [
  /** What an older reins wrote: the whole trace as one request, split when it is sent. */
  z.object({
    ...entryFields,
    version: z.literal(1),
    request: z.looseObject({ resourceSpans: z.array(z.unknown()) }),
  }),
  /** The requests are in `<id>.requests.jsonl`, `batches` lines. */
  z.object({ ...entryFields, version: z.literal(2), batches: z.number().int().positive() }),
]);
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

const NEWLINE = Uint8Array.of(0x0a);

/**
 * A new pending entry for the requests `requests` makes, written before anything is sent: the
 * requests first, to `<id>.requests.jsonl` (0600, fsynced, each written as it is made, so only
 * one is held at a time), then the entry that names them. A process that dies in between leaves
 * a requests file no entry lists, which nothing reads.
 */
export async function createOtlpEntry(
  root: DataRoot,
  fields: {
    runIds: string[];
    requests: Iterable<TraceBody>;
    content: boolean;
    endpoint: string | null;
  },
): Promise<OtlpEntry> {
  const id = newId();
  let batches = 0;
  let spans = 0;
  await root.createFileAsync(root.layout.otlpRequests(id), async (file) => {
    for (const request of fields.requests) {
      // Written as they are: every string in them went through the process's redactor
      // (lib/otel/request.ts scrubs each one), the one writeFileAtomic applies to text, which
      // sees a secret in a raw string at least as surely as in its JSON-escaped form.
      for (const piece of [request.body, NEWLINE]) {
        for (let at = 0; at < piece.length;) at += await file.write(piece.subarray(at));
      }
      batches++;
      spans += request.spans;
    }
  });
  const now = nowIso();
  const entry: OtlpEntry = {
    type: OTLP_ENTRY_TYPE,
    version: 2,
    id,
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
    batches,
  };
  writeOtlpEntry(root, entry);
  return entry;
}

/**
 * How much of a requests file is read at a time: a young object (see STREAM_CHUNK of
 * lib/store/event_log.ts); a request of megabytes is joined from its pieces once.
 */
const READ_CHUNK = 16 * 1024;

/**
 * The requests file of a version 2 entry, opened (the same checks as every file of the data
 * root), or null when it is missing. Closed by disposing of it.
 */
export function openOtlpRequests(root: DataRoot, id: string): Deno.FsFile | null {
  return root.openForReading(root.layout.otlpRequests(id));
}

/**
 * The requests in an open requests file, each read as it is taken, in order; read once. Each is
 * a view of one buffer reused from line to line (fresh buffers would pile up outside V8's heap
 * until it collects), good until the next is taken.
 */
export function* otlpRequestsIn(file: Deno.FsFile): Generator<{ body: Uint8Array }> {
  const chunk = new Uint8Array(READ_CHUNK);
  let line = new Uint8Array(READ_CHUNK * 32);
  let length = 0;
  const take = (from: number, to: number) => {
    if (length + to - from > line.length) {
      const more = new Uint8Array(Math.max(length + to - from, line.length * 2));
      more.set(line.subarray(0, length));
      line = more;
    }
    line.set(chunk.subarray(from, to), length);
    length += to - from;
  };
  for (;;) {
    const n = file.readSync(chunk);
    if (n === null) break;
    let start = 0;
    for (
      let end = chunk.indexOf(NEWLINE[0]);
      end >= 0 && end < n;
      end = chunk.indexOf(NEWLINE[0], start)
    ) {
      take(start, end);
      start = end + 1;
      if (length > 0) yield { body: line.subarray(0, length) };
      length = 0;
    }
    take(start, n);
  }
  // A last line without its newline was never finished: createOtlpEntry writes the entry after.
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

/** Removes a sent entry, then its requests, progress and lock files. */
export function removeOtlpEntry(root: DataRoot, id: string): void {
  exports.remove(root, id);
  root.remove(root.layout.otlpRequests(id));
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
