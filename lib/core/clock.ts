// Time for the rest of lib/: the one ISO timestamp and the one abortable wait. Free of
// dependencies (every start-up path may import it).

let isoMs = -1;
let isoText = "";

/** The time now as an ISO string; one Date per millisecond, however many events it stamps. */
export function nowIso(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts (at once if it
 * already has). The timer is cleared either way, so a wait cut short keeps no process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Calls `fn` once after `ms`, unless cancelled first — without setTimeout, whose first use in a
 * process loads Deno's Node timers (~4–9 ms: `deno task bench startup`, "the first
 * clearTimeout"). For one-shot deadlines on a path every run takes.
 *
 * The deadlines wait in one queue, earliest first, and a timer (AbortSignal.timeout, which cannot
 * be cleared) is out only for the earliest: a cancelled deadline leaves the queue at once, with
 * whatever `fn` holds. One timer per call, out until due however soon it was cancelled, kept a
 * turn's 2 s pipe grace and 600 s idle timeout (each ~0.5 KiB with its signal) alive long after the
 * turn: a suite's heap after the run grew with the turns of its last 2 s, and a long-lived process
 * held one per turn of the last 10 minutes. A timer out holds the event loop until it comes due: the
 * CLI does not wait for it (main.ts and the binary exit when runCli returns); a caller that lets
 * the event loop drain instead waits out the earliest deadline's timer, and any armed for a deadline
 * since cancelled.
 */
export function onceAfter(ms: number, fn: () => void): { cancel(): void } {
  const deadline: Deadline = {
    at: performance.now() + Math.max(0, ms),
    seq: sequence++,
    fn,
    slot: 0,
  };
  enqueue(deadline);
  armEarliest();
  return {
    cancel() {
      if (deadline.fn === null) return;
      deadline.fn = null;
      dequeue(deadline);
    },
  };
}

interface Deadline {
  /** performance.now() at which it is due. */
  at: number;
  /** The order of the calls, for deadlines due at the same time. */
  seq: number;
  /** null once fired or cancelled. */
  fn: (() => void) | null;
  /** Its index in `queue`. */
  slot: number;
}

/** The deadlines not yet due nor cancelled: a binary heap, earliest first. */
const queue: Deadline[] = [];
let sequence = 0;
/**
 * The deadlines the timers out were armed for, latest first: a timer is armed only for a deadline
 * earlier than every one out, so the last pushed is the earliest, and comes due first.
 */
const out: number[] = [];

function before(a: Deadline, b: Deadline): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function put(deadline: Deadline, slot: number): void {
  queue[slot] = deadline;
  deadline.slot = slot;
}

function siftUp(slot: number): void {
  const deadline = queue[slot];
  while (slot > 0) {
    const parent = (slot - 1) >> 1;
    if (!before(deadline, queue[parent])) break;
    put(queue[parent], slot);
    slot = parent;
  }
  put(deadline, slot);
}

function siftDown(slot: number): void {
  const deadline = queue[slot];
  while (true) {
    const left = 2 * slot + 1;
    if (left >= queue.length) break;
    const right = left + 1;
    const child = right < queue.length && before(queue[right], queue[left]) ? right : left;
    if (!before(queue[child], deadline)) break;
    put(queue[child], slot);
    slot = child;
  }
  put(deadline, slot);
}

function enqueue(deadline: Deadline): void {
  deadline.slot = queue.length;
  queue.push(deadline);
  siftUp(deadline.slot);
}

function dequeue(deadline: Deadline): void {
  const slot = deadline.slot;
  const last = queue.pop()!;
  if (last === deadline) return;
  put(last, slot);
  siftDown(slot);
  siftUp(last.slot);
}

/** Arms a timer for the earliest deadline, unless one out comes due no later. */
function armEarliest(): void {
  const earliest = queue[0];
  if (earliest === undefined) return;
  const at = earliest.at;
  if (out.length > 0 && out[out.length - 1] <= at) return;
  out.push(at);
  const wait = Math.min(Math.max(0, Math.ceil(at - performance.now())), LONGEST_TIMER_MS);
  AbortSignal.timeout(wait).addEventListener("abort", () => {
    // Nearly always the last pushed; one armed for a later deadline may come due in the same tick.
    const index = out.lastIndexOf(at);
    if (index !== -1) out.splice(index, 1);
    fireDue();
    armEarliest();
  }, { once: true });
}

/** Calls what is due, earliest first; one that throws is reported as uncaught, after the rest. */
function fireDue(): void {
  const now = performance.now();
  // What these calls arm waits for a timer of its own, as if each had had its own timer.
  const armedSince = sequence;
  const thrown: unknown[] = [];
  while (queue.length > 0 && queue[0].at <= now && queue[0].seq < armedSince) {
    const deadline = queue[0];
    dequeue(deadline);
    const fn = deadline.fn!;
    deadline.fn = null;
    try {
      fn();
    } catch (error) {
      thrown.push(error);
    }
  }
  for (const error of thrown) reportError(error);
}

/** The longest wait a timer takes as asked; a longer one fires at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * A deadline that activity pushes back: `fire` runs once `ms` have passed since the last
 * restart(), unless cancel()led first — for an idle timeout reset by every chunk a child writes.
 * Built on onceAfter, not setTimeout, since a harness's turn arms it while the CLI starts up, and
 * the first setTimeout loads Deno's Node timers (the cost of `deno task bench startup`'s "the
 * first clearTimeout (Deno's Node timers)", the same module). A restart is a stamp, not a timer:
 * one timer is out at a time, and when it comes due early it waits out what is left of the
 * deadline (so a deadline past what a timer can wait, 2^31 - 1 ms, is waited out in steps). Once
 * disposed it holds nothing of its owner, and its deadline has left onceAfter's queue.
 */
export class Countdown {
  readonly #ms: number;
  #fire: (() => void) | null;
  /** performance.now() at which it fires; Infinity while cancelled. */
  #deadline = Infinity;
  /** The one timer out, if any. */
  #timer: { cancel(): void } | null = null;

  constructor(ms: number, fire: () => void) {
    this.#ms = ms;
    this.#fire = fire;
  }

  /** Fires `ms` from now (whatever was due before). */
  restart(): void {
    if (this.#fire === null) return;
    this.#deadline = performance.now() + this.#ms;
    this.#wait(this.#ms);
  }

  /** Does not fire until restarted. */
  cancel(): void {
    this.#deadline = Infinity;
  }

  /** Never fires again, and lets go of `fire` and of its timer. */
  dispose(): void {
    this.#deadline = Infinity;
    this.#fire = null;
    this.#timer?.cancel();
    this.#timer = null;
  }

  #wait(ms: number): void {
    // A timer already out comes due no later than the deadline: each one is armed for at most
    // `ms`, at or before the restart that set it.
    if (this.#timer !== null || this.#fire === null) return;
    // A longer wait would fire at once (a 32-bit timer overflows): this one comes due early.
    this.#timer = onceAfter(Math.min(ms, LONGEST_TIMER_MS), () => {
      this.#timer = null;
      const left = this.#deadline - performance.now();
      if (left === Infinity || this.#fire === null) return;
      if (left > 0) return this.#wait(left);
      this.#deadline = Infinity;
      this.#fire();
    });
  }
}
