// A run's events.jsonl: reading it (every line validated, damage reported, never thrown) and
// appending to it with the sequence assigned under the file's lock, so that any number of
// processes appending to one run get distinct, gap-free sequences. It knows nothing of run.json;
// the caller applies an event to the record in the hook that runs under the same lock.
import { nowIso } from "../core/clock.ts";
import { ReinsError } from "../core/errors.ts";
import { newId } from "../core/ids.ts";
import { redact, redactValue } from "../core/redact.ts";
import type { LockedTail, PrivateLog } from "../core/mod.ts";
import type { DataRoot } from "./data_root.ts";
import type { EventInput, RunEvent, SettledStatus } from "./contracts.ts";
import {
  isRunEvent,
  parseEventInput,
  terminalStatusOf,
  validateStoredEvent,
} from "./contract_runtime.ts";
import { EVENTS_FILE, shownPath } from "./run_files.ts";

/** `events.jsonl.garbage`: complete lines that were not JSON, set aside out of the log. */
export const GARBAGE_SUFFIX = ".garbage";

/** A line of events.jsonl that was skipped, with its 1-based line number and why. */
export interface LineProblem {
  line: number;
  reason: string;
}

export interface EventsRead {
  events: RunEvent[];
  /** Complete lines that were skipped: not JSON, not an event, or another run's. */
  problems: LineProblem[];
  /** The line number of a torn final line (no newline: a writer died mid-line), else null. */
  tornLine: number | null;
}

export { validateStoredEvent };

/** One complete line of an events.jsonl: its event, why it was skipped, or null when blank. */
function parseEventLine(
  body: string,
  line: number,
  runId: string | undefined,
): RunEvent | LineProblem | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    // An empty or blank line holds nothing (garbage an appender set aside is blanked).
    if (body.trim() === "") return null;
    return { line, reason: `not JSON: ${(error as Error).message}` };
  }
  // The common case without an allocation: the generated check passes and the run matches.
  if (isRunEvent(value) && (runId === undefined || value.runId === runId)) {
    return value as RunEvent;
  }
  const checked = validateStoredEvent(value);
  if (!checked.ok) return { line, reason: checked.reason };
  if (runId !== undefined && checked.event.runId !== runId) {
    return {
      line,
      reason: `belongs to run ${JSON.stringify(checked.event.runId)}, not this one`,
    };
  }
  return checked.event;
}

const isProblem = (read: RunEvent | LineProblem): read is LineProblem => "reason" in read;

/** Parses the text of an events.jsonl. Lines of another run are problems when `runId` is given. */
export function parseEventLog(text: string, runId?: string): EventsRead {
  const events: RunEvent[] = [];
  const problems: LineProblem[] = [];
  let tornLine: number | null = null;
  let start = 0;
  let line = 0;
  while (start < text.length) {
    line++;
    const end = text.indexOf("\n", start);
    if (end < 0) {
      tornLine = line;
      break;
    }
    const read = parseEventLine(text.slice(start, end), line, runId);
    start = end + 1;
    if (read === null) continue;
    if (isProblem(read)) problems.push(read);
    else events.push(read);
  }
  return { events, problems, tornLine };
}

/**
 * How much of an events.jsonl streamEvents() reads at a time: small enough that each piece's text
 * is an ordinary young object (a string over ~128 KiB is a large object, freed only by a full
 * collection: reading `deno task bench otel`'s 344 MB log twice peaked at 167 MiB by 256 KiB,
 * 72 MiB by 16 KiB).
 */
const STREAM_CHUNK = 16 * 1024;

/**
 * A run's events read line by line, for a reader that must not hold the whole log (a trace export
 * of a million events): what parseEventLog() returns, as it goes. Each skipped line is told to
 * `onProblem` when reached; a torn final line is left out, as parseEventLog() leaves it. Each
 * iteration opens the file again (under the same checks as readText), so the result may be read
 * more than once; a missing log reads as empty.
 */
