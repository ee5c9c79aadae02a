// Where opencode sends its model calls, so that the gateway can stand there: the provider of the
// model it runs (`drivers.opencode.model`, a `--model` in the driver's args, else the `model` of
// its config) and that provider's `options.baseURL`, read from the config files opencode 1.18
// merges — the global one ($XDG_CONFIG_HOME/opencode/{config.json,opencode.json,opencode.jsonc}),
// OPENCODE_CONFIG, the project's (opencode.json[c] and .opencode/opencode.json[c] from the working
// directory up) and OPENCODE_CONFIG_CONTENT, the later winning — else the provider's default.
// opencode is pointed at the gateway by adding that provider's baseURL to OPENCODE_CONFIG_CONTENT,
// which it merges over every file.
import { dirnameOf, joinPath } from "../core/paths.ts";
import type { DriverInput, ModelRoutes } from "./driver.ts";
import { driverSettings } from "./harness.ts";

/** The base URLs opencode's built-in providers use when the config names none (models.dev). */
export const OPENCODE_DEFAULT_BASE_URLS: Readonly<Record<string, string>> = {
  anthropic: "https://api.anthropic.com/v1",
  openai: "https://api.openai.com/v1",
  google: "https://generativelanguage.googleapis.com/v1beta",
  openrouter: "https://openrouter.ai/api/v1",
  groq: "https://api.groq.com/openai/v1",
  deepseek: "https://api.deepseek.com",
  xai: "https://api.x.ai/v1",
  mistral: "https://api.mistral.ai/v1",
  opencode: "https://opencode.ai/zen/v1",
};

type Table = Record<string, unknown>;

function table(value: unknown): Table {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value as Table : {};
}

/** JSON with comments and trailing commas (opencode.jsonc) as a value; null when it is not. */
export function parseJsonc(source: string): unknown {
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '"') {
      const start = i;
      for (i++; i < source.length && source[i] !== '"'; i++) if (source[i] === "\\") i++;
      out += source.slice(start, i + 1);
    } else if (char === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++;
      out += "\n";
    } else if (char === "/" && source[i + 1] === "*") {
      i = source.indexOf("*/", i + 2);
      if (i < 0) break;
      i++;
    } else out += char;
  }
  try {
    return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
  } catch {
    return null;
  }
}

async function readConfig(path: string): Promise<Table | null> {
  let source: string;
  try {
    source = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    // A project's config above the working directory, which the sandbox does not let reins read.
    if (error instanceof Deno.errors.NotCapable) return null;
    throw error;
  }
  const value = parseJsonc(source);
  return value === null ? null : table(value);
}

/** The config files opencode would read for `cwd`, lowest precedence first. */
function configFiles(env: Record<string, string | undefined>, cwd: string): string[] {
  const files: string[] = [];
  const configHome = env.XDG_CONFIG_HOME || (env.HOME ? joinPath(env.HOME, ".config") : null);
  if (configHome !== null) {
    for (const name of ["config.json", "opencode.json", "opencode.jsonc"]) {
      files.push(joinPath(configHome, "opencode", name));
    }
  }
  if (env.OPENCODE_CONFIG) files.push(env.OPENCODE_CONFIG);
  const project: string[] = [];
  for (let dir = cwd;; dir = dirnameOf(dir)) {
    // Nearer the working directory wins: collected upward, read downward.
    for (
      const name of [
        ".opencode/opencode.jsonc",
        ".opencode/opencode.json",
        "opencode.jsonc",
        "opencode.json",
      ]
    ) {
      project.push(joinPath(dir, name));
    }
    if (dir === "/" || dirnameOf(dir) === dir) break;
  }
  return [...files, ...project.reverse()];
}

function modelFromArgs(args: readonly string[]): string | null {
  for (let i = 0; i < args.length; i++) {
    if ((args[i] === "-m" || args[i] === "--model") && args[i + 1]) return args[i + 1];
    if (args[i].startsWith("--model=")) return args[i].slice("--model=".length);
  }
  return null;
}

/** The routes of an opencode turn; `details` keep the provider and the user's inline config. */
export async function opencodeRoutes(
  input: Pick<DriverInput, "env" | "settings" | "agent" | "cwd">,
): Promise<ModelRoutes> {
  const env = { ...input.settings.harnessEnv, ...input.env };
  const configs: Table[] = [];
  for (const file of configFiles(env, input.cwd)) {
    const config = await readConfig(file);
    if (config !== null) configs.push(config);
  }
  const inline = env.OPENCODE_CONFIG_CONTENT ? table(parseJsonc(env.OPENCODE_CONFIG_CONTENT)) : {};
  configs.push(inline);
  const settings = driverSettings(input as DriverInput, "opencode");
  // The configured model, else the args', else the last config that names one.
  const configured = configs.findLast((config) => typeof config.model === "string")?.model;
  const model = settings.model ?? modelFromArgs(settings.extraArgs) ??
    (typeof configured === "string" ? configured : null);
  const slash = model?.indexOf("/") ?? -1;
  if (model === null || slash <= 0) {
    return {
      unavailable:
        "opencode's model is not named (--model, drivers.opencode.model, or `model` in " +
        "its config): reins cannot tell which provider it calls",
    };
  }
  const provider = model.slice(0, slash);
  let baseUrl: string | null = null;
  for (const config of configs) {
    const given = table(table(table(config.provider)[provider]).options).baseURL;
    if (typeof given === "string" && given !== "") baseUrl = given;
  }
  baseUrl ??= OPENCODE_DEFAULT_BASE_URLS[provider] ?? null;
  if (baseUrl === null) {
    return {
      unavailable: `opencode's provider ${JSON.stringify(provider)} names no baseURL in its ` +
        "config and reins does not know its default",
    };
  }
  return {
    routes: { opencode: { upstream: baseUrl } },
    details: { provider, inline: env.OPENCODE_CONFIG_CONTENT ?? "" },
  };
}

/** OPENCODE_CONFIG_CONTENT pointing the provider at the gateway, over the user's own. */
export function opencodeGatewayEnv(input: DriverInput): Record<string, string> | undefined {
  const gateway = input.gateway;
  if (!gateway) return undefined;
  const provider = gateway.plan.details?.provider ?? "";
  const inline = table(parseJsonc(gateway.plan.details?.inline || "{}"));
  const providers = table(inline.provider);
  const entry = table(providers[provider]);
  const content = {
    ...inline,
    provider: {
      ...providers,
      [provider]: {
        ...entry,
        options: { ...table(entry.options), baseURL: `${gateway.baseUrl}/opencode` },
      },
    },
  };
  return { OPENCODE_CONFIG_CONTENT: JSON.stringify(content) };
}
