// What a command module exports, and what it is handed when it runs.
import type { Env, Settings } from "../core/mod.ts";
import type { FlagSpecs, FlagValues } from "./args.ts";
import type { Output } from "./output.ts";

export interface CommandContext<F extends FlagSpecs = FlagSpecs> {
  /** The command's name as typed, and the argv after it. */
  readonly name: string;
  /** The values of the command's flags (and the global ones), typed as they were declared. */
  readonly flags: FlagValues<F>;
  readonly positionals: string[];
  readonly env: Env;
  /**
   * The data root, absolute: resolved once per process (lib/cli/main.ts), and the same as the
   * settings' `home`, which are given it. Commands open their store or data root on this.
   */
  readonly home: string;
  readonly io: Output;
  /**
   * The full, checked settings; loaded on first call. `skipConfigFile`: without the config file
   * (for `reins doctor`, which reports one it refuses to use).
   */
  settings(options?: { skipConfigFile?: boolean }): Promise<Settings>;
}

export interface CommandModule<F extends FlagSpecs = FlagSpecs> {
  /** `reins runs [--context ID] …`: the synopsis line(s). */
  readonly usage: string;
  /** A paragraph for `reins help COMMAND`. */
  readonly description: string;
  /** Declared once with their types (defineFlags); `run` reads them typed. */
  readonly flags: F;
  /** Returns the exit code. Throws ReinsError for anything that goes wrong. */
  run(ctx: CommandContext<F>): Promise<number>;
}
