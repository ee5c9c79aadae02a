// The lines of Claude Code's `--output-format stream-json` that reins acts on, as zod schemas:
// the wire, apart from what the driver makes of it (claude.ts). Only the fields reins reads are
// named; every object is loose, so what a newer Claude Code adds passes through. The driver does
// not load zod: it checks lines with the validators generated from these (lib/drivers/
// wire_checks.gen.ts, `deno task gen`). Observed shapes: ../shared/INTEROP.md and docs/harnesses.md.
import { z } from "zod";

const Count = z.number().nonnegative();

/** A content block of a message: text, tool_use, tool_result, thinking… (only some are read). */
export const ClaudeBlock = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  /** tool_use */
  id: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
  /** tool_result */
  tool_use_id: z.string().optional(),
  content: z.unknown().optional(),
  is_error: z.boolean().optional(),
});
export type ClaudeBlock = z.infer<typeof ClaudeBlock>;

const Content = z.union([z.string(), z.array(z.union([z.string(), ClaudeBlock]))]);

/** Token counts, on a result and (for --max-tokens, watched live) on each API message. */
const Usage = z.looseObject({
  input_tokens: Count.optional(),
  output_tokens: Count.optional(),
  cache_read_input_tokens: Count.optional(),
  cache_creation_input_tokens: Count.optional(),
  output_tokens_details: z.looseObject({ thinking_tokens: Count.optional() }).optional(),
});

/** `{"type":"system",…}`: init (the session), permission_denied, api_retry, and others. */
export const ClaudeSystem = z.looseObject({
  type: z.literal("system"),
  subtype: z.string().optional(),
  session_id: z.string().optional(),
  /** init: the model the session uses and the CLI's version */
  model: z.string().optional(),
  claude_code_version: z.string().optional(),
  /** permission_denied */
  tool_name: z.string().optional(),
  tool_use_id: z.string().optional(),
  message: z.string().optional(),
  /** api_retry */
  attempt: Count.optional(),
  error: z.union([z.string(), z.looseObject({ message: z.string().optional() })]).optional(),
});
export type ClaudeSystem = z.infer<typeof ClaudeSystem>;

/** `{"type":"assistant",…}`: a model message — its text and tool_use blocks. */
export const ClaudeAssistant = z.looseObject({
  type: z.literal("assistant"),
  session_id: z.string().optional(),
  /** Set on a subagent's messages: they are not the turn's answer. */
  parent_tool_use_id: z.string().nullable().optional(),
  /** A synthetic message Claude Code writes for a failed API call. */
  is_api_error_message: z.boolean().optional(),
  message: z.looseObject({
    id: z.string().optional(),
    model: z.string().optional(),
    content: Content.optional(),
    /** null until the message's last line */
    stop_reason: z.string().nullable().optional(),
    usage: Usage.nullable().optional(),
  }).optional(),
});
export type ClaudeAssistant = z.infer<typeof ClaudeAssistant>;

/** `{"type":"user",…}`: what went back to the model — tool_result blocks. */
export const ClaudeUser = z.looseObject({
  type: z.literal("user"),
  message: z.looseObject({ content: Content.optional() }).optional(),
});
export type ClaudeUser = z.infer<typeof ClaudeUser>;

/** `{"type":"control_request",…}` (with --permission-prompt-tool stdio): may a tool run? */
export const ClaudeControlRequest = z.looseObject({
  type: z.literal("control_request"),
  request_id: z.string(),
  request: z.looseObject({
    subtype: z.string(),
    tool_name: z.string().optional(),
    input: z.unknown().optional(),
    tool_use_id: z.string().optional(),
  }),
});
export type ClaudeControlRequest = z.infer<typeof ClaudeControlRequest>;

/** `{"type":"result",…}`: the turn's outcome, cost and usage. */
export const ClaudeResult = z.looseObject({
  type: z.literal("result"),
  subtype: z.string().optional(),
  is_error: z.boolean().optional(),
  result: z.string().optional(),
  session_id: z.string().optional(),
  terminal_reason: z.string().optional(),
  total_cost_usd: Count.nullable().optional(),
  usage: Usage.nullable().optional(),
});
export type ClaudeResult = z.infer<typeof ClaudeResult>;

/** The schema of each line type reins reads; other types are passed over unread. */
export const CLAUDE_LINES = {
  system: ClaudeSystem,
  assistant: ClaudeAssistant,
  user: ClaudeUser,
  control_request: ClaudeControlRequest,
  result: ClaudeResult,
} as const;
