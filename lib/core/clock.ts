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
 * process loads Deno's Node timers (~7 ms of CPU: `deno task bench startup`, "the first
 * clearTimeout"). For one-shot deadlines on a path every run takes. The timer holds the event
 * loop until it comes due, cancelled or not (AbortSignal.timeout does, in Deno 2.9): the CLI does
 * not wait for it, since main.ts and the binary exit when runCli returns, but a caller that lets
 * the event loop drain instead waits out the longest deadline armed. A cancelled one fires into
 * nothing and holds nothing of `fn`.
 */
export function onceAfter(ms: number, fn: () => void): { cancel(): void } {
  // Dropped on cancel: the timer stays out until it comes due, and whatever `fn` holds (a turn's
  // child process and its pipes' buffers) must not be kept that long.
  const armed: { fn: (() => void) | null } = { fn };
  AbortSignal.timeout(Math.max(0, ms)).addEventListener("abort", () => {
    const due = armed.fn;
    armed.fn = null;
    due?.();
  }, { once: true });
  return {
    cancel() {
      armed.fn = null;
    },
  };
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
 * disposed it holds nothing of its owner, however long that timer is still out.
 */
export class Countdown {
  readonly #ms: number;
  #fire: (() => void) | null;
  /** performance.now() at which it fires; Infinity while cancelled. */
  #deadline = Infinity;
  #timerOut = false;

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

  /** Never fires again, and lets go of `fire`. */
  dispose(): void {
    this.#deadline = Infinity;
    this.#fire = null;
  }

  #wait(ms: number): void {
    // A timer already out comes due no later than the deadline: each one is armed for at most
    // `ms`, at or before the restart that set it.
    if (this.#timerOut) return;
    this.#timerOut = true;
    // A longer wait would fire at once (a 32-bit timer overflows): this one comes due early.
    onceAfter(Math.min(ms, LONGEST_TIMER_MS), () => {
      this.#timerOut = false;
      const left = this.#deadline - performance.now();
      if (left === Infinity || this.#fire === null) return;
      if (left > 0) return this.#wait(left);
      this.#deadline = Infinity;
      this.#fire();
    });
  }
}
