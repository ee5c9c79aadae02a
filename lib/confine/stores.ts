// What a confined agent is kept from and given of your home directory: the secret stores hidden
// (each replaced by an empty directory or an empty file), and each harness's own state, which it
// needs to resume a session and is bound from a directory per context under the data root.
// Data only: profile.ts turns it into bubblewrap's arguments.

/** Secret stores hidden from every confined agent, relative to $HOME (docs/confinement.md). */
export const SECRET_STORES = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".config/gcloud",
  ".netrc",
  ".docker",
  ".kube",
  ".azure",
  ".config/gh",
  ".git-credentials",
  ".npmrc",
  ".pypirc",
  ".password-store",
  ".local/share/keyrings",
  ".config/op",
  ".vault-token",
] as const;

/**
 * A harness's state as it expects it under $HOME: `dirs` are bound read-write from the context's
 * own copy, `carried` — your login and your settings for it, where you have them — read-only over
 * the copy's, and `env` is what it is told so that it looks there (`~/` is the sandbox's home).
 */
export interface HarnessState {
  dirs: string[];
  /** Yours (found from your environment: `vars` are the variables that may move it), by target. */
  carried(vars: Record<string, string | undefined>, home: string): Record<string, string>;
  env: Record<string, string>;
}

const under = (dir: string, names: string[], target: string) =>
  Object.fromEntries(names.map((name) => [`${target}/${name}`, `${dir}/${name}`]));

/** Whether `driver`'s harness keeps a state of its own, bound into the sandbox per context. */
export function keepsHarnessState(driver: string): boolean {
  return Object.hasOwn(HARNESS_STATES, driver);
}

/** By driver name; a driver not here (command, loop) has no state of its own. */
export const HARNESS_STATES: Record<string, HarnessState> = {
  // With CLAUDE_CONFIG_DIR set, Claude Code keeps its .claude.json in that directory too, rather
  // than beside it in $HOME, where a bind-mounted file could not be replaced by a rename.
  claude: {
    dirs: [".claude"],
    carried: (vars, home) =>
      under(
        vars.CLAUDE_CONFIG_DIR || `${home}/.claude`,
        [".credentials.json", "settings.json"],
        ".claude",
      ),
    env: { CLAUDE_CONFIG_DIR: "~/.claude" },
  },
  codex: {
    dirs: [".codex"],
    carried: (vars, home) =>
      under(vars.CODEX_HOME || `${home}/.codex`, ["auth.json", "config.toml"], ".codex"),
    env: { CODEX_HOME: "~/.codex" },
  },
  gemini: {
    dirs: [".gemini"],
    carried: (_, home) =>
      under(
        `${home}/.gemini`,
        ["settings.json", "oauth_creds.json", "google_accounts.json"],
        ".gemini",
      ),
    env: {},
  },
  opencode: {
    dirs: [".local/share/opencode", ".config/opencode", ".cache/opencode", ".local/state/opencode"],
    carried: (vars, home) => ({
      ...under(
        `${vars.XDG_CONFIG_HOME || `${home}/.config`}/opencode`,
        ["opencode.json", "opencode.jsonc"],
        ".config/opencode",
      ),
      ...under(
        `${vars.XDG_DATA_HOME || `${home}/.local/share`}/opencode`,
        ["auth.json"],
        ".local/share/opencode",
      ),
    }),
    env: {
      XDG_CONFIG_HOME: "~/.config",
      XDG_DATA_HOME: "~/.local/share",
      XDG_CACHE_HOME: "~/.cache",
      XDG_STATE_HOME: "~/.local/state",
    },
  },
};

/**
 * Variables a confined agent keeps of reins's environment (besides what reins sets for it):
 * a trailing `*` is a prefix. Platform and OTLP settings (HARNESS_PLATFORM_*, FI_*, OTEL_*,
 * REINS_*) and anything else not named are dropped.
 */
export const KEPT_ENV = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TERM",
  "TZ",
  "NO_COLOR",
  "IS_SANDBOX",
] as const;

/** What each harness needs besides: its model keys and its own switches. */
export const HARNESS_ENV: Record<string, string[]> = {
  claude: ["ANTHROPIC_*", "CLAUDE_*", "DISABLE_*"],
  codex: ["OPENAI_*", "CODEX_*"],
  gemini: ["GEMINI_*", "GOOGLE_*"],
  opencode: ["OPENCODE_*", "ANTHROPIC_*", "OPENAI_*"],
};
