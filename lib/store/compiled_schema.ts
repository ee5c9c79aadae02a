// A fast yes/no check compiled from a zod schema, for the hot path of reading event logs, where
// zod's own parse costs several times the JSON.parse before it. zod stays the one definition: the
// compiler reads the schema's definition and gives up (returns null) on any construct it does not
// know, and callers run zod itself on whatever the check refuses, to get zod's message. The check
// is generated as one straight-line function (closures per field cost 5× as much), answers only
// "valid or not", and neither strips unknown keys nor copies the value.
import type { z } from "zod";

export type Check = (value: unknown) => boolean;

interface Def {
  type: string;
  checks?: { _zod: { def: Record<string, unknown> } }[];
  [key: string]: unknown;
}

const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** String formats whose whole check is their pattern (zod's `string_format` with a regex). */
const PATTERN_FORMATS = new Set(["datetime", "date", "time", "regex", "uuid", "guid"]);

class Unsupported extends Error {}

/** What the generated code refers to: patterns and value sets, passed in as `C`. */
class Emitter {
  readonly constants: unknown[] = [];
  #names = 0;

  name(): string {
    return `v${this.#names++}`;
  }

  constant(value: unknown): string {
    this.constants.push(value);
    return `C[${this.constants.length - 1}]`;
  }
}

/** A check equivalent to `schema.safeParse(value).success`, or null when it cannot build one. */
export function compileSchema(schema: z.ZodType): Check | null {
  try {
    const emitter = new Emitter();
    const body = emit(schema, "value", emitter);
    const factory = new Function("C", `return function check(value) {\n${body}\nreturn true;\n}`);
    return factory(emitter.constants) as Check;
  } catch {
    // An unknown construct, or a runtime that refuses `new Function`: callers fall back to zod.
    return null;
  }
}

const FAIL = "return false;";

function emit(schema: unknown, v: string, e: Emitter): string {
  const def = defOf(schema);
  switch (def.type) {
    case "string": {
      let code = `if (typeof ${v} !== "string") ${FAIL}\n`;
      if (def.format !== undefined) {
        if (!PATTERN_FORMATS.has(def.format as string) || !(def.pattern instanceof RegExp)) {
          throw new Unsupported();
        }
        code += patternTest(def.pattern, v, e);
      }
      return code + emitChecks(def, v, e);
    }
    case "number":
      return `if (typeof ${v} !== "number" || !Number.isFinite(${v})) ${FAIL}\n` +
        emitChecks(def, v, e);
    case "boolean":
      return `if (typeof ${v} !== "boolean") ${FAIL}\n`;
    case "null":
      return `if (${v} !== null) ${FAIL}\n`;
    case "unknown":
    case "any":
      return "";
    case "never":
      return `${FAIL}\n`;
    case "literal":
      return oneOf(def.values as unknown[], v, e);
    case "enum":
      return oneOf(Object.values(def.entries as Record<string, unknown>), v, e);
    case "nullable":
      return `if (${v} !== null) {\n${emit(def.innerType, v, e)}}\n`;
    case "optional":
      return `if (${v} !== undefined) {\n${emit(def.innerType, v, e)}}\n`;
    case "array": {
      const i = e.name();
      const element = e.name();
      return `if (!Array.isArray(${v})) ${FAIL}\n${emitChecks(def, v, e)}` +
        `for (let ${i} = 0; ${i} < ${v}.length; ${i}++) {\nconst ${element} = ${v}[${i}];\n` +
        `${emit(def.element, element, e)}}\n`;
    }
    case "object":
      return emitObject(def, v, e);
    case "union":
      return emitUnion(def, v, e);
    default:
      throw new Unsupported();
  }
}

const isObject = (v: string) =>
  `if (typeof ${v} !== "object" || ${v} === null || Array.isArray(${v})) ${FAIL}\n`;

function emitObject(def: Def, v: string, e: Emitter): string {
  if ((def.checks?.length ?? 0) > 0) throw new Unsupported();
  const shape = def.shape as Record<string, unknown>;
  let code = isObject(v);
  for (const [key, field] of Object.entries(shape)) {
    const name = e.name();
    const quoted = JSON.stringify(key);
    // zod requires the key itself unless the field may be absent (`optin`): an unknown() field
    // must be there, even though its value may be undefined.
    const optin = (field as { _zod: { optin?: string } })._zod.optin;
    if (optin === "defaulted") throw new Unsupported();
    code += `const ${name} = ${v}[${quoted}];\n`;
    // Asked only when the value is undefined: `in` on every field would double the check's cost.
    if (optin === undefined) code += `if (${name} === undefined && !(${quoted} in ${v})) ${FAIL}\n`;
    code += emit(field, name, e);
  }
  if (def.catchall !== undefined) {
    const catchall = defOf(def.catchall).type;
    if (catchall !== "unknown" && catchall !== "any") {
      const known = e.constant(new Set(Object.keys(shape)));
      const key = e.name();
      const extra = e.name();
      code += `for (const ${key} in ${v}) {\nif (${known}.has(${key})) continue;\n` +
        `const ${extra} = ${v}[${key}];\n${emit(def.catchall, extra, e)}}\n`;
    }
  }
  return code;
}

function emitUnion(def: Def, v: string, e: Emitter): string {
  const options = def.options as unknown[];
  const discriminator = def.discriminator as string | undefined;
  if (discriminator === undefined) {
    // Any option may match: each becomes a function of its own, tried in turn.
    const checks = options.map((option) => {
      const inner = new Emitter();
      const body = emit(option, "value", inner);
      const factory = new Function("C", `return function (value) {\n${body}\nreturn true;\n}`);
      return e.constant(factory(inner.constants));
    });
    return `if (!(${checks.map((check) => `${check}(${v})`).join(" || ")})) ${FAIL}\n`;
  }
  let code = `${isObject(v)}switch (${v}[${JSON.stringify(discriminator)}]) {\n`;
  const seen = new Set<unknown>();
  for (const option of options) {
    const optionDef = defOf(option);
    if (optionDef.type !== "object") throw new Unsupported();
    const tag = defOf((optionDef.shape as Record<string, unknown>)[discriminator]);
    if (tag.type !== "literal") throw new Unsupported();
    for (const value of tag.values as unknown[]) {
      if (seen.has(value) || !isPlain(value)) throw new Unsupported();
      seen.add(value);
      code += `case ${JSON.stringify(value)}:\n`;
    }
    code += `{\n${emit(option, v, e)}break;\n}\n`;
  }
  return `${code}default: ${FAIL}\n}\n`;
}

function isPlain(value: unknown): boolean {
  return typeof value === "string" || typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value)) || value === null;
}

