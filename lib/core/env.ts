// The one place reins reads its environment. ENV_VARS is also the sandbox's --allow-env list
// (scripts/permissions.ts), so a variable read here and not listed there cannot slip through.
// Free of dependencies: every command's start-up path imports it.
import { joinPath, resolvePath } from "./paths.ts";

/**
 * The variables the harness CLIs take their model's base URL (and provider) from: what the
 * drivers read to tell the gateway where a CLI's calls would have gone.
 */
export const HARNESS_UPSTREAM_VARS = [
  "ANTHROPIC_BASE_URL",
  "CLAUDE_CODE_USE_BEDROCK",
  "CLAUDE_CODE_USE_VERTEX",
  "GOOGLE_GEMINI_BASE_URL",
  "CODE_ASSIST_ENDPOINT",
  "GOOGLE_GENAI_USE_VERTEXAI",
  "CODEX_HOME",
  "XDG_CONFIG_HOME",
  "OPENCODE_CONFIG",
  "OPENCODE_CONFIG_CONTENT",
] as const;

export const ENV_VARS = [
  "REINS_HOME",
  "HOME",
  "NO_COLOR",
  "TMPDIR",
  "REINS_CONFIG",
  "REINS_CLAUDE_BIN",
  "REINS_CODEX_BIN",
  "REINS_GEMINI_BIN",
  "REINS_OPENCODE_BIN",
  // What the launcher of a checkout (scripts/reins.sh) built the sandbox from, for the message
  // of a refusal: JSON, set by the launcher only.
  "REINS_SANDBOX",
  // The entry of the launcher's cache whose flags this process runs under (scripts/reins.sh):
  // checked at start (lib/core/sandbox.ts). Set by the launcher only.
  "REINS_LAUNCHER_CACHE",
  "HARNESS_PLATFORM_URL",
  "HARNESS_PLATFORM_API_KEY",
  "HARNESS_PLATFORM_SECRET_KEY",
  "HARNESS_PLATFORM_WORKSPACE_ID",
  "HARNESS_PLATFORM_ALLOW_HTTP",
  "FI_BASE_URL",
  "FI_API_KEY",
  "FI_SECRET_KEY",
  "ALK_HARNESS_JOB_ID",
  // Which shard of a suite plan to run (docs/suites.md): REINS_SHARD=I/N, or a Kubernetes
  // Indexed Job's own index.
  "REINS_SHARD",
  "JOB_COMPLETION_INDEX",
  // Not reins's own: the yaml package's parser looks at these debug switches on every suite file
  // it reads (node:process env), and a sandbox that refused them would refuse every YAML file.
  "LOG_TOKENS",
  "LOG_STREAM",
  "OPENAI_BASE_URL",
  "OPENAI_API_KEY",
  // Where each harness CLI would send its model calls, read so that the model gateway passes
  // them on there (lib/gateway/, docs/gateway.md); never their keys.
  ...HARNESS_UPSTREAM_VARS,
  // OpenTelemetry export (lib/otel/), read as the OTel SDK specification defines them.
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
  // Not read by reins (it exports traces only), but the collector's credentials all the same:
  // listed so that the sandbox lets reins withhold them from agents (withholdFromAgents).
  "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
  "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
  "OTEL_EXPORTER_OTLP_TIMEOUT",
  "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
  "OTEL_EXPORTER_OTLP_COMPRESSION",
  "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
  "OTEL_SERVICE_NAME",
  "OTEL_RESOURCE_ATTRIBUTES",
  "OTEL_SDK_DISABLED",
  "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
  "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
  "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
  // Proxy settings: Deno's fetch applies them itself; lib/net/route.ts reads them to keep
  // loopback away from any proxy and to know whether an upload can go straight to the host.
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "all_proxy",
  "no_proxy",
] as const;

export type EnvName = typeof ENV_VARS[number];
export type Env = Partial<Record<EnvName, string>>;

/** Reads the variables reins uses. One the sandbox does not grant reads as unset. */
export function readEnv(): Env {
  const env: Env = {};
  for (const name of ENV_VARS) {
    try {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] = value;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
    }
  }
  return env;
}

/** The platform's variables: reins's to use, never an agent's to see. */
export const PLATFORM_ENV_VARS = ENV_VARS.filter((name) =>
  name.startsWith("HARNESS_PLATFORM_") || name.startsWith("FI_")
);

/**
 * The OTLP exporter's headers (OTEL_EXPORTER_OTLP_HEADERS and its per-signal forms): the
 * collector's token, reins's to send with its traces, never an agent's to see.
 */
export const OTLP_HEADER_VARS = ENV_VARS.filter((name) =>
  /^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS$/.test(name)
);

/** What withholdFromAgents() removes: the platform's variables and the collector's headers. */
export const WITHHELD_ENV_VARS: readonly EnvName[] = [...PLATFORM_ENV_VARS, ...OTLP_HEADER_VARS];

/**
 * Removes the platform's variables and the OTLP exporter's headers from this process's
 * environment once `readEnv` has read them, so that no agent reins starts inherits the
 * platform's key and secret or the collector's token (a child gets the environment of the moment
 * it is spawned; clearing it per child would need all of --allow-env). Agents keep everything
 * else, their own model keys included.
 */
export function withholdFromAgents(env: Env): void {
  for (const name of WITHHELD_ENV_VARS) {
    if (env[name] === undefined) continue;
    try {
      Deno.env.delete(name);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
    }
  }
}

export type HomeSource = "flag" | "REINS_HOME" | "HOME";

/** The data root: `--home`, else `$REINS_HOME`, else `~/.reins`; absolute. */
export function resolveHome(
  env: Env,
  flag?: string,
): { home: string; source: HomeSource } {
  if (flag) return { home: resolvePath(flag), source: "flag" };
  if (env.REINS_HOME) return { home: resolvePath(env.REINS_HOME), source: "REINS_HOME" };
  const userHome = env.HOME ?? "/";
  return { home: joinPath(resolvePath(userHome), ".reins"), source: "HOME" };
}

/** Whether to colour output: only on a terminal, and never with NO_COLOR set (no-color.org). */
export function wantsColor(env: Env, isTerminal: boolean): boolean {
  return isTerminal && (env.NO_COLOR === undefined || env.NO_COLOR === "");
}
