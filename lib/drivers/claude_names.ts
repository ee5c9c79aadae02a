// The names both halves of the claude driver use — the CLI's name for people, its question tool,
// the permission mode --approve auto maps to — in a module of their own, so that the lazily
// loaded line mapping (claude_turn.ts) does not import the driver that loads it (claude.ts).
export const CLI = "Claude Code";
/** Claude Code's tool that asks the user: answered with `reins answer`, not approved. */
export const CLAUDE_ASK_TOOL = "AskUserQuestion";

/** The unattended permission mode --approve auto maps to (see docs/harnesses.md for why). */
export const CLAUDE_AUTO_PERMISSION_MODE = "acceptEdits";
