// Settings: the environment (read only through env.ts), the optional config file and the
// command's flags, checked against the schema of config_schema.ts into one object that is
// passed down. Nothing else in lib/ reads Deno.env. The checks are the code generated from the
// zod schemas (config_checks.gen.ts): zod itself is not loaded.
import type { ConfigFile, Settings } from "./config_schema.ts";
import { type Issue, validateConfigFile, validateSettings } from "./config_checks.gen.ts";
import { UsageError } from "./errors.ts";
import { type Env, HARNESS_UPSTREAM_VARS, type HomeSource, resolveHome } from "./env.ts";
import { dirnameOf } from "./paths.ts";
import { distrustOf, UntrustedFileError } from "./trust.ts";
import { headerListSecrets, headerSecrets } from "./header_secrets.ts";
import { rememberSecrets, secretsInArgs } from "./redact.ts";
// Every path under the data root is built by its layout, the config file's too.
import { Layout } from "./layout.ts";

export type { ConfigFile, Settings };

export const DRIVER_NAMES = ["loop", "claude", "codex", "gemini", "opencode", "command"] as const;
export type DriverName = typeof DRIVER_NAMES[number];
export const HARNESS_DRIVERS = ["claude", "codex", "gemini", "opencode"] as const;
export type HarnessDriver = typeof HARNESS_DRIVERS[number];

/** The config file of no file: its defaults, as checking `{}` fills them in. */
function emptyConfig(): ConfigFile {
  const empty = {};
  validateConfigFile(empty);
  return empty as ConfigFile;
}

export interface GlobalFlags {
  home?: string;
  json?: boolean;
  quiet?: boolean;
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value);
}

/**
 * Why the config file (or its directory) cannot be trusted, or null. It names the programs reins
 * starts: one someone else could write would let them run anything as you.
 */
export function configTrustProblem(path: string): string | null {
  for (const [target, what] of [[path, "it"], [dirnameOf(path), "its directory"]] as const) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(target);
    } catch {
      return null; // missing: nothing to trust (or the data root is not a directory)
    }
    const reason = distrustOf(info);
    if (reason !== null) return reason.replace(/^it/, what);
  }
  return null;
}

/**
 * Reads and checks the config file; a missing file is an empty config. One someone else could
 * have written is refused (UntrustedFileError), as OpenSSH refuses such a config.
 */
export function readConfigFile(path: string): ConfigFile {
  const untrusted = configTrustProblem(path);
  if (untrusted !== null) throw new UntrustedFileError(path, untrusted);
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (error) {
    // No file, or a data root that is not a directory (which the store then reports, exit 6).
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return emptyConfig();
    }
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`Cannot read the config file ${path}: ${(error as Error).message}`, {
      hint: "fix the JSON, or move the file away",
    });
  }
  const issue = validateConfigFile(raw);
  if (issue !== null) {
    throw new UsageError(
      `Cannot use the config file ${path}: ${issue.message} at ${issue.path || "(top)"}`,
      { hint: "see README.md, 'Configuration', for the keys it takes" },
    );
  }
  return raw as ConfigFile;
}

/**
 * Builds the settings from the environment, flags and config file, or throws a UsageError. Every
 * credential in them becomes one of the secrets this process redacts (lib/core/redact.ts).
 * `dataRoot`: the data root as the caller resolved it (the CLI does, once per process, in
 * lib/cli/main.ts); without it, it is resolved here from `flags.home` and the environment.
 */
