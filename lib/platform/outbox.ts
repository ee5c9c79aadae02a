// The platform's outbox (lib/store/outbox.ts): one file per report (outbox/<id>.json, 0600),
// written before the first request and rewritten (atomically) after each step the platform
// acknowledged, so a report cut short by a crash or an outage resumes where it stopped and never
// repeats an acknowledged step. A report being delivered or changed is held by a lock on
// outbox/<id>.lock, which the OS releases if the process dies. A report is of N scenarios (one
// per run for `reins report`, one per scenario for a suite); see deliver.ts for how each kind
// fills it.
import { z } from "zod";
import { type DataRoot, UntrustedFileError } from "../store/data_root.ts";
import { Outbox, type ReadOutboxEntry } from "../store/outbox.ts";
import { ProvisionBody, ResultBody, ScenarioSelector } from "./wire.ts";

export const OUTBOX_ENTRY_TYPE = "reins.platform-report";

const IsoTime = z.iso.datetime({ offset: true });

export const RecordingStep = z.object({
  name: z.string().min(1),
  /** Absolute. */
  path: z.string().min(1),
  contentType: z.string(),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  state: z.enum(["pending", "sent", "failed"]),
  reason: z.string().nullable(),
});
export type RecordingStep = z.infer<typeof RecordingStep>;

export const CallStep = z.object({
  /** The run behind the call; null for a live suite's scenario that has not started yet. */
  runId: z.string().min(1).nullable(),
  scenarioKey: z.string(),
  /** The platform's row for this run, once allocated. */
  callExecutionId: z.string().nullable(),
  /**
   * The PENDING → ONGOING ping, sent when a live scenario starts: "none" for a scenario that had
   * finished before it was reported (no ping), "pending" until it is sent, "skipped" when the
   * platform refused it (it is best effort).
   */
  ongoing: z.enum(["none", "pending", "sent", "skipped"]),
  resultSent: z.boolean(),
  /** The result body, digest included, exactly as it is (re)sent; null until it finished. */
  result: ResultBody.nullable(),
  recordings: z.array(RecordingStep),
});
export type CallStep = z.infer<typeof CallStep>;

export const OutboxEntry = z.object({
  type: z.literal(OUTBOX_ENTRY_TYPE),
  version: z.literal(1),
  id: z.string().min(1),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  /** The platform it is for: a report is never moved to another one half way. */
  baseUrl: z.string(),
  workspaceId: z.string().nullable(),
  jobId: z.string().nullable(),
  name: z.string().min(1),
  provision: ProvisionBody,
  selectors: z.array(ScenarioSelector),
  runTestId: z.string().nullable(),
  /** "remembered": taken from platform.json; "provisioned": made by this report. */
  runTestSource: z.enum(["remembered", "provisioned"]).nullable(),
  /** How many times this report provisioned (part of the idempotency key). */
  provisions: z.number().int().nonnegative(),
  scenarioIds: z.array(z.string()),
  testExecutionId: z.string().nullable(),
  /** Whether the batch of calls was allocated. */
  allocated: z.boolean(),
  /** A report made before its scenarios ran (a suite reporting as it goes). */
  live: z.boolean().default(false),
  calls: z.array(CallStep).min(1),
  /** "pending": to be (re)tried; "refused": the platform said no, and retrying will not help. */
  state: z.enum(["pending", "refused"]),
  attempts: z.number().int().nonnegative(),
  lastError: z.string().nullable(),
  problems: z.array(z.string()),
});
export type OutboxEntry = z.infer<typeof OutboxEntry>;

const reports = new Outbox<OutboxEntry>({
  place: {
    folder: (layout) => layout.outbox(),
    entry: (layout, id) => layout.outboxEntry(id),
    lock: (layout, id) => layout.outboxLock(id),
  },
  schema: OutboxEntry,
  indent: 2,
});

/** Writes the entry (atomic replace, 0600), stamping updatedAt. */
export function writeEntry(root: DataRoot, entry: OutboxEntry): void {
  reports.write(root, entry);
}

export type ReadEntry = ReadOutboxEntry<OutboxEntry>;

/** The entry, null when it is gone (delivered meanwhile), or why it cannot be read. */
export function readEntry(root: DataRoot, id: string): ReadEntry | null {
  try {
    return reports.read(root, id);
  } catch (error) {
    // Someone else could have pointed it at another platform or other files: never sent.
    if (error instanceof UntrustedFileError) return { ok: false, reason: error.reason };
    throw error;
  }
}

/** Ids of the entries in the outbox, oldest first (ids are uuid v7). */
export function listEntryIds(root: DataRoot): string[] {
  return reports.ids(root);
}

/** Takes the entry's delivery lock without waiting, or returns null when another holds it. */
export function lockEntry(root: DataRoot, id: string): Disposable | null {
  return reports.lock(root, id);
}

/** Removes a delivered entry (the entry first: its lock file alone means nothing). */
export function removeEntry(root: DataRoot, id: string): void {
  reports.remove(root, id);
}
