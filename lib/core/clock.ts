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
 * clearTimeout"). For one-shot deadlines on a path every run takes;
 * the timer does not keep the process alive. A cancelled one fires into nothing.
 */
export function onceAfter(ms: number, fn: () => void): { cancel(): void } {
  let live = true;
  AbortSignal.timeout(Math.max(0, ms)).addEventListener("abort", () => {
    if (live) fn();
  }, { once: true });
  return {
    cancel() {
      live = false;
    },
  };
}
