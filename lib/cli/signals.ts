// The command line's signal handling for a turn, the one place that turns process signals into
// the engine's two AbortSignals: the first SIGINT or SIGTERM aborts `stop` (the run ends
// interrupted, "stopped by SIGINT"), a second one — or the grace period running out — aborts
// `kill`. Disposing removes the handlers.
import type { TurnSignals } from "../turn/mod.ts";

const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;
const KILL_GRACE_MS = 5_000;

export interface CliSignals extends TurnSignals, Disposable {
  /** Names the run being stopped in the line printed on the first signal. */
  runStarted(runId: string): void;
}

/**
 * How to send the signal that kills, named after the one that stops: a person at a terminal
 * presses Ctrl-C (SIGINT); a process manager or `kill` that sent SIGTERM sends it again. SIGKILL
 * of reins itself would leave its agent running until a later command reconciles the run.
 */
export function againToKill(signal: typeof STOP_SIGNALS[number]): string {
  return signal === "SIGINT"
    ? "press Ctrl-C again"
    : `send ${signal} again (kill -TERM ${Deno.pid})`;
}

/** Installs the handlers; `warn` prints the line that says the run is being stopped. */
export function turnSignals(
  warn: (message: string) => void,
  options: { graceMs?: number } = {},
): CliSignals {
  const stop = new AbortController();
  const kill = new AbortController();
  let runId: string | null = null;
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => {
      if (stop.signal.aborted) {
        kill.abort(`killed by a second ${signal}`);
        return;
      }
      warn(
        `stopping ${runId === null ? "the turn" : `run ${runId}`} (${signal}); ${
          againToKill(signal)
        } to kill it now`,
      );
      stop.abort(`stopped by ${signal}`);
      graceTimer = setTimeout(
        () => kill.abort(`killed ${options.graceMs ?? KILL_GRACE_MS} ms after ${signal}`),
        options.graceMs ?? KILL_GRACE_MS,
      );
      Deno.unrefTimer(graceTimer);
    };
    Deno.addSignalListener(signal, handler);
    return [signal, handler] as const;
  });
  return {
    stop: stop.signal,
    kill: kill.signal,
    runStarted(id) {
      runId = id;
    },
    [Symbol.dispose]() {
      // Only for a timer there is: clearTimeout(undefined) loads Deno's Node timers (clock.ts).
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
    },
  };
}
