// Flag parsing for every command: long flags (`--name value`, `--name=value`), short aliases,
// booleans, repeatable flags and positionals. A command declares its flags once, with their
// types (`defineFlags`), and reads typed values: a string, a list, a number checked against its
// bounds, one of its choices — each refused at parse time with a line that names the flag. Written
// here rather than taken from node:util because loading node:util costs every command ~6 ms of
// CPU at start-up (`deno task bench startup`), and because a mistyped flag should name the
// nearest valid one.
import { assertNever } from "../core/assert_never.ts";
import { UsageError } from "../core/errors.ts";
import { nearest } from "../core/suggest.ts";

interface SpecBase {
  short?: string;
  /** Shown in help: `--name VALUE  description`. */
  value?: string;
  description?: string;
}

export type FlagSpec =
  | SpecBase & { type: "boolean" }
  | SpecBase & { type: "string"; multiple?: false }
  | SpecBase & { type: "string"; multiple: true }
  /** A finite number, at least `min` (default 0); with `positive`, more than 0. */
  | SpecBase & { type: "number"; min?: number; positive?: boolean }
  /** A whole number from `min` (default 1) to `max`. */
  | SpecBase & { type: "integer"; min?: number; max?: number }
  | SpecBase & { type: "choice"; choices: readonly string[] };

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The value a flag of spec `S` has after parsing (absent: false, [] or undefined). */
export type FlagValue<S extends FlagSpec> = S extends { type: "boolean" } ? boolean
  : S extends { type: "string"; multiple: true } ? string[]
  : S extends { type: "string" } ? string | undefined
  : S extends { type: "number" | "integer" } ? number | undefined
  : S extends { type: "choice"; choices: readonly (infer C)[] } ? C | undefined
  : never;

/** Flags every command takes. */
export const GLOBAL_FLAGS = {
  home: {
    type: "string",
    value: "DIR",
    description: "data root (default $REINS_HOME, then ~/.reins)",
  },
  json: { type: "boolean", description: "machine-readable output on stdout" },
  quiet: { type: "boolean", short: "q", description: "print only what was asked for" },
  help: { type: "boolean", short: "h", description: "show this help" },
} as const satisfies FlagSpecs;

export type FlagValues<F extends FlagSpecs> =
  & { readonly [K in keyof F]: FlagValue<F[K]> }
  & { readonly [K in keyof typeof GLOBAL_FLAGS]: FlagValue<typeof GLOBAL_FLAGS[K]> };

export interface ParsedArgs<F extends FlagSpecs> {
  flags: FlagValues<F>;
  positionals: string[];
}

/** Declares a command's flags, keeping their literal types (the values a command reads). */
export function defineFlags<const F extends FlagSpecs>(specs: F): F {
  return specs;
}

export function parseArgs<F extends FlagSpecs>(
  argv: readonly string[],
  specs: F,
  command: string,
): ParsedArgs<F> {
  const all: FlagSpecs = { ...GLOBAL_FLAGS, ...specs };
  const byShort = new Map<string, string>();
  for (const [name, spec] of Object.entries(all)) if (spec.short) byShort.set(spec.short, name);
  const flags: Record<string, string | boolean | number | string[] | undefined> = {};
  for (const [name, spec] of Object.entries(all)) {
    if (spec.type === "boolean") flags[name] = false;
    else if (spec.type === "string" && spec.multiple) flags[name] = [];
  }
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
    const spec = Object.hasOwn(all, name) ? all[name] : undefined;
    if (spec === undefined) throw unknownFlag(`--${name}`, all, command);
    if (spec.type === "boolean") {
      if (inline !== undefined && !/^(true|false)$/.test(inline)) {
        throw new UsageError(`--${name} takes no value: got ${JSON.stringify(inline)}`, {
          hint: `write --${name} alone`,
        });
      }
      flags[name] = inline === undefined ? true : inline === "true";
      continue;
    }
    let raw: string;
    if (inline !== undefined) {
      raw = inline;
    } else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        throw new UsageError(`--${name} needs a value`, {
          hint: `write --${name} ${spec.value ?? "VALUE"} (see reins ${command} --help)`,
        });
      }
      raw = next;
      i++;
    }
    if (spec.type === "string" && spec.multiple) {
      (flags[name] as string[]).push(raw);
    } else {
      flags[name] = convert(name, spec, raw);
    }
  }
  return { flags: flags as FlagValues<F>, positionals };
}

/** A flag's value as its spec types it, or a UsageError that names the flag and the value. */
function convert(name: string, spec: FlagSpec, raw: string): string | number {
  const got = `got ${JSON.stringify(raw)}`;
  switch (spec.type) {
    case "string":
      return raw;
    case "number": {
      const value = raw.trim() === "" ? NaN : Number(raw);
      const min = spec.min ?? 0;
      if (!Number.isFinite(value) || value < min || (spec.positive && value <= 0)) {
        const what = spec.positive
          ? "a number more than 0"
          : min === 0
          ? "a non-negative number"
          : `a number of at least ${min}`;
        throw new UsageError(`--${name} takes ${what}: ${got}`);
      }
      return value;
    }
    case "integer": {
      // Digits only: Number() would also take "1e2", "0x3", " 2" and "2.0" (regression: --epochs 1e2
      // played every cell 100 times).
      const value = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
      const min = spec.min ?? 1;
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      if (!Number.isInteger(value) || value < min || value > max) {
        throw new UsageError(`--${name} takes a whole number from ${min} to ${max}: ${got}`);
      }
      return value;
    }
    case "choice": {
      if (spec.choices.includes(raw)) return raw;
      const guess = nearest(raw, spec.choices);
      throw new UsageError(`--${name} takes ${listOf(spec.choices)}: ${got}`, {
        hint: guess ? `did you mean --${name} ${guess}?` : undefined,
      });
    }
    case "boolean":
      throw new Error(`--${name} is a boolean flag: it takes no value`);
    default:
      return assertNever(spec, "flag spec");
  }
}

function listOf(choices: readonly string[]): string {
  if (choices.length <= 1) return choices.join("");
  return `${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`;
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

/** What help shows after the flag's name: its value's placeholder, or its choices. */
export function valueHint(spec: FlagSpec): string | null {
  switch (spec.type) {
    case "boolean":
      return null;
    case "choice":
      return spec.value ?? spec.choices.join("|");
    case "string":
    case "number":
    case "integer":
      return spec.value ?? "VALUE";
    default:
      return assertNever(spec, "flag spec");
  }
}
