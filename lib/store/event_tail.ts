// The incremental reader of one run's events.jsonl — the one every follower uses (`reins show
// --follow`, a turn waiting for `reins approve`): only the bytes appended since the last look are
// read, complete lines only, so a line being written is read whole on the next look. Every line is
// validated as the store reads it; damage is reported by line number, never thrown. It reads; it
// never writes, waits or reconciles (lib/session/follow.ts and lib/turn/decisions.ts do).
import { DataRootError } from "../core/errors.ts";
import { isInside } from "../core/paths.ts";
import type { RunEvent } from "./contracts.ts";
import type { DataRoot } from "./data_root.ts";
import { type LineProblem, parseEventLog } from "./event_log.ts";

const NEWLINE = 0x0a;
/**
 * Bytes read per read call: a long backlog is taken in pieces, not in one allocation. Small ones:
 * a piece's events are alive while its reader uses them, and every young-generation collection
 * copies what is alive, so `reins show` of 100,000 events took about a fifth longer in 1 MiB
 * pieces than in 64 KiB ones (`deno task bench views`, "reins show"; 16 KiB was no faster).
 */
const CHUNK_BYTES = 1 << 16;
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
  readonly #root: DataRoot;
  readonly #path: string;
  #offset = 0;
  #lines = 0;
  #lastSequence = -1;
  #checkedLink = false;
  #unread = 0;

  constructor(root: DataRoot, runId: string) {
    this.#root = root;
    this.runId = runId;
    this.#path = root.layout.events(runId);
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
   * The same, as pieces of about CHUNK_BYTES of the file each (empty pieces left out), so that a
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
        const batch = this.#take(decoder.decode(buffer.subarray(0, end + 1)));
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

  /** The events and problems of `text`, complete lines of the log that follow those read. */
  #take(text: string): TailBatch {
    const read = parseEventLog(text, this.runId);
    const base = this.#lines;
    // `text` ends at a newline, and each of its lines is an event or a problem: no need to count.
    this.#lines += read.tornLine === null
      ? read.events.length + read.problems.length
      : countLines(text);
    const problems = read.problems;
    if (base > 0) {
      for (let i = 0; i < problems.length; i++) {
        problems[i] = { line: base + problems[i].line, reason: problems[i].reason };
      }
    }
    // Events already read (a log rewritten from the start) are left out. Nearly always each
    // sequence follows the last: the parsed list is the batch, not copied into another.
    const events = read.events;
    let last = this.#lastSequence;
    let i = 0;
    while (i < events.length && events[i].sequence > last) last = events[i++].sequence;
    if (i < events.length) {
      const kept = events.slice(0, i);
      for (; i < events.length; i++) {
        if (events[i].sequence <= last) continue;
        last = events[i].sequence;
        kept.push(events[i]);
      }
      this.#lastSequence = last;
      return { events: kept, problems };
    }
    this.#lastSequence = last;
    return { events, problems };
  }

  #refuseLinkOut(): void {
    if (this.#checkedLink) return;
    const info = Deno.lstatSync(this.#path);
    if (
      info.isSymlink && !isInside(Deno.realPathSync(this.#path), Deno.realPathSync(this.#root.home))
    ) {
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