export function loadSettings(
  env: Env,
  flags: GlobalFlags = {},
  terminal: { stdout: boolean } = { stdout: false },
  options: { skipConfigFile?: boolean; dataRoot?: { home: string; source: HomeSource } } = {},
): Settings {
  const { home, source } = options.dataRoot ?? resolveHome(env, flags.home);
  const configPath = env.REINS_CONFIG ?? Layout.configOf(home);
  // skipConfigFile: for `reins doctor`, which must report a config file it refuses to use.
  const file = options.skipConfigFile ? emptyConfig() : readConfigFile(configPath);
  const programOverride = (name: string | undefined) => name ? { program: name } : {};
  const raw = {
    home,
    homeSource: source satisfies HomeSource,
    configPath,
    json: flags.json ?? false,
    quiet: flags.quiet ?? false,
    color: terminal.stdout && (env.NO_COLOR === undefined || env.NO_COLOR === ""),
    tempDir: env.TMPDIR || "/tmp",
    platform: {
      url: (env.HARNESS_PLATFORM_URL || env.FI_BASE_URL || null)?.replace(/\/+$/, "") ?? null,
      apiKey: env.HARNESS_PLATFORM_API_KEY || env.FI_API_KEY || null,
      secretKey: env.HARNESS_PLATFORM_SECRET_KEY || env.FI_SECRET_KEY || null,
      workspaceId: env.HARNESS_PLATFORM_WORKSPACE_ID || null,
      jobId: env.ALK_HARNESS_JOB_ID || null,
      allowHttp: truthy(env.HARNESS_PLATFORM_ALLOW_HTTP),
    },
    openai: {
      baseUrl: (env.OPENAI_BASE_URL || "https://api.openai.com/v1").replace(/\/+$/, ""),
      apiKey: env.OPENAI_API_KEY || null,
    },
    proxy: {
      http: env.HTTP_PROXY || env.http_proxy || null,
      https: env.HTTPS_PROXY || env.https_proxy || null,
      all: env.ALL_PROXY || env.all_proxy || null,
      noProxy: env.NO_PROXY || env.no_proxy || null,
    },
    drivers: {
      claude: { ...file.drivers.claude, ...programOverride(env.REINS_CLAUDE_BIN) },
      codex: { ...file.drivers.codex, ...programOverride(env.REINS_CODEX_BIN) },
      gemini: { ...file.drivers.gemini, ...programOverride(env.REINS_GEMINI_BIN) },
      opencode: { ...file.drivers.opencode, ...programOverride(env.REINS_OPENCODE_BIN) },
    },
    prices: file.prices,
    snapshot: file.snapshot,
    gateway: file.gateway,
    confine: file.confine,
    // HOME too: where a CLI finds its own config (~/.codex, ~/.config/opencode).
    harnessEnv: Object.fromEntries(
      [...HARNESS_UPSTREAM_VARS, "HOME" as const].flatMap((name) =>
        env[name] ? [[name, env[name]!]] : []
      ),
    ),
    otel: {
      env: Object.fromEntries(
        Object.entries(env).filter(([name, value]) => name.startsWith("OTEL_") && value !== ""),
      ),
      file: file.otel,
    },
  };
  const issue: Issue | null = validateSettings(raw);
  if (issue !== null) {
    const variable = settingVariable[issue.path] ?? issue.path;
    throw new UsageError(`Cannot use the setting ${variable}: ${issue.message}`, {
      hint: `fix ${variable} in the environment or ${configPath}`,
    });
  }
  const settings = raw as Settings;
  rememberSecrets(...secretsOfSettings(settings));
  return settings;
}

/**
 * The credentials settings hold: API keys, the platform's key and secret, keys in driver args, the
 * OpenTelemetry collector's credential headers.
 */
export function secretsOfSettings(settings: Settings): string[] {
  return [
    settings.openai.apiKey,
    settings.platform.apiKey,
    settings.platform.secretKey,
    ...HARNESS_DRIVERS.flatMap((driver) => secretsInArgs(settings.drivers[driver].args)),
    // What the OpenTelemetry collector is sent: its keys travel in headers.
    ...headerListSecrets(settings.otel.env.OTEL_EXPORTER_OTLP_HEADERS),
    ...headerListSecrets(settings.otel.env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    ...headerSecrets(settings.otel.file.headers ?? {}),
  ].filter((value): value is string => typeof value === "string");
}

const settingVariable: Record<string, string> = {
  "platform.url": "HARNESS_PLATFORM_URL (or FI_BASE_URL)",
  "openai.baseUrl": "OPENAI_BASE_URL",
  home: "REINS_HOME (or --home)",
};

/** The program each harness driver runs: the configured path, else its usual name on PATH. */
export function harnessProgram(settings: Pick<Settings, "drivers">, driver: HarnessDriver): string {
  return settings.drivers[driver].program ?? driver;
}
