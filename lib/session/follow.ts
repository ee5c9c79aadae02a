// Following a run from any process: its events.jsonl read incrementally by byte offset (only the
// bytes appended since the last look, complete lines only, so a line being written is read whole
// on the next poll), until the run settles — a terminal event in the log, or a settled status in
// run.json. A run whose owner died without settling it is reconciled (marked interrupted) so that
// a follower never waits forever. It reads and reconciles; it prints nothing.
import { sleep } from "../core/clock.ts";
import { DataRootError } from "../core/errors.ts";
import { isInside } from "../core/paths.ts";
import { terminalStatusOf } from "../store/contracts.ts";
import type { RunEvent, SettledStatus } from "../store/contracts.ts";
import type { PendingDecision } from "../store/decisions.ts";
import { type LineProblem, parseEventLog } from "../store/event_log.ts";
import { ownerState } from "../store/liveness.ts";
import { readRecordFile } from "../store/run_record.ts";
import { eventsPath, isActive } from "../store/run_files.ts";

const NEWLINE = 0x0a;
/** Bytes read per read call: a long backlog is taken in pieces, not in one allocation. */
const CHUNK_BYTES = 1 << 20;
const decoder = new TextDecoder();

export interface TailBatch {
  events: RunEvent[];
  /** Complete lines that were skipped, with their 1-based line numbers in the file. */
  problems: LineProblem[];
}

/**
 * The unread part of one run's events.jsonl. Each read() returns the events on the complete lines
 * appended since the last one; the offset only ever moves past whole lines.
 */
export class EventTail {
  readonly runId: string;
  readonly #home: string;
  readonly #path: string;
  #offset = 0;
  #lines = 0;
  #lastSequence = -1;
  #checkedLink = false;
  #unread = 0;

  constructor(home: string, runId: string) {
    this.#home = home;
    this.runId = runId;
    this.#path = eventsPath(home, runId);
  }

  /** Events on the complete lines appended since the last read, all in one batch. */
  read(): TailBatch {
    const batch: TailBatch = { events: [], problems: [] };
    for (const piece of this.pieces()) {
      batch.events.push(...piece.events);
      batch.problems.push(...piece.problems);
    }
    return batch;
  }

  /** The same, a piece at a time: `onBatch` sees each piece before the next is read. */
  readEach(onBatch: (batch: TailBatch) => void): void {
    for (const piece of this.pieces()) onBatch(piece);
  }

