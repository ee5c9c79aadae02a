// The lines of Gemini CLI's `--output-format stream-json` that reins acts on, as zod schemas:
// the wire, apart from what the driver makes of it (gemini.ts). Only the fields reins reads are
// named; every object is loose, so what a newer Gemini CLI adds passes through. The driver checks
// lines with the validators generated from these (lib/drivers/wire_checks.gen.ts, `deno task gen`),
// without loading zod. Observed shapes: ../shared/INTEROP.md and docs/harnesses.md.
import { z } from "zod";

const Count = z.number().nonnegative();
const ErrorObject = z.looseObject({ message: z.string().optional() });

/** Token counts: the whole turn's, and each model's under `models`. */
const Counts = z.looseObject({
  input_tokens: Count.optional(),
  cached: Count.optional(),
  output_tokens: Count.optional(),
});

export const GeminiInit = z.looseObject({
  type: z.literal("init"),
  session_id: z.string().optional(),
  model: z.string().optional(),
});
export type GeminiInit = z.infer<typeof GeminiInit>;

/** A message: the user's echoed back, the assistant's whole or as deltas. */
export const GeminiMessage = z.looseObject({
  type: z.literal("message"),
  role: z.string().optional(),
  content: z.string().optional(),
  delta: z.boolean().optional(),
});
export type GeminiMessage = z.infer<typeof GeminiMessage>;

export const GeminiToolUse = z.looseObject({
  type: z.literal("tool_use"),
  tool_id: z.string().optional(),
  tool_name: z.string().optional(),
  parameters: z.unknown().optional(),
});
export type GeminiToolUse = z.infer<typeof GeminiToolUse>;

export const GeminiToolResult = z.looseObject({
  type: z.literal("tool_result"),
  tool_id: z.string().optional(),
  status: z.string().optional(),
  output: z.unknown().optional(),
  error: ErrorObject.nullable().optional(),
});
export type GeminiToolResult = z.infer<typeof GeminiToolResult>;

export const GeminiError = z.looseObject({
  type: z.literal("error"),
  message: z.string().optional(),
});
export type GeminiError = z.infer<typeof GeminiError>;

/** The turn's outcome: `status` success or error, with its stats or its error. */
export const GeminiResult = z.looseObject({
  type: z.literal("result"),
  status: z.string().optional(),
  error: ErrorObject.nullable().optional(),
  stats: Counts.extend({ models: z.record(z.string(), Counts).optional() }).nullable()
    .optional(),
});
export type GeminiResult = z.infer<typeof GeminiResult>;

/** The schema of each line type reins reads; other types are passed over unread. */
export const GEMINI_LINES = {
  init: GeminiInit,
  message: GeminiMessage,
  tool_use: GeminiToolUse,
  tool_result: GeminiToolResult,
  error: GeminiError,
  result: GeminiResult,
} as const;