export function streamEvents(
  root: DataRoot,
  runId: string,
  onProblem: (problem: LineProblem) => void = () => {},
): Iterable<RunEvent> {
  return {
    *[Symbol.iterator]() {
      using file = root.openForReading(root.layout.events(runId));
      if (file === null) return;
      const bytes = new Uint8Array(STREAM_CHUNK);
      // Each line is decoded from its own bytes: a line sliced from a decoded piece keeps the
      // whole piece alive, so every young collection found 16-32 KiB of text still held, and
      // what survives them is what grows V8's young generation over a long read. A newline byte
      // is never inside a UTF-8 sequence, so this decodes what readEvents() does (a byte order
      // mark kept, as its reading of the file keeps it).
      // The line being read when a piece ends, its bytes so far (a long line's, joined once).
      let carry: Uint8Array = new Uint8Array(0);
      let carried = 0;
      const lineDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
      let line = 0;
      for (;;) {
        const n = file.readSync(bytes);
        if (n === null) break;
        const piece = bytes.subarray(0, n);
        let start = 0;
        for (let end = piece.indexOf(0x0a); end >= 0; end = piece.indexOf(0x0a, start)) {
          line++;
          let body: string;
          if (carried > 0) {
            carry = appended(carry, carried, piece.subarray(start, end));
            body = lineDecoder.decode(carry.subarray(0, carried + end - start));
            carried = 0;
          } else body = lineDecoder.decode(piece.subarray(start, end));
          const read = parseEventLine(body, line, runId);
          start = end + 1;
          if (read === null) continue;
          if (isProblem(read)) onProblem(read);
          else yield read;
        }
        if (start < n) {
          carry = appended(carry, carried, piece.subarray(start));
          carried += n - start;
        }
      }
      // What is left has no newline: a torn final line, never an event.
    },
  };
}

/** `held` bytes of `buffer` and then `more`, in `buffer` when it has room (else a larger one). */
function appended(buffer: Uint8Array, held: number, more: Uint8Array): Uint8Array {
  let into = buffer;
  if (held + more.length > buffer.length) {
    into = new Uint8Array(Math.max(held + more.length, buffer.length * 2, 1024));
    into.set(buffer.subarray(0, held));
  }
  into.set(more, held);
  return into;
}

/** Reads and validates a run's events; a missing log reads as empty. */
export function readEvents(root: DataRoot, runId: string): EventsRead {
  const text = root.readText(root.layout.events(runId));
  if (text === null) return { events: [], problems: [], tornLine: null };
  return parseEventLog(text, runId);
}

/** The problems of a read as one line each: `runs/<id>/events.jsonl:12: reason`. */
export function describeProblems(runId: string, read: EventsRead): string[] {
  const file = shownPath(runId, EVENTS_FILE);
  return read.problems.map((problem) => `${file}:${problem.line}: skipped: ${problem.reason}`);
}

// Lines that may settle a run, found before paying for JSON.parse.
const NOTABLE_LINE = /"type"\s*:\s*"(?:completed|failed|status\.changed)"/;
const decoder = new TextDecoder();

/** Why an input cannot be recorded, for the person who wrote the driver or the protocol line. */
function invalidEvent(type: unknown, reason: string): ReinsError {
  return new ReinsError(
    "usage",
    `Cannot record ${typeof type === "string" ? `a ${type} event` : "the event"}: ${reason}`,
    { hint: "see docs/events.md for each event type's payload" },
  );
}

/**
 * The handle of this process that holds each log's lock across a burst (see EventLog.open).
 * Process-wide on purpose, unlike everything else the store keeps: flock is held per open file,
 * so two handles on one log in one process — two Stores, or an owner and `appendToRun` — would
 * block this thread on itself, whichever Store they came from.
 */
const holders = new Map<string, EventLog>();

/**
 * The appending end of one run's log, kept open for many appends. Under the lock it catches up on
 * what other processes appended since its last look (reading only those bytes), so it always
 * knows the last sequence and whether the run has settled.
 */