  /**
   * The same, as pieces of about a mebibyte of the file each (empty pieces left out), so that a
   * long backlog is never held whole.
   */
  *pieces(): Generator<TailBatch, void> {
    let file: Deno.FsFile;
    try {
      this.#refuseLinkOut();
      file = Deno.openSync(this.#path, { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    try {
      const size = file.statSync().size;
      if (size < this.#offset) {
        // Shorter than what we read: the log was rewritten. Read it again, skipping what we showed.
        this.#offset = 0;
        this.#lines = 0;
      }
      file.seekSync(this.#offset, Deno.SeekMode.Start);
      // One buffer for the whole read: what follows the last newline of a piece (the start of a
      // line) moves to its front, and the next piece is read in after it.
      let buffer = new Uint8Array(Math.min(CHUNK_BYTES, Math.max(size - this.#offset, 1)));
      let kept = 0;
      let position = this.#offset;
      while (position < size) {
        if (kept === buffer.length) {
          // A line longer than the buffer: make room for it.
          const bigger = new Uint8Array(buffer.length * 2);
          bigger.set(buffer);
          buffer = bigger;
        }
        const n = file.readSync(
          buffer.subarray(kept, Math.min(buffer.length, kept + size - position)),
        );
        if (n === null || n === 0) break;
        position += n;
        const filled = kept + n;
        const end = buffer.subarray(0, filled).lastIndexOf(NEWLINE);
        if (end < 0) {
          kept = filled;
          continue;
        }
        const batch: TailBatch = { events: [], problems: [] };
        this.#take(decoder.decode(buffer.subarray(0, end + 1)), batch);
        this.#offset += end + 1;
        buffer.copyWithin(0, end + 1, filled);
        kept = filled - end - 1;
        if (batch.events.length > 0 || batch.problems.length > 0) yield batch;
      }
      // A last line without its newline is being written (or was torn): next time, whole.
      this.#unread = kept;
    } finally {
      file.close();
    }
  }

  /**
   * The line number of an incomplete last line as of the last read (a line being written, or one
   * a writer died in the middle of), else null.
   */
  get incompleteLine(): number | null {
    return this.#unread > 0 ? this.#lines + 1 : null;
  }

  #take(text: string, batch: TailBatch): void {
    const read = parseEventLog(text, this.runId);
    const base = this.#lines;
    this.#lines += countLines(text);
    for (const problem of read.problems) {
      batch.problems.push({ line: base + problem.line, reason: problem.reason });
    }
    for (const event of read.events) {
      if (event.sequence <= this.#lastSequence) continue;
      this.#lastSequence = event.sequence;
      batch.events.push(event);
    }
  }

  #refuseLinkOut(): void {
    if (this.#checkedLink) return;
    const info = Deno.lstatSync(this.#path);
    if (info.isSymlink && !isInside(Deno.realPathSync(this.#path), Deno.realPathSync(this.#home))) {
      throw new DataRootError(
        `Refusing to follow the link ${
          JSON.stringify(this.#path)
        }: it points outside the data root`,
        { hint: "remove the link; reins reads only inside its data root" },
      );
    }
    this.#checkedLink = true;
  }
}

function countLines(text: string): number {
  let count = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) count++;
  return count;
}

export interface FollowOptions {
  /** Stops following (the generator returns) when aborted. */
  signal?: AbortSignal;
  /** Time between looks at the log when nothing new came (default 100 ms). */
  intervalMs?: number;
  /** Time between looks at run.json and the owner while the log is quiet (default 500 ms). */
  recordCheckMs?: number;
}

/**
 * The run's events in batches, from the first, as they are appended; returns the status the run
 * settled with (or null when `signal` stopped it first). Reconciles a run whose owner is gone.
 */
export async function* followRun(
  home: string,
  runId: string,
  options: FollowOptions = {},
): AsyncGenerator<TailBatch, SettledStatus | null> {
  const intervalMs = options.intervalMs ?? 100;
  const recordCheckMs = options.recordCheckMs ?? 500;
  const tail = new EventTail(home, runId);
  let lastCheck = -Infinity;
  let recordSettled: SettledStatus | null = null;
  while (!options.signal?.aborted) {
    let settled: SettledStatus | null = null;
    let quiet = true;
    for (const piece of tail.pieces()) {
      quiet &&= piece.events.length === 0;
      for (const event of piece.events) {
        if (event.ignored === undefined) settled ??= terminalStatusOf(event);
      }
      yield piece;
    }
    // Whatever was appended with the outcome (late events, kept as evidence) is shown too.
    if (settled !== null) return settled;
    // run.json settled and the log read after it: nothing more will come.
    if (recordSettled !== null) return recordSettled;
    if (quiet && performance.now() - lastCheck >= recordCheckMs) {
      lastCheck = performance.now();
      recordSettled = await settledStatus(home, runId);
      // Read once more before returning: the log is written before the record.
      if (recordSettled !== null) continue;
    }
    // A stop ends the wait; the loop then sees the signal and returns.
    await sleep(intervalMs, options.signal).catch(() => {});
  }
  return null;
}

/** The run's settled status from run.json, reconciling it first when its owner is gone. */
async function settledStatus(home: string, runId: string): Promise<SettledStatus | null> {
  const status = recordStatus(home, runId);
  if (status !== null && !isActive(status)) return status as SettledStatus;
  if (ownerState(home, runId) !== "gone") return null;
  const { reconcileRun } = await import("../store/reconcile.ts");
  reconcileRun(home, runId);
  // The interruption is in the log now; the next read brings it.
  return null;
}

function recordStatus(home: string, runId: string): string | null {
  const file = readRecordFile(home, runId);
  return file.state === "ok" ? file.record.status : null;
}

/**
 * Approvals and questions asked and not yet answered, kept up to date event by event (the
 * follower's version of the store's pendingDecisions, which needs every event at once).
 */
export class PendingTracker {
  readonly #pending = new Map<string, PendingDecision>();
  readonly #announced = new Set<string>();

  add(event: RunEvent): void {
    if (event.ignored !== undefined) return;
    switch (event.type) {
      case "approval.requested":
      case "question.requested": {
        const kind = event.type === "approval.requested" ? "approval" : "question";
        const id = event.type === "approval.requested"
          ? event.payload.approvalId
          : event.payload.questionId;
        const key = `${kind}:${id}`;
        if (this.#pending.has(key) || this.#announced.has(key)) return;
        this.#pending.set(key, {
          kind,
          id,
          eventId: event.id,
          sequence: event.sequence,
          requestedAt: event.timestamp,
          payload: event.payload,
        });
        return;
      }
      case "approval.resolved":
        this.#pending.delete(`approval:${event.payload.approvalId}`);
        this.#announced.add(`approval:${event.payload.approvalId}`);
        return;
      case "question.answered":
        this.#pending.delete(`question:${event.payload.questionId}`);
        this.#announced.add(`question:${event.payload.questionId}`);
        return;
      default:
        return;
    }
  }

  /** Pending decisions not returned by an earlier call: each is announced once. */
  takeNew(): PendingDecision[] {
    const fresh: PendingDecision[] = [];
    for (const [key, decision] of this.#pending) {
      if (this.#announced.has(key)) continue;
      this.#announced.add(key);
      fresh.push(decision);
    }
    return fresh;
  }
}
