// Where Codex sends its model calls, so that the gateway can stand there: the model provider Codex
// 0.171 would use (`-c model_provider=…` in the driver's args, else the `--profile`'s, else
// `model_provider` of $CODEX_HOME/config.toml, else its built-in `openai`) and that provider's base
// URL. Codex refuses a `model_providers.openai` table (built-in providers cannot be overridden) and
// ignores OPENAI_BASE_URL: the built-in provider is moved with `-c openai_base_url=…`, any other
// with `-c model_providers.<id>.base_url=…`. The built-in one goes to api.openai.com, or, for a
// ChatGPT sign-in (whose requests carry `chatgpt-account-id`), to chatgpt.com's Codex backend.
import { importLazily } from "../core/lazy_import.ts";
import { joinPath } from "../core/paths.ts";
import type { DriverInput, ModelRoutes } from "./driver.ts";
import { driverSettings } from "./harness.ts";

export const OPENAI_API = "https://api.openai.com/v1";
export const CHATGPT_CODEX_API = "https://chatgpt.com/backend-api/codex";
/** Codex's own built-in providers besides `openai`, which talk to a local server. */
const LOCAL_PROVIDERS: Record<string, string> = {
  ollama: "http://localhost:11434/v1",
  lmstudio: "http://localhost:1234/v1",
};

type Table = Record<string, unknown>;

function table(value: unknown): Table {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value as Table : {};
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** `-c key=value` overrides in Codex's arguments (the value as TOML, else as a bare string). */
export function configOverrides(args: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const given = arg === "-c" || arg === "--config"
      ? args[++i]
      : arg.startsWith("--config=")
      ? arg.slice("--config=".length)
      : undefined;
    if (given === undefined) continue;
    const eq = given.indexOf("=");
    if (eq <= 0) continue;
    out.set(given.slice(0, eq).trim(), given.slice(eq + 1).trim().replace(/^["']|["']$/g, ""));
  }
  return out;
}

function profileOf(args: readonly string[]): string | null {
  for (let i = 0; i < args.length; i++) {
    if ((args[i] === "--profile" || args[i] === "-p") && args[i + 1]) return args[i + 1];
    if (args[i].startsWith("--profile=")) return args[i].slice("--profile=".length);
  }
  return null;
}

/** The routes of a Codex turn, and (in `details`) how to point Codex at the gateway. */
export async function codexRoutes(
  input: Pick<DriverInput, "env" | "settings" | "agent">,
): Promise<ModelRoutes> {
  const env = { ...input.settings.harnessEnv, ...input.env };
  const codexHome = env.CODEX_HOME || (env.HOME ? joinPath(env.HOME, ".codex") : null);
  let config: Table = {};
  if (codexHome !== null) {
    let source: string | null = null;
    try {
      source = await Deno.readTextFile(joinPath(codexHome, "config.toml"));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    if (source !== null) {
      const { parse } = await importLazily<typeof import("smol-toml")>("smol-toml");
      config = parse(source) as Table;
    }
  }
  const args = driverSettings(input as DriverInput, "codex").extraArgs;
  const overrides = configOverrides(args);
  const profileName = profileOf(args) ?? text(config.profile);
  const profile = profileName === null ? {} : table(table(config.profiles)[profileName]);
  const provider = overrides.get("model_provider") ?? text(profile.model_provider) ??
    text(config.model_provider) ?? "openai";
  if (provider === "openai") {
    const configured = overrides.get("openai_base_url") ?? text(profile.openai_base_url) ??
      text(config.openai_base_url);
    const upstream = configured ?? OPENAI_API;
    return {
      routes: {
        openai: {
          upstream,
          ...(configured ? {} : {
            whenHeader: { name: "chatgpt-account-id", upstream: CHATGPT_CODEX_API },
          }),
        },
      },
      details: { provider },
    };
  }
  const configured = overrides.get(`model_providers.${provider}.base_url`) ??
    text(table(table(config.model_providers)[provider]).base_url) ??
    LOCAL_PROVIDERS[provider] ?? null;
  if (configured === null) {
    return {
      unavailable: `Codex's model provider ${JSON.stringify(provider)} has no base_url reins ` +
        `can read (in ${codexHome ?? "$CODEX_HOME"}/config.toml or the driver's args)`,
    };
  }
  return { routes: { openai: { upstream: configured } }, details: { provider } };
}

/** The `-c` arguments that point Codex's provider at the gateway's route. */
export function codexGatewayArgs(input: DriverInput): string[] {
  const gateway = input.gateway;
  if (!gateway) return [];
  const url = `${gateway.baseUrl}/openai`;
  const provider = gateway.plan.details?.provider ?? "openai";
  return provider === "openai"
    ? ["-c", `openai_base_url=${JSON.stringify(url)}`]
    : ["-c", `model_providers.${provider}.base_url=${JSON.stringify(url)}`];
}
