// The command line's signal handling for a turn, the one place that turns process signals into
// the engine's two AbortSignals: the first SIGINT or SIGTERM aborts `stop` (the run ends
// interrupted, "stopped by SIGINT"), a second one — or the grace period running out — aborts
// `kill`. Disposing removes the handlers.
import type { TurnSignals } from "../turn/types.ts";

const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;
const KILL_GRACE_MS = 5_000;

export interface CliSignals extends TurnSignals, Disposable {
  /** Names the run being stopped in the line printed on the first signal. */
  runStarted(runId: string): void;
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
        `stopping ${
          runId === null ? "the turn" : `run ${runId}`
        } (${signal}); press Ctrl-C again to kill it now`,
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
