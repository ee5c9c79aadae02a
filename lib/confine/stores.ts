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
 * own copy, `credentials` (under one of them) read-only from yours when you have them, and `env`
 * is what it is told so that it looks there.
 */
export interface HarnessState {
  dirs: string[];
  credentials: string[];
  env: Record<string, string>;
}

/** By driver name; a driver not here (command, loop) has no state of its own. */
export const HARNESS_STATES: Record<string, HarnessState> = {
  // With CLAUDE_CONFIG_DIR set, Claude Code keeps its .claude.json in that directory too, rather
  // than beside it in $HOME, where a bind-mounted file could not be replaced by a rename.
  claude: {
    dirs: [".claude"],
    credentials: [".claude/.credentials.json"],
    env: { CLAUDE_CONFIG_DIR: "~/.claude" },
  },
  codex: { dirs: [".codex"], credentials: [".codex/auth.json"], env: { CODEX_HOME: "~/.codex" } },
  gemini: {
    dirs: [".gemini"],
    credentials: [".gemini/oauth_creds.json", ".gemini/google_accounts.json"],
    env: {},
  },
  opencode: {
    dirs: [".local/share/opencode", ".config/opencode", ".cache/opencode", ".local/state/opencode"],
    credentials: [".local/share/opencode/auth.json"],
    env: {},
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