export interface EventLogOptions {
  /** fdatasync after every event (default: only when the caller syncs). */
  syncEachEvent?: boolean;
  /** See EventLog.open. */
  holdBursts?: boolean;
  /**
   * Runs once, with this handle's first sync: what must be made durable with the log but need
   * not be before (the run's owner syncs the directories its creation renamed into place) —
   * `blocking` after sync(), `awaited` alongside syncAsync()'s fdatasync.
   */
  afterFirstSync?: FirstSync;
}

/** See EventLogOptions.afterFirstSync: the same work, holding the thread or not. */
export interface FirstSync {
  blocking(): void;
  awaited(): Promise<void>;
}

export class EventLog {
  readonly runId: string;
  readonly sessionId: string;
  readonly #log: PrivateLog;
  readonly #syncEachEvent: boolean;
  readonly #runIdJson: string;
  readonly #sessionIdJson: string;
  readonly #holdBursts: boolean;
  readonly #warn: (message: string) => void;
  #afterFirstSync: FirstSync | null;
  #holding = false;
  /** How much of the file this handle has taken into account. */
  #seen = 0;
  #lastSequence = -1;
  #settled: SettledStatus | null = null;

  private constructor(
    runId: string,
    sessionId: string,
    log: PrivateLog,
    options: EventLogOptions,
    warn: (message: string) => void,
  ) {
    this.#warn = warn;
    this.runId = runId;
    this.sessionId = sessionId;
    this.#log = log;
    this.#syncEachEvent = options.syncEachEvent ?? false;
    this.#holdBursts = options.holdBursts ?? false;
    this.#afterFirstSync = options.afterFirstSync ?? null;
    this.#runIdJson = JSON.stringify(runId);
    this.#sessionIdJson = JSON.stringify(sessionId);
  }

  /**
   * `holdBursts` (for the run's owner): keep the lock from one append to the next until the
   * current task ends, so a burst of events (a chunk of a harness's output) pays for one lock.
   * Other processes wait for the burst; another handle of this process takes the lock over.
   */
  static open(
    root: DataRoot,
    runId: string,
    sessionId: string,
    options: EventLogOptions = {},
  ): EventLog {
    const log = root.openLog(root.layout.events(runId));
    return new EventLog(runId, sessionId, log, options, (message) => root.warn(message));
  }

  /**
   * Creates the run's log, which must not exist yet, at `at` (see DataRoot.createLog): for the
   * run's owner, in the staging directory the run is made in.
   */
  static create(
    root: DataRoot,
    runId: string,
    sessionId: string,
    at: string,
    options: EventLogOptions = {},
  ): EventLog {
    const log = root.createLog(root.layout.events(runId), at);
    return new EventLog(runId, sessionId, log, options, (message) => root.warn(message));
  }

  /** The outcome the log holds (its first terminal event), as of this handle's last look. */
  get settled(): SettledStatus | null {
    return this.#settled;
  }

  get lastSequence(): number {
    return this.#lastSequence;
  }

