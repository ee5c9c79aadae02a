// The shell steps of a scenario: `setup` commands before the first turn and `command` checks after
// the last, each `sh -c` in the scenario's working directory with a time limit. They run through
// the harness process runner, so they stop the way an agent does (SIGINT, then SIGKILL) and their
// output is bounded. Nothing here decides what an exit code means; the caller does.
import { describeError } from "../core/errors.ts";
import type { Confinement, OpenConfinement } from "../confine/mod.ts";
import { openConfinement } from "../confine/confinement.ts";
import { allowedHosts } from "../confine/allow_host.ts";
import type { Settings } from "../core/mod.ts";
import type { DataRoot } from "../store/mod.ts";
import type { ScenarioSpec } from "./load.ts";
import {
  describeExit,
  HarnessProcess,
  HarnessStartError,
  stderrSummary,
} from "../drivers/process.ts";

export interface ShellOutcome {
  /** The exit code; null when it was stopped or could not start. */
  code: number | null;
  /** What describeExit says ("exited with 1", "was killed by SIGKILL"), or why it did not start. */
  exit: string;
  timedOut: boolean;
  /** Stopped by the caller's signal (not the time limit). */
  stopped: boolean;
  /** The last lines of stdout and stderr, for a failure's detail. */
  output: string;
}

const KEEP_LINES = 20;

export async function runShell(
  command: string,
  options: {
    cwd: string;
    timeoutSeconds: number | null;
    signal?: AbortSignal;
    env?: Record<string, string>;
    /** The scenario's confinement (docs/confinement.md), when it is confined. */
    confine?: Confinement | null;
  },
): Promise<ShellOutcome> {
  const stop = new AbortController();
  let timedOut = false;
  const timer = options.timeoutSeconds === null ? undefined : setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, options.timeoutSeconds * 1000);
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();
  try {
    let child: HarnessProcess;
    try {
      child = HarnessProcess.start({
        cli: "sh",
        program: "sh",
        args: ["-c", command],
        cwd: options.cwd,
        env: options.env ?? {},
        stdin: "null",
        idleTimeoutSeconds: 0,
        signal: stop.signal,
        graceMs: 2_000,
        confine: options.confine,
      });
    } catch (error) {
      if (!(error instanceof HarnessStartError)) throw error;
      return {
        code: null,
        exit: describeError(error),
        timedOut: false,
        stopped: false,
        output: "",
      };
    }
    const tail: string[] = [];
    for await (const line of child.lines()) {
      tail.push(line);
      if (tail.length > KEEP_LINES) tail.shift();
    }
    const exit = await child.finished();
    const stderr = stderrSummary(exit.stderr, 5, 800);
    const stdout = tail.map((line) => line.trim()).filter(Boolean).slice(-5).join(" ⏎ ");
    return {
      code: exit.stoppedBy === null ? exit.code : null,
      exit: describeExit(exit),
      timedOut,
      stopped: !timedOut && exit.stoppedBy !== null,
      output: [stdout, stderr].filter(Boolean).join(" ⏎ ").slice(-1200),
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * The confinement of a scenario's shell steps, when the scenario is confined (its own
 * `confine`, else the settings'): no model gateway, no harness state, the proxy's connections
 * not recorded (they belong to no run).
 */
export async function openShellConfinement(
  root: Pick<DataRoot, "home" | "layout">,
  settings: Pick<Settings, "confine" | "harnessEnv" | "configPath">,
  spec: Pick<ScenarioSpec, "confine" | "allowHosts">,
): Promise<OpenConfinement | null> {
  if (!(spec.confine ?? settings.confine.enabled)) return null;
  return await openConfinement(
    {
      allowHosts: allowedHosts(
        { allowHosts: settings.confine.allowHosts, path: settings.configPath },
        spec.allowHosts,
        "a scenario's allowHosts: each HOST or HOST:PORT",
      ),
      hide: settings.confine.hide,
    },
    {
      dataRoot: root.home,
      userHome: settings.harnessEnv.HOME ?? "/",
      vars: settings.harnessEnv,
      driver: "command",
      stateDir: null,
      socketParent: root.layout.tmp(),
      gatewayPort: null,
      onConnection: () => {},
    },
  );
}