function oneOf(values: unknown[], v: string, e: Emitter): string {
  if (values.length <= 8 && values.every(isPlain)) {
    return `if (${
      values.map((value) => `${v} !== ${JSON.stringify(value)}`).join(" && ")
    }) ${FAIL}\n`;
  }
  return `if (!${e.constant(new Set(values))}.has(${v})) ${FAIL}\n`;
}

function patternTest(pattern: RegExp, v: string, e: Emitter): string {
  const name = e.constant(pattern);
  const reset = pattern.global || pattern.sticky ? `${name}.lastIndex = 0;\n` : "";
  return `${reset}if (!${name}.test(${v})) ${FAIL}\n`;
}

/** The refinements zod keeps in `checks` (lengths, integer formats, bounds, patterns). */
function emitChecks(def: Def, v: string, e: Emitter): string {
  let code = "";
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    const bound = (value: unknown) => {
      if (typeof value !== "number" || !Number.isFinite(value)) throw new Unsupported();
      return String(value);
    };
    switch (c.check) {
      case "min_length":
        code += `if (${v}.length < ${bound(c.minimum)}) ${FAIL}\n`;
        break;
      case "max_length":
        code += `if (${v}.length > ${bound(c.maximum)}) ${FAIL}\n`;
        break;
      case "length_equals":
        code += `if (${v}.length !== ${bound(c.length)}) ${FAIL}\n`;
        break;
      case "greater_than":
        code += `if (!(${v} ${c.inclusive ? ">=" : ">"} ${bound(c.value)})) ${FAIL}\n`;
        break;
      case "less_than":
        code += `if (!(${v} ${c.inclusive ? "<=" : "<"} ${bound(c.value)})) ${FAIL}\n`;
        break;
      case "number_format":
        if (c.format !== "safeint") throw new Unsupported();
        code += `if (!Number.isSafeInteger(${v})) ${FAIL}\n`;
        break;
      case "string_format":
        if (c.format !== "regex" || !(c.pattern instanceof RegExp)) throw new Unsupported();
        code += patternTest(c.pattern, v, e);
        break;
      default:
        throw new Unsupported();
    }
  }
  return code;
}