  /**
   * Validates `input`, redacts its secrets, stamps it (id, next sequence, time; `ignored` when the
   * run has settled), writes it as one line and returns the stored event. `afterWrite` runs under the lock.
   */
  append(input: EventInput, afterWrite?: (event: RunEvent) => void): RunEvent {
    const parsed = parseEventInput(input);
    if (!parsed.ok) throw invalidEvent((input as { type?: unknown })?.type, parsed.reason);
    const { type } = parsed.event;
    let { payload, native } = parsed.event;
    // Serialised once, before the lock; secrets never reach the log, nor run.json and the index
    // that are derived from it.
    let body: string;
    try {
      body = JSON.stringify(payload);
      if (redact(body) !== body) {
        payload = redactValue(payload);
        body = JSON.stringify(payload);
      }
      if (native !== undefined) {
        let nativeJson = JSON.stringify(native);
        if (nativeJson === undefined) throw new TypeError("native has no JSON form");
        if (redact(nativeJson) !== nativeJson) {
          native = redactValue(native);
          nativeJson = JSON.stringify(native);
        }
        body += `,"native":${nativeJson}`;
      }
    } catch (error) {
      throw invalidEvent(type, `it is not JSON (${(error as Error).message})`);
    }
    let event: RunEvent | undefined;
    this.#enter();
    this.#log.appendWith((tail) => {
      this.#catchUp(tail);
      const stamped: Record<string, unknown> = {
        id: newId(),
        runId: this.runId,
        sessionId: this.sessionId,
        sequence: this.#lastSequence + 1,
        timestamp: nowIso(),
        type,
        payload,
      };
      if (native !== undefined) stamped.native = native;
      if (this.#settled !== null) stamped.ignored = `run already ${this.#settled}`;
      event = stamped as RunEvent;
      // The envelope's fields are known to need no escaping but the ids: the line is built
      // around JSON.stringify(payload) rather than stringifying the whole event again.
      let line =
        `{"id":"${stamped.id}","runId":${this.#runIdJson},"sessionId":${this.#sessionIdJson},` +
        `"sequence":${stamped.sequence},"timestamp":"${stamped.timestamp}","type":"${type}","payload":` +
        body;
      if (stamped.ignored !== undefined) line += `,"ignored":${JSON.stringify(stamped.ignored)}`;
      return `${line}}`;
    }, (size) => {
      const written = event!;
      this.#seen = size;
      this.#lastSequence = written.sequence;
      if (written.ignored === undefined && this.#settled === null) {
        this.#settled = terminalStatusOf(written);
      }
      if (this.#syncEachEvent) this.sync();
      afterWrite?.(written);
    });
    return event!;
  }

