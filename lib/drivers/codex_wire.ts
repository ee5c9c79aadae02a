// The lines of `codex exec --json` that reins acts on, as zod schemas: the wire, apart from what
// the driver makes of it (codex.ts). Only the fields reins reads are named; every object is
// loose, so what a newer Codex adds passes through. The driver checks lines with the validators
// generated from these (lib/drivers/wire_checks.gen.ts, `deno task gen`), without loading zod.
// Observed shapes: ../shared/INTEROP.md and docs/harnesses.md.
import { z } from "zod";

const Count = z.number().nonnegative();
const ErrorObject = z.looseObject({ message: z.string().optional() });

/**
 * An item of item.started / item.completed: agent_message (text), command_execution (command,
 * aggregated_output, exit_code, status), file_change (changes), mcp_tool_call (server, tool,
 * arguments, result, error), web_search (query), error (message), reasoning, todo_list.
 */
export const CodexItem = z.looseObject({
  type: z.string(),
  id: z.string().optional(),
  text: z.string().optional(),
  message: z.string().optional(),
  status: z.string().optional(),
  command: z.unknown().optional(),
  aggregated_output: z.string().nullable().optional(),
  exit_code: z.number().int().nullable().optional(),
  changes: z.unknown().optional(),
  server: z.string().optional(),
  tool: z.string().optional(),
  arguments: z.unknown().optional(),
  result: z.unknown().optional(),
  query: z.unknown().optional(),
  error: ErrorObject.nullable().optional(),
});
export type CodexItem = z.infer<typeof CodexItem>;

/** The whole thread's token totals, as turn.completed reports them. */
export const CodexUsage = z.looseObject({
  input_tokens: Count.optional(),
  cached_input_tokens: Count.optional(),
  output_tokens: Count.optional(),
  reasoning_output_tokens: Count.optional(),
  cache_write_input_tokens: Count.optional(),
});
export type CodexUsage = z.infer<typeof CodexUsage>;

export const CodexThreadStarted = z.looseObject({
  type: z.literal("thread.started"),
  thread_id: z.string().optional(),
});
export type CodexThreadStarted = z.infer<typeof CodexThreadStarted>;

export const CodexItemLine = z.looseObject({ type: z.string(), item: CodexItem });
export type CodexItemLine = z.infer<typeof CodexItemLine>;

export const CodexTurnCompleted = z.looseObject({
  type: z.literal("turn.completed"),
  usage: CodexUsage.nullable().optional(),
});
export type CodexTurnCompleted = z.infer<typeof CodexTurnCompleted>;

export const CodexTurnFailed = z.looseObject({
  type: z.literal("turn.failed"),
  error: ErrorObject.nullable().optional(),
});
export type CodexTurnFailed = z.infer<typeof CodexTurnFailed>;

export const CodexError = z.looseObject({
  type: z.literal("error"),
  message: z.string().optional(),
});
export type CodexError = z.infer<typeof CodexError>;

/** The schema of each line type reins reads; other types are passed over unread. */
export const CODEX_LINES = {
  "thread.started": CodexThreadStarted,
  "item.started": CodexItemLine,
  "item.completed": CodexItemLine,
  "turn.completed": CodexTurnCompleted,
  "turn.failed": CodexTurnFailed,
  error: CodexError,
} as const;
