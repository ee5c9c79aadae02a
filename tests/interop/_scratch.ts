// A scratch world for one real CLI: its own HOME and config dirs (nothing touches the user's
// sessions), a working directory, the config that points it at a fake model server on
// 127.0.0.1, and the environment it needs offline (INTEROP.md). Removed on dispose.
import type { HarnessDriver } from "../../lib/core/config.ts";

export interface Scratch extends AsyncDisposable {
  root: string;
  /** The CLI's HOME. */
  home: string;
  /** The working directory of the turns. */
  cwd: string;
  /** reins's data root, for end-to-end runs. */
  reinsHome: string;
  /** Variables the CLI needs, to pass as DriverInput.env (or to `reins` as its environment). */
  env: Record<string, string>;
  /** Arguments the driver passes on (the drivers' `args` setting). */
  args: string[];
  /** The model the CLI is configured with. */
  model: string;
}

/** The model each CLI is pointed at (one its pinned version knows, to avoid metadata warnings). */
export const MODELS: Record<HarnessDriver, string> = {
  claude: "claude-sonnet-4-5",
  codex: "gpt-5.5",
  gemini: "gemini-2.5-flash",
  opencode: "fake/fake-model",
};

export async function makeScratch(driver: HarnessDriver, serverUrl: string): Promise<Scratch> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: `reins-interop-${driver}-` }));
  const home = `${root}/home`;
  const cwd = `${root}/work`;
  const tmp = `${root}/tmp`;
  const reinsHome = `${root}/reins`;
  for (const dir of [home, cwd, tmp]) await Deno.mkdir(dir, { recursive: true });
  const base = { HOME: home, TMPDIR: tmp, NO_COLOR: "1" };
  let env: Record<string, string>;
  let args: string[] = [];
  switch (driver) {
    case "claude":
      env = {
        ...base,
        CLAUDE_CONFIG_DIR: `${home}/.claude`,
        ANTHROPIC_API_KEY: "sk-ant-fake",
        ANTHROPIC_BASE_URL: serverUrl,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        // The default is 10 retries with a long backoff, 401 included.
        CLAUDE_CODE_MAX_RETRIES: "0",
      };
      break;
    case "codex": {
      const codexHome = `${home}/.codex`;
      await Deno.mkdir(codexHome, { recursive: true });
      await Deno.writeTextFile(
        `${codexHome}/config.toml`,
        [
          `model = "${MODELS.codex}"`,
          `model_provider = "fake"`,
          ``,
          `[model_providers.fake]`,
          `name = "fake"`,
          `base_url = "${serverUrl}/v1"`,
          `env_key = "OPENAI_API_KEY"`,
          `wire_api = "responses"`,
          `request_max_retries = 0`,
          `stream_max_retries = 0`,
          ``,
        ].join("\n"),
      );
      env = { ...base, CODEX_HOME: codexHome, OPENAI_API_KEY: "sk-fake" };
      break;
    }
    case "gemini":
      await Deno.mkdir(`${home}/.gemini`, { recursive: true });
      await Deno.writeTextFile(
        `${home}/.gemini/settings.json`,
        JSON.stringify({
          security: { auth: { selectedType: "gemini-api-key" } },
          general: { maxAttempts: 1 },
        }),
      );
      env = {
        ...base,
        GEMINI_API_KEY: "fake-key",
        GOOGLE_GEMINI_BASE_URL: serverUrl,
        GEMINI_CLI_NO_RELAUNCH: "true",
        // Headless runs refuse an untrusted folder (exit 55).
        GEMINI_CLI_TRUST_WORKSPACE: "true",
      };
      args = ["--model", MODELS.gemini];
      break;
    case "opencode": {
      const config = `${home}/.config`;
      await Deno.mkdir(`${config}/opencode`, { recursive: true });
      await Deno.writeTextFile(
        `${config}/opencode/opencode.json`,
        JSON.stringify({
          $schema: "https://opencode.ai/config.json",
          autoupdate: false,
          share: "disabled",
          model: MODELS.opencode,
          provider: {
            fake: {
              npm: "@ai-sdk/openai-compatible",
              name: "Fake",
              options: { baseURL: `${serverUrl}/v1`, apiKey: "sk-fake" },
              models: { "fake-model": { name: "Fake model" } },
            },
          },
        }),
      );
      env = {
        ...base,
        XDG_CONFIG_HOME: config,
        XDG_DATA_HOME: `${home}/.local/share`,
        XDG_CACHE_HOME: `${home}/.cache`,
        XDG_STATE_HOME: `${home}/.local/state`,
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_SHARE: "1",
      };
      break;
    }
  }
  return {
    root,
    home,
    cwd,
    reinsHome,
    env,
    args,
    model: MODELS[driver],
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}