  /** Runs `fn` under the log's lock, after catching up: for changes that must not interleave. */
  locked<T>(fn: () => T): T {
    let result: T | undefined;
    this.#enter();
    this.#log.appendWith((tail) => {
      this.#catchUp(tail);
      result = fn();
      return null;
    });
    return result as T;
  }

  /** Flushes the log to disk (fdatasync), and the first time runs afterFirstSync. */
  sync(): void {
    this.#log.sync();
    const first = this.#afterFirstSync;
    if (first === null) return;
    this.#afterFirstSync = null;
    first.blocking();
  }

  /**
   * sync() without holding the thread (the fdatasync, and afterFirstSync's work, run on Deno's
   * blocking pool): resolves once what was appended before the call is on disk.
   */
  async syncAsync(): Promise<void> {
    const first = this.#afterFirstSync;
    if (first === null) return await this.#log.syncAsync();
    // At the same time, not one after the other: neither needs the other on disk first, and the
    // caller waits for both (a crash meanwhile leaves what a crash before either would).
    await Promise.all([this.#log.syncAsync(), first.awaited()]);
    // Forgotten only once done: a sync() meanwhile did the work again rather than skip it.
    if (this.#afterFirstSync === first) this.#afterFirstSync = null;
  }

  close(): void {
    this.#stopHolding();
    this.#log.close();
  }

  /** Before taking the lock: another handle of this process holding it lets go (flock would
   * otherwise block this thread on itself), and a bursting owner starts holding. */
  #enter(): void {
    const holder = holders.get(this.#log.path);
    if (holder !== undefined && holder !== this) holder.#stopHolding();
    if (this.#holdBursts && !this.#holding) {
      this.#log.hold();
      this.#holding = true;
      holders.set(this.#log.path, this);
      queueMicrotask(() => this.#stopHolding());
    }
  }

  #stopHolding(): void {
    if (!this.#holding) return;
    this.#holding = false;
    if (holders.get(this.#log.path) === this) holders.delete(this.#log.path);
    this.#log.release();
  }

  /**
   * Sets the complete lines that are not JSON aside, as a torn tail is: their bytes go to
   * `events.jsonl.garbage` (with their line numbers), and they are blanked in the log, so that
   * readers stop warning of them on every read. Valid lines are never touched (see
   * PrivateLog.setAside). Said once, naming where the bytes are kept.
   */
  #setAsideGarbage(tail: LockedTail, from: number, bytes: Uint8Array): void {
    const found = garbageLines(bytes, from);
    if (found.length === 0) return;
    // Line numbers count from the file's start: the lines before `from` are counted once here.
    let line = 1;
    if (from > 0) line += countNewlines(tail.read(0, from), 0, from);
    let counted = 0;
    const numbered = found.map(({ start, end }) => {
      line += countNewlines(bytes, counted, start - from);
      counted = start - from;
      return { start, end, line };
    });
    const evidence = `${this.#log.path}${GARBAGE_SUFFIX}`;
    tail.setAside(numbered, evidence);
    const file = shownPath(this.runId, EVENTS_FILE);
    this.#warn(
      `${file}: set aside ${numbered.length} line${numbered.length === 1 ? "" : "s"} that ${
        numbered.length === 1 ? "was" : "were"
      } not JSON (line ${numbered.map((entry) => entry.line).join(", ")}), blanked in the log; ` +
        `${
          numbered.length === 1 ? "its bytes are" : "their bytes are"
        } kept in ${file}${GARBAGE_SUFFIX}`,
    );
  }

  #catchUp(tail: LockedTail): void {
    if (tail.size === this.#seen) return;
    let from = this.#seen;
    if (tail.size < from) {
      // Shorter than we saw: someone truncated the file. Start over from its start.
      from = 0;
      this.#lastSequence = -1;
      this.#settled = null;
    }
    const bytes = tail.read(from, tail.size);
    this.#setAsideGarbage(tail, from, bytes);
    const text = decoder.decode(bytes);
    this.#seen = tail.size;
    const lines = text.split("\n");
    for (const line of lines) {
      if (!NOTABLE_LINE.test(line)) continue;
      const event = parseLoosely(line);
      if (event === null || event.ignored !== undefined) continue;
      if (this.#settled === null) this.#settled = terminalStatusOf(event as RunEvent);
    }
    // The last line that carries a sequence carries the highest one (they only grow).
    for (let i = lines.length - 1; i >= 0; i--) {
      const event = lines[i] === "" ? null : parseLoosely(lines[i]);
      if (event !== null && Number.isSafeInteger(event.sequence)) {
        this.#lastSequence = Math.max(this.#lastSequence, event.sequence as number);
        break;
      }
    }
  }
}

/**
 * The complete lines of `bytes` (the log from offset `from`) that are not JSON at all, found as the
 * appender catches up: a line shaped as reins writes one (`{"id":"…}`) is taken for JSON without
 * parsing it (the readers judge it: parsing every line would cost a catch-up over a large log
 * half again), anything else is parsed; empty and blank lines (garbage set aside before) hold
 * nothing.
 */
function garbageLines(bytes: Uint8Array, from: number): { start: number; end: number }[] {
  const found: { start: number; end: number }[] = [];
  let start = 0;
  for (let end = bytes.indexOf(0x0a); end >= 0; end = bytes.indexOf(0x0a, start)) {
    const line = bytes.subarray(start, end);
    if (line.length > 0 && !(startsLikeAnEvent(line) && line[line.length - 1] === 0x7d)) {
      if (!line.every((byte) => byte === 0x20)) {
        try {
          JSON.parse(decoder.decode(line));
        } catch {
          found.push({ start: from + start, end: from + end });
        }
      }
    }
    start = end + 1;
  }
  return found;
}

const EVENT_START = new TextEncoder().encode('{"id":"');

function startsLikeAnEvent(line: Uint8Array): boolean {
  if (line.length < EVENT_START.length) return false;
  for (let i = 0; i < EVENT_START.length; i++) if (line[i] !== EVENT_START[i]) return false;
  return true;
}

/** The newlines in bytes [from, to). */
function countNewlines(bytes: Uint8Array, from: number, to: number): number {
  let count = 0;
  for (let i = bytes.indexOf(0x0a, from); i >= 0 && i < to; i = bytes.indexOf(0x0a, i + 1)) count++;
  return count;
}

/** A line as an object with the envelope fields the appender needs, or null. */
function parseLoosely(
  line: string,
): { type?: unknown; payload?: unknown; sequence?: unknown; ignored?: unknown } | null {
  try {
    const value = JSON.parse(line);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    if (value.type === "status.changed" && typeof value.payload?.status !== "string") return null;
    return value;
  } catch {
    return null;
  }
}
