// Turns Deno's refusal of a permission into a ReinsError that names what was refused and what
// grants it. Deno's message reads: Requires read access to "/etc/x", run again with the --allow-read flag
import { ExitCode, ReinsError } from "../core/errors.ts";

const GRANTS: Record<string, string> = {
  read: "it is outside the data root, the working directory and the temp dir",
  write: "it is outside the data root, the working directory and the temp dir",
  net:
    "the sandbox allows only loopback, the platform host, the configured model hosts and the OTLP collector",
  run: "the sandbox runs only the configured harness programs",
  env: "the sandbox passes only the variables reins reads",
  sys: "the sandbox gives no system information",
  ffi: "the sandbox loads no native libraries",
  import: "the sandbox imports no remote modules",
};

const SETTINGS: Record<string, string> = {
  read: "--cwd, --home or REINS_HOME",
  write: "--cwd, --home or REINS_HOME",
  net: "HARNESS_PLATFORM_URL, OPENAI_BASE_URL, OTEL_EXPORTER_OTLP_ENDPOINT or REINS_ALLOW_NET",
  run: "REINS_*_BIN, the config file's drivers, or REINS_ALLOW_RUN",
  env: "lib/core/env.ts",
  sys: "scripts/permissions.ts",
  ffi: "scripts/permissions.ts",
  import: "scripts/permissions.ts",
};

export function sandboxError(error: Error): ReinsError {
  const match = /Requires (\w+) access to ([^,]+)/.exec(error.message);
  const kind = match?.[1] ?? "some";
  const target = match?.[2]?.trim() ?? "a resource";
  const why = GRANTS[kind] ?? "the sandbox does not grant it";
  const flag = `--allow-${kind}`;
  return new ReinsError("sandbox", `The sandbox refused ${kind} access to ${target}: ${why}`, {
    hint: `set ${
      SETTINGS[kind] ?? "the matching setting"
    } and rebuild (deno task compile), or run main.ts with ${flag}=${target.replaceAll('"', "")}`,
    exitCode: ExitCode.sandbox,
    cause: error,
  });
}
