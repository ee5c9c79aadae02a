// Flag parsing for every command: long flags (`--name value`, `--name=value`), short aliases,
// booleans, repeatable flags and positionals. Written here rather than taken from node:util
// because loading node:util costs every command ~20 ms of start-up, and because a mistyped flag
// should name the nearest valid one.
import { UsageError } from "../core/errors.ts";
import { nearest } from "./suggest.ts";

export interface FlagSpec {
  type: "boolean" | "string";
  short?: string;
  multiple?: boolean;
  /** Shown in help: `--name VALUE  description`. */
  value?: string;
  description?: string;
}
export type FlagSpecs = Record<string, FlagSpec>;

export type ParsedFlags = Record<string, string | boolean | string[] | undefined>;

export interface ParsedArgs {
  flags: ParsedFlags;
  positionals: string[];
}

/** Flags every command takes. */
export const GLOBAL_FLAGS: FlagSpecs = {
  home: {
    type: "string",
    value: "DIR",
    description: "data root (default $REINS_HOME, then ~/.reins)",
  },
  json: { type: "boolean", description: "machine-readable output on stdout" },
  quiet: { type: "boolean", short: "q", description: "print only what was asked for" },
  help: { type: "boolean", short: "h", description: "show this help" },
};

export function parseArgs(argv: readonly string[], specs: FlagSpecs, command: string): ParsedArgs {
  const all: FlagSpecs = { ...GLOBAL_FLAGS, ...specs };
  const byShort = new Map<string, string>();
  for (const [name, spec] of Object.entries(all)) if (spec.short) byShort.set(spec.short, name);
  const flags: ParsedFlags = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    let name: string;
    let inline: string | undefined;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq < 0 ? undefined : arg.slice(eq + 1);
    } else {
      const alias = byShort.get(arg.slice(1));
      if (alias === undefined) throw unknownFlag(arg, all, command);
      name = alias;
    }
    const spec = all[name];
    if (spec === undefined) throw unknownFlag(`--${name}`, all, command);
    let value: string | boolean;
    if (spec.type === "boolean") {
      if (inline !== undefined && !/^(true|false)$/.test(inline)) {
        throw new UsageError(`--${name} takes no value: got ${JSON.stringify(inline)}`, {
          hint: `write --${name} alone`,
        });
      }
      value = inline === undefined ? true : inline === "true";
    } else if (inline !== undefined) {
      value = inline;
    } else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        throw new UsageError(`--${name} needs a value`, {
          hint: `write --${name} ${spec.value ?? "VALUE"} (see reins ${command} --help)`,
        });
      }
      value = next;
      i++;
    }
    if (spec.multiple) {
      const list = (flags[name] as string[] | undefined) ?? [];
      list.push(String(value));
      flags[name] = list;
    } else {
      flags[name] = value;
    }
  }
  return { flags, positionals };
}

function unknownFlag(flag: string, specs: FlagSpecs, command: string): UsageError {
  const names = Object.keys(specs).map((n) => `--${n}`);
  const guess = nearest(flag, names);
  return new UsageError(`Unknown flag ${flag} for 'reins ${command}'`, {
    hint: guess
      ? `did you mean ${guess}? (see reins ${command} --help)`
      : `see reins ${command} --help`,
  });
}

/** A string flag as a positive integer, or a UsageError naming the flag. */
export function intFlag(
  flags: ParsedFlags,
  name: string,
  limits: { min?: number; max?: number } = {},
): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  const min = limits.min ?? 1;
  const max = limits.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(
      `--${name} takes a whole number from ${min} to ${max}: got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** A string flag as a non-negative number, or a UsageError naming the flag. */
export function numberFlag(flags: ParsedFlags, name: string): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (typeof raw !== "string" || raw.trim() === "" || !Number.isFinite(value) || value < 0) {
    throw new UsageError(`--${name} takes a non-negative number: got ${JSON.stringify(raw)}`);
  }
  return value;
}

export function stringFlag(flags: ParsedFlags, name: string): string | undefined {
  const raw = flags[name];
  return typeof raw === "string" ? raw : undefined;
}
