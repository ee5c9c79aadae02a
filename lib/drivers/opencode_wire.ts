// The lines of `opencode run --format json` that reins acts on, as zod schemas: the wire, apart
// from what the driver makes of it (opencode.ts). Only the fields reins reads are named; every
// object is loose, so what a newer opencode adds passes through. The driver checks lines with
// the validators generated from these (lib/drivers/wire_checks.gen.ts, `deno task gen`), without
// loading zod. Observed shapes: ../shared/INTEROP.md and docs/harnesses.md.
import { z } from "zod";

const Count = z.number().nonnegative();

/** What every line carries: its session (step_start is the first to). */
const Base = z.looseObject({ type: z.string(), sessionID: z.string().optional() });

export const OpencodeText = Base.extend({
  type: z.literal("text"),
  part: z.looseObject({ text: z.string().optional() }).optional(),
});
export type OpencodeText = z.infer<typeof OpencodeText>;

/** A tool call, written once it has finished (or failed). */
export const OpencodeToolUse = Base.extend({
  type: z.literal("tool_use"),
  part: z.looseObject({
    callID: z.string().optional(),
    id: z.string().optional(),
    tool: z.string().optional(),
    state: z.looseObject({
      status: z.string().optional(),
      input: z.unknown().optional(),
      output: z.unknown().optional(),
      error: z.unknown().optional(),
      time: z.looseObject({ start: Count.optional(), end: Count.optional() }).optional(),
    }).optional(),
  }).optional(),
});
export type OpencodeToolUse = z.infer<typeof OpencodeToolUse>;

/** The end of one model call: its tokens and opencode's own cost. */
export const OpencodeStepFinish = Base.extend({
  type: z.literal("step_finish"),
  part: z.looseObject({
    cost: Count.optional(),
    tokens: z.looseObject({
      input: Count.optional(),
      output: Count.optional(),
      reasoning: Count.optional(),
      cache: z.looseObject({ read: Count.optional(), write: Count.optional() }).optional(),
    }).optional(),
  }).optional(),
});
export type OpencodeStepFinish = z.infer<typeof OpencodeStepFinish>;

export const OpencodeError = Base.extend({
  type: z.literal("error"),
  error: z.looseObject({
    name: z.string().optional(),
    message: z.string().optional(),
    data: z.looseObject({
      message: z.string().optional(),
      statusCode: z.number().optional(),
    }).optional(),
  }).optional(),
});
export type OpencodeError = z.infer<typeof OpencodeError>;

/** The schema of each line type reins reads; "*": every other line (for its session id). */
export const OPENCODE_LINES = {
  text: OpencodeText,
  tool_use: OpencodeToolUse,
  step_finish: OpencodeStepFinish,
  error: OpencodeError,
  "*": Base,
} as const;
