// What a command module exports, and what it is handed when it runs.
import type { Env } from "../core/env.ts";
import type { Settings } from "../core/config.ts";
import type { FlagSpecs, ParsedFlags } from "./args.ts";
import type { Output } from "./output.ts";

export interface CommandContext {
  /** The command's name as typed, and the argv after it. */
  readonly name: string;
  readonly flags: ParsedFlags;
  readonly positionals: string[];
  readonly env: Env;
  /** The data root, absolute. */
  readonly home: string;
  readonly io: Output;
  /** The full, zod-checked settings; loaded on first call (it costs loading zod). */
  settings(): Promise<Settings>;
  /** Aborted on SIGINT/SIGTERM by commands that install handlers. */
  readonly signal?: AbortSignal;
}

export interface CommandModule {
  /** `reins runs [--context ID] …`: the synopsis line(s). */
  readonly usage: string;
  /** A paragraph for `reins help COMMAND`. */
  readonly description: string;
  readonly flags: FlagSpecs;
  /** Returns the exit code. Throws ReinsError for anything that goes wrong. */
  run(ctx: CommandContext): Promise<number>;
}
