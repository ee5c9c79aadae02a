// Deno's refusal of a permission as reins says it: one line that names the program, host or path
// and how to grant it, exit 4. A refusal is permanent (the binary's permissions are baked in),
// so whoever meets one stops at once and never retries it like a network error. Deno's message
// reads: Requires run access to "/bin/ls", run again with the --allow-run flag
import { ExitCode, ReinsError } from "./errors.ts";

/** Where a sandbox is made: the build of the binary, or the launcher of a checkout. */
const WHERE = "when you build reins (deno task compile) or start it (deno task reins)";

/** The sandbox refused something: exit 4, never retried. */
export class SandboxRefusal extends ReinsError {
  /** run, net, read, write, env, sys, … */
  readonly kind: string;
  /** The program, host or path, unquoted. */
  readonly target: string;
  constructor(kind: string, target: string, message: string, cause?: unknown) {
    super("sandbox", message, { exitCode: ExitCode.sandbox, cause });
    this.name = "SandboxRefusal";
    this.kind = kind;
    this.target = target;
  }
}

/** Whether `error` is a refusal by the sandbox (Deno's, or one reins already translated). */
export function isSandboxRefusal(error: unknown): boolean {
  return error instanceof Deno.errors.NotCapable || error instanceof SandboxRefusal;
}

/** Deno's NotCapable (or any error naming a refused access) as a SandboxRefusal. */
export function sandboxRefusal(error: Error): SandboxRefusal {
  if (error instanceof SandboxRefusal) return error;
  const match = /Requires (\w+) access to ("[^"]*"|[^,]+)/.exec(error.message);
  const kind = match?.[1] ?? "some";
  const target = (match?.[2] ?? "a resource").trim().replace(/^"(.*)"$/, "$1");
  return new SandboxRefusal(kind, target, refusalMessage(kind, target), error);
}

function refusalMessage(kind: string, target: string): string {
  switch (kind) {
    case "run":
      return `The sandbox refused to run ${JSON.stringify(target)}: grant it with ` +
        `REINS_ALLOW_RUN=${target} ${WHERE}`;
    case "net":
      return `The sandbox refused to connect to ${target}: grant it with ` +
        `REINS_ALLOW_NET=${target} (or name it in OPENAI_BASE_URL, HARNESS_PLATFORM_URL or ` +
        `OTEL_EXPORTER_OTLP_ENDPOINT) ${WHERE}`;
    case "read":
    case "write":
      return `The sandbox refused to ${kind} ${JSON.stringify(target)}: reins touches only its ` +
        `data root and the directory it was started in (set REINS_HOME ${WHERE}, or start it ` +
        "in a directory that holds the path)";
    case "env":
      return `The sandbox refused to read the variable ${target}: reins reads only the ` +
        "variables lib/core/env.ts lists";
    default:
      return `The sandbox refused ${kind} access to ${target}: scripts/permissions.ts does not ` +
        "grant it";
  }
}
