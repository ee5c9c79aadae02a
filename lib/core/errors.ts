// Typed errors for everything reins refuses or cannot do. Each carries an exit code of
// DESIGN.md and a hint for the person reading it; only main.ts prints them.
// Deliberately free of dependencies: the start-up path of every command imports it.

export const ExitCode = {
  ok: 0,
  runFailed: 1,
  usage: 2,
  notFound: 3,
  sandbox: 4,
  platform: 5,
  dataRoot: 6,
  contextBusy: 7,
  /** `reins approve` / `answer` too late: the run has settled and the decision was not given. */
  settled: 8,
} as const;
export type ExitCode = typeof ExitCode[keyof typeof ExitCode];

export type ErrorCode =
  | "usage"
  | "not_found"
  | "sandbox"
  | "platform"
  | "data_root"
  | "run_failed"
  | "conflict"
  | "context_busy"
  | "run_settled"
  | "internal";

export interface ReinsErrorOptions {
  hint?: string;
  cause?: unknown;
  exitCode?: ExitCode;
}

const defaultExit: Record<ErrorCode, ExitCode> = {
  usage: ExitCode.usage,
  not_found: ExitCode.notFound,
  sandbox: ExitCode.sandbox,
  platform: ExitCode.platform,
  data_root: ExitCode.dataRoot,
  run_failed: ExitCode.runFailed,
  conflict: ExitCode.runFailed,
  context_busy: ExitCode.contextBusy,
  run_settled: ExitCode.settled,
  internal: ExitCode.runFailed,
};

export class ReinsError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;

  constructor(code: ErrorCode, message: string, options: ReinsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ReinsError";
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? defaultExit[code];
  }
}

/** A bad flag, argument or input file: exit 2. */
export class UsageError extends ReinsError {
  constructor(message: string, options: Omit<ReinsErrorOptions, "exitCode"> = {}) {
    super("usage", message, options);
    this.name = "UsageError";
  }
}

/** A run, context or file that does not exist: exit 3. */
export class NotFoundError extends ReinsError {
  constructor(message: string, options: Omit<ReinsErrorOptions, "exitCode"> = {}) {
    super("not_found", message, options);
    this.name = "NotFoundError";
  }
}

/** The data root cannot be used (not a directory, a link out of it, no permission): exit 6. */
export class DataRootError extends ReinsError {
  constructor(message: string, options: Omit<ReinsErrorOptions, "exitCode"> = {}) {
    super("data_root", message, options);
    this.name = "DataRootError";
  }
}

/** The evaluation platform refused a request or could not be reached: exit 5. */
export class PlatformError extends ReinsError {
  readonly status: number | undefined;
  readonly transient: boolean;
  constructor(
    message: string,
    options: Omit<ReinsErrorOptions, "exitCode"> & { status?: number; transient?: boolean } = {},
  ) {
    super("platform", message, options);
    this.name = "PlatformError";
    this.status = options.status;
    this.transient = options.transient ?? false;
  }
}

/**
 * Another turn holds the context (`reins run --no-wait`, or a front end that will not queue):
 * exit 7. `holderRunId` is that turn's run, or null when it has not created its run yet.
 */
export class ContextBusyError extends ReinsError {
  readonly contextId: string;
  readonly holderRunId: string | null;
  constructor(contextId: string, holderRunId: string | null) {
    super(
      "context_busy",
      `context busy (run ${
        holderRunId ?? "starting"
      }): another turn is running on context '${contextId}'`,
      {
        hint: holderRunId === null
          ? "run again once it has finished, or leave out --no-wait to wait for it"
          : `run again once it has finished (reins show ${holderRunId} --follow), or leave out --no-wait to wait for it`,
      },
    );
    this.name = "ContextBusyError";
    this.contextId = contextId;
    this.holderRunId = holderRunId;
  }
}

/**
 * A decision (`reins approve`) or an answer (`reins answer`) for a run that has already settled:
 * nothing waits for it any more, so it was not given to the agent. Exit 8.
 */
export class RunSettledError extends ReinsError {
  readonly runId: string;
  constructor(runId: string, status: string, what: string) {
    super(
      "run_settled",
      `Ignored: run ${runId} has already ended (${status}), so ${what} reached no agent`,
      { hint: `reins show ${runId} says how it ended; start a new turn to go on` },
    );
    this.name = "RunSettledError";
    this.runId = runId;
  }
}

/** Describes any thrown value in one line, for logs and failure reasons. */
/**
 * Whether `error` says the file system is full (ENOSPC) or the user's quota is spent (EDQUOT):
 * Deno has no class for either, only the code on a plain Error.
 */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** A full disk under the data root `home` as the error people read: exit 6, and what to do. */
export function diskFullError(error: unknown, home: string | null): DataRootError {
  const where = home === null ? "the data root" : `the data root ${home}`;
  return new DataRootError(`No space left to write under ${where}: ${describeError(error)}`, {
    hint:
      `free space on the file system that holds it${
        home === null ? "" : ` (df -h ${home})`
      }; what was recorded before is kept, and a run cut short reads as interrupted once reins ` +
      "can write again (reins recover)",
    cause: error,
  });
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message.split("\n")[0];
  return String(error);
}
