// Validators compiled from zod schemas into plain JavaScript source, so that the paths every run
// takes (appending an event, writing run.json, reading a log, loading the settings) check their
// contracts without loading zod at all: zod costs each command ~15 ms of CPU, ~40 ms of wall
// time on a busy machine, to load (`deno task bench startup`). zod stays the one definition —
// scripts/gen_checks.ts writes the lib/**/*.gen.ts modules from the schemas with this, and
// tests/scripts/schema_codegen_test.ts holds the output to zod as the oracle: same verdict, same
// first issue (message and path), same parsed value where a default applies. A construct it does
// not know makes it throw. A build tool: nothing at run time imports it.
//
// A validator is `(value) => Issue | null`: null when valid, else zod's first issue. Defaults
// (`.default(x)`) are written into the value checked, as zod's parse would return them, and a
// record's own key `__proto__`, which zod passes over, is removed; nothing else is copied,
// stripped or reordered.
import type { z } from "zod";

interface Def {
  type: string;
  checks?: { _zod: { def: Record<string, unknown> } }[];
  [key: string]: unknown;
}

const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** A construct the generator does not know: the caller keeps zod for that schema. */
export class UnsupportedSchema extends Error {}

/**
 * The source of the helpers every generated module shares: received-type names, ISO datetimes,
 * URL parsing, and joining a function's base path (`at`) with the path of a field below it (on failure only).
 */
export const PRELUDE = `function join(at, rel) {
  return at === "" ? rel : rel === "" ? at : at + "." + rel;
}
function received(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isFinite(v) ? "number" : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  return typeof v;
}
function isDatetime(check, v) {
  const m = check.minute;
  if (v.length === 24 && m !== "" && v.startsWith(m) && v.charCodeAt(19) === 46 && v.charCodeAt(23) === 90) {
    const s1 = v.charCodeAt(17), s2 = v.charCodeAt(18), f1 = v.charCodeAt(20), f2 = v.charCodeAt(21), f3 = v.charCodeAt(22);
    if (s1 >= 48 && s1 <= 53 && s2 >= 48 && s2 <= 57 && f1 >= 48 && f1 <= 57 && f2 >= 48 && f2 <= 57 && f3 >= 48 && f3 <= 57) return true;
  }
  if (check.utc && v.length === 24 && isUtcMillis(v)) {
    check.minute = v.slice(0, 17);
    return true;
  }
  if (!check.pattern.test(v)) return false;
  if (v.length === 24 && v.charCodeAt(19) === 46 && v.charCodeAt(23) === 90) check.minute = v.slice(0, 17);
  return true;
}
function digits(v, at, n) {
  let value = 0;
  for (let i = at; i < at + n; i++) {
    const c = v.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    value = value * 10 + c;
  }
  return value;
}
function isUtcMillis(v) {
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(10) !== 84 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58 || v.charCodeAt(19) !== 46 || v.charCodeAt(23) !== 90) return false;
  const year = digits(v, 0, 4), month = digits(v, 5, 2), day = digits(v, 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31)) return false;
  const hour = digits(v, 11, 2), minute = digits(v, 14, 2), second = digits(v, 17, 2);
  return hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 59 && digits(v, 20, 3) >= 0;
}
function isUrl(v) {
  try {
    return new URL(v).protocol.length > 0;
  } catch {
    return false;
  }
}`;

/** Where a generated check is: a path known when generating, or one built at run time. */
type PathExpr = { literal: string } | { code: string };

function pathCode(path: PathExpr): string {
  return "literal" in path ? JSON.stringify(path.literal) : path.code;
}

function child(path: PathExpr, key: string | { indexVar: string }): PathExpr {
  if (typeof key === "string") {
    if ("literal" in path) return { literal: path.literal ? `${path.literal}.${key}` : key };
    return { code: `${path.code} + ${JSON.stringify(`.${key}`)}` };
  }
  const prefix = "literal" in path
    ? (path.literal ? `${JSON.stringify(`${path.literal}.`)} + ` : `"" + `)
    : `${path.code} + "." + `;
  return { code: `${prefix}${key.indexVar}` };
}

/**
 * Names the generated code uses for locals and for constants hoisted out of it, and the schemas
 * that are functions of their own (checked by a call wherever they appear, not inlined again).
 */
export class Emitter {
  readonly constants: string[] = [];
  #names = 0;
  #constantNames = new Map<string, string>();
  readonly #prefix: string;
  readonly #shared = new Map<unknown, string>();
  #emitting: unknown = null;

  constructor(prefix = "c") {
    this.#prefix = prefix;
  }

  /** Makes `schema` the function `name` (emitted by the caller with emitFunction). */
  share(schema: unknown, name: string): void {
    this.#shared.set(schema, name);
  }

  /** The function name of a shared schema, unless it is the one being emitted. */
  sharedName(schema: unknown): string | undefined {
    return schema === this.#emitting ? undefined : this.#shared.get(schema);
  }

  /** Emits `fn` with `schema` as the one being emitted (so that it does not call itself). */
  emitting<T>(schema: unknown, fn: () => T): T {
    const outer = this.#emitting;
    this.#emitting = schema;
    try {
      return fn();
    } finally {
      this.#emitting = outer;
    }
  }

  name(): string {
    return `v${this.#names++}`;
  }

  /** A module-level constant holding `source`; the same source is one constant. */
  constant(source: string): string {
    let name = this.#constantNames.get(source);
    if (name === undefined) {
      name = `${this.#prefix}${this.#constantNames.size}`;
      this.#constantNames.set(source, name);
      this.constants.push(`const ${name} = ${source};`);
    }
    return name;
  }
}

const fail = (path: PathExpr, message: string) =>
  `return { path: join(at, ${pathCode(path)}), message: ${message} };\n`;
const text = (value: string) => JSON.stringify(value);
const expected = (what: string, v: string) =>
  `${text(`Invalid input: expected ${what}, received `)} + received(${v})`;

/**
 * The body of a function of `value` (and `at`, the path of `value` in a bigger value) that
 * returns the first issue of `schema`, or null. Hoisted constants go to `e`.
 */
export function emitValidatorBody(schema: z.ZodType, e: Emitter): string {
  return e.emitting(schema, () => `${emit(schema, "value", { literal: "" }, e)}return null;\n`);
}

/** `function (value, at = "") { … }` checking `schema`. */
export function emitFunction(schema: z.ZodType, e: Emitter): string {
  return `function (value, at = "") {\n${emitValidatorBody(schema, e)}}`;
}

function emit(schema: unknown, v: string, path: PathExpr, e: Emitter): string {
  const shared = e.sharedName(schema);
  if (shared !== undefined) {
    const issue = e.name();
    return `{\nconst ${issue} = ${shared}(${v}, join(at, ${pathCode(path)}));\n` +
      `if (${issue} !== null) return ${issue};\n}\n`;
  }
  const def = defOf(schema);
  switch (def.type) {
    case "string": {
      let code = `if (typeof ${v} !== "string") ${fail(path, expected("string", v))}`;
      if (def.format !== undefined) code += emitFormat(def, v, path, e);
      return code + emitChecks(def, v, path, e, "string");
    }
    case "number": {
      const isInt = (def.checks ?? []).some((c) => c._zod.def.check === "number_format");
      let code = `if (typeof ${v} !== "number" || !Number.isFinite(${v})) ` +
        fail(path, expected("number", v));
      if (isInt) {
        code += `if (!Number.isInteger(${v})) ${fail(path, expected("int", v))}`;
      }
      return code + emitChecks(def, v, path, e, "number");
    }
    case "boolean":
      return `if (typeof ${v} !== "boolean") ${fail(path, expected("boolean", v))}`;
    case "null":
      return `if (${v} !== null) ${fail(path, expected("null", v))}`;
    case "unknown":
    case "any":
      return "";
    case "never":
      return fail(path, expected("never", v));
    case "literal": {
      const values = def.values as unknown[];
      const message = values.length === 1
        ? text(`Invalid input: expected ${JSON.stringify(values[0])}`)
        : text(`Invalid option: expected one of ${values.map((x) => JSON.stringify(x)).join("|")}`);
      return oneOf(values, v, path, message, e);
    }
    case "enum": {
      const values = Object.values(def.entries as Record<string, unknown>);
      const message = text(
        `Invalid option: expected one of ${values.map((x) => JSON.stringify(x)).join("|")}`,
      );
      return oneOf(values, v, path, message, e);
    }
    case "nullable":
      return `if (${v} !== null) {\n${emit(def.innerType, v, path, e)}}\n`;
    case "optional":
      return `if (${v} !== undefined) {\n${emit(def.innerType, v, path, e)}}\n`;
    case "array": {
      const i = e.name();
      const element = e.name();
      return `if (!Array.isArray(${v})) ${fail(path, expected("array", v))}` +
        emitChecks(def, v, path, e, "array") +
        `for (let ${i} = 0; ${i} < ${v}.length; ${i}++) {\nconst ${element} = ${v}[${i}];\n` +
        `${emit(def.element, element, child(path, { indexVar: i }), e)}}\n`;
    }
    case "record": {
      if (defOf(def.keyType).type !== "string" || (defOf(def.keyType).checks?.length ?? 0) > 0) {
        throw new UnsupportedSchema("a record whose keys are not plain strings");
      }
      const key = e.name();
      const item = e.name();
      return `if (typeof ${v} !== "object" || ${v} === null || Array.isArray(${v})) ` +
        fail(path, expected("record", v)) +
        // zod passes over a key named __proto__ (JSON.parse makes it an own key) and leaves it out
        // of what it returns: it is removed here too, so no caller meets it.
        `for (const ${key} of Object.keys(${v})) {\n` +
        `if (${key} === "__proto__") { delete ${v}[${key}]; continue; }\n` +
        `const ${item} = ${v}[${key}];\n` +
        emit(def.valueType, item, { code: `${pathPrefix(path)}${key}` }, e) + "}\n";
    }
    case "object":
      return emitObject(def, v, path, e);
    case "union":
      return emitUnion(def, v, path, e);
    default:
      throw new UnsupportedSchema(`zod ${def.type}`);
  }
}

/** Code that builds `<path>.` before a key known only at run time. */
function pathPrefix(path: PathExpr): string {
  if ("literal" in path) return path.literal ? `${JSON.stringify(`${path.literal}.`)} + ` : "";
  return `${path.code} + "." + `;
}

const notObject = (v: string) => `typeof ${v} !== "object" || ${v} === null || Array.isArray(${v})`;

/** The checks of an object's fields, in order (zod's order), `v` known to be an object. */
function emitFields(fields: [string, unknown][], v: string, path: PathExpr, e: Emitter): string {
  let code = "";
  for (const [key, field] of fields) {
    const name = e.name();
    const quoted = JSON.stringify(key);
    const fieldPath = child(path, key);
    const fieldDef = defOf(field);
    code += `let ${name} = ${v}[${quoted}];\n`;
    if (fieldDef.type === "default") {
      // zod's parse returns the default in place of a missing value: so does this one.
      const fallback = JSON.stringify(fieldDef.defaultValue);
      if (fallback === undefined) throw new UnsupportedSchema("a default that is not JSON");
      code += `if (${name} === undefined) { ${name} = ${fallback}; ${v}[${quoted}] = ${name}; }\n`;
      code += emit(fieldDef.innerType, name, fieldPath, e);
      continue;
    }
    // zod requires the key itself unless the field may be absent (`optin`): an unknown() field
    // must be there, even though its value may be undefined. (Any other field refuses an
    // undefined value in its own check, with zod's message for it.)
    const optin = (field as { _zod: { optin?: string } })._zod.optin;
    if (optin === undefined && (fieldDef.type === "unknown" || fieldDef.type === "any")) {
      // Asked only when the value is undefined: `in` on every field would double the cost.
      code += `if (${name} === undefined && !(${quoted} in ${v})) ${
        fail(fieldPath, text("Invalid input: expected nonoptional, received undefined"))
      }`;
    }
    code += emit(field, name, fieldPath, e);
  }
  return code;
}

function emitObject(def: Def, v: string, path: PathExpr, e: Emitter): string {
  if ((def.checks?.length ?? 0) > 0) throw new UnsupportedSchema("object refinements");
  const shape = def.shape as Record<string, unknown>;
  let code = `if (${notObject(v)}) ${fail(path, expected("object", v))}` +
    emitFields(Object.entries(shape), v, path, e);
  const catchall = def.catchall === undefined ? null : defOf(def.catchall).type;
  if (catchall === "never") {
    const known = e.constant(`new Set(${JSON.stringify(Object.keys(shape))})`);
    const extra = e.name();
    code += `const ${extra} = Object.keys(${v}).filter((k) => !${known}.has(k));\n` +
      `if (${extra}.length > 0) ${
        fail(
          path,
          `(${extra}.length === 1 ? "Unrecognized key: " : "Unrecognized keys: ") + ` +
            `${extra}.map((k) => '"' + k + '"').join(", ")`,
        )
      }`;
  } else if (catchall !== null && catchall !== "unknown" && catchall !== "any") {
    throw new UnsupportedSchema(`an object catchall of ${catchall}`);
  }
  return code;
}

function emitUnion(def: Def, v: string, path: PathExpr, e: Emitter): string {
  const options = def.options as unknown[];
  const discriminator = def.discriminator as string | undefined;
  if (discriminator === undefined) {
    // Any option may match: each becomes a function of its own, tried in turn.
    const checks = options.map((option) => e.constant(emitFunction(option as z.ZodType, e)));
    return `if (${checks.map((check) => `${check}(${v}) !== null`).join(" && ")}) ` +
      fail(path, text("Invalid input"));
  }
  // Fields every option shares (the same schemas, in the same places, before the tag) are
  // checked once, after the tag: in the order zod checks them, as the option it picks would.
  const shapes = options.map((option) => {
    const optionDef = defOf(option);
    if (optionDef.type !== "object") throw new UnsupportedSchema("a union of non-objects");
    if ((optionDef.checks?.length ?? 0) > 0 || optionDef.catchall !== undefined) {
      throw new UnsupportedSchema("a union option with refinements or a catchall");
    }
    return Object.entries(optionDef.shape as Record<string, unknown>);
  });
  let common = 0;
  while (
    shapes.every((shape) =>
      common < shape.length && shape[common][0] !== discriminator &&
      shape[common][0] === shapes[0][common][0] && shape[common][1] === shapes[0][common][1]
    )
  ) common++;
  const tags: unknown[] = [];
  let cases = "";
  for (const shape of shapes) {
    const tag = defOf(shape.find(([key]) => key === discriminator)?.[1]);
    if (tag.type !== "literal") throw new UnsupportedSchema("a discriminator that is no literal");
    for (const value of tag.values as unknown[]) {
      if (tags.includes(value) || !isPlain(value)) throw new UnsupportedSchema("a repeated tag");
      tags.push(value);
      cases += `case ${JSON.stringify(value)}:\n`;
    }
    cases += `{\n${emitFields(shape.slice(common), v, path, e)}break;\n}\n`;
  }
  const expectedTags = tags.map((tag) => `'${String(tag)}'`).join(" | ");
  const tagVar = e.name();
  return `if (${notObject(v)}) ${fail(path, expected("object", v))}` +
    `const ${tagVar} = ${v}[${JSON.stringify(discriminator)}];\n` +
    `if (!${e.constant(`new Set(${JSON.stringify(tags)})`)}.has(${tagVar})) ${
      fail(
        child(path, discriminator),
        text(`Invalid discriminator value. Expected ${expectedTags}`),
      )
    }` + emitFields(shapes[0].slice(0, common), v, path, e) +
    `switch (${tagVar}) {\n${cases}}\n`;
}

function isPlain(value: unknown): boolean {
  return typeof value === "string" || typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value)) || value === null;
}

function oneOf(values: unknown[], v: string, path: PathExpr, message: string, e: Emitter): string {
  if (!values.every(isPlain)) throw new UnsupportedSchema("a literal that is not plain JSON");
  if (values.length <= 8) {
    return `if (${values.map((value) => `${v} !== ${JSON.stringify(value)}`).join(" && ")}) ` +
      fail(path, message);
  }
  return `if (!${e.constant(`new Set(${JSON.stringify(values)})`)}.has(${v})) ${
    fail(path, message)
  }`;
}

/**
 * Whether a datetime pattern takes `YYYY-MM-DDTHH:MM:SS.sssZ` with any valid date and time (zod's
 * patterns without a precision other than 3, or with offsets, local times): it takes these, each a
 * leap day, a month's last day, the first and last second of a day.
 */
function takesUtcMillis(pattern: RegExp): boolean {
  return [
    "2000-02-29T00:00:00.000Z",
    "2024-02-29T23:59:59.999Z",
    "1900-02-28T12:30:45.678Z",
    "0000-01-31T09:05:01.010Z",
    "9999-12-31T23:59:59.999Z",
    "2026-04-30T10:00:00.000Z",
    "2026-11-30T19:59:09.900Z",
  ].every((sample) => new RegExp(pattern.source, pattern.flags).test(sample));
}

function regexSource(pattern: RegExp): string {
  return `new RegExp(${JSON.stringify(pattern.source)}, ${JSON.stringify(pattern.flags)})`;
}

function patternTest(pattern: RegExp, v: string, path: PathExpr, message: string, e: Emitter) {
  const name = e.constant(regexSource(pattern));
  const reset = pattern.global || pattern.sticky ? `${name}.lastIndex = 0;\n` : "";
  return `${reset}if (!${name}.test(${v})) ${fail(path, message)}`;
}

const FORMAT_MESSAGES: Record<string, string> = {
  datetime: "Invalid ISO datetime",
  date: "Invalid ISO date",
  time: "Invalid ISO time",
  uuid: "Invalid UUID",
  guid: "Invalid GUID",
};

/** A string format: its pattern where zod checks one, or a URL parse (with its protocol). */
function emitFormat(def: Def, v: string, path: PathExpr, e: Emitter): string {
  const format = def.format as string;
  if (format === "url") {
    if (def.hostname !== undefined || def.normalize) throw new UnsupportedSchema("url options");
    let test = `!isUrl(${v})`;
    if (def.protocol instanceof RegExp) {
      const protocol = e.constant(regexSource(def.protocol));
      test += ` || !${protocol}.test(new URL(${v}).protocol.replace(/:$/, ""))`;
    }
    return `if (${test}) ${fail(path, text("Invalid URL"))}`;
  }
  const message = FORMAT_MESSAGES[format];
  if (message === undefined || !(def.pattern instanceof RegExp)) {
    throw new UnsupportedSchema(`string format ${format}`);
  }
  if (format === "datetime" && !def.pattern.global && !def.pattern.sticky) {
    // A run's timestamps share their minute, and its log holds thousands: isDatetime (PRELUDE)
    // remembers the minute of the last `YYYY-MM-DDTHH:MM:SS.sssZ` the pattern matched, and one in
    // that minute whose seconds ([0-5]\d) and milliseconds are digits matches it too (zod's
    // datetime patterns read the seconds and fraction alike whatever their value). Reading a
    // 100,000-event log ran its timestamps' pattern 133,000 times (`deno task bench views`).
    // And where the pattern takes a valid `YYYY-MM-DDTHH:MM:SS.sssZ` (what Date#toISOString
    // writes), isUtcMillis reads one by hand, the same leap years and month lengths as zod's date
    // pattern: the first timestamp of a process then does not compile that pattern, ~0.4 ms.
    const check = e.constant(
      `{ pattern: ${regexSource(def.pattern)}, minute: "", utc: ${takesUtcMillis(def.pattern)} }`,
    );
    return `if (!isDatetime(${check}, ${v})) ${fail(path, text(message))}`;
  }
  return patternTest(def.pattern, v, path, text(message), e);
}

/** The refinements zod keeps in `checks` (lengths, integer formats, bounds, patterns). */
function emitChecks(def: Def, v: string, path: PathExpr, e: Emitter, what: string): string {
  let code = "";
  const unit = what === "string" ? " characters" : what === "array" ? " items" : "";
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    const bound = (value: unknown) => {
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw new UnsupportedSchema("a bound that is not finite");
      }
      return String(value);
    };
    const sized = (op: string, n: string, big: boolean) =>
      text(`Too ${big ? "big" : "small"}: expected ${what} to have ${op}${n}${unit}`);
    switch (c.check) {
      case "min_length":
        code += `if (${v}.length < ${bound(c.minimum)}) ${
          fail(path, sized(">=", bound(c.minimum), false))
        }`;
        break;
      case "max_length":
        code += `if (${v}.length > ${bound(c.maximum)}) ${
          fail(path, sized("<=", bound(c.maximum), true))
        }`;
        break;
      case "length_equals":
        code += `if (${v}.length !== ${bound(c.length)}) ${
          fail(path, sized("", bound(c.length), c.length as number > 0))
        }`;
        break;
      case "greater_than": {
        const op = c.inclusive ? ">=" : ">";
        code += `if (!(${v} ${op} ${bound(c.value)})) ${
          fail(path, text(`Too small: expected ${what} to be ${op}${bound(c.value)}`))
        }`;
        break;
      }
      case "less_than": {
        const op = c.inclusive ? "<=" : "<";
        code += `if (!(${v} ${op} ${bound(c.value)})) ${
          fail(path, text(`Too big: expected ${what} to be ${op}${bound(c.value)}`))
        }`;
        break;
      }
      case "number_format":
        if (c.format !== "safeint") throw new UnsupportedSchema(`number format ${c.format}`);
        code += `if (${v} > ${Number.MAX_SAFE_INTEGER}) ${
          fail(path, text(`Too big: expected int to be <=${Number.MAX_SAFE_INTEGER}`))
        }if (${v} < ${Number.MIN_SAFE_INTEGER}) ${
          fail(path, text(`Too small: expected int to be >=${Number.MIN_SAFE_INTEGER}`))
        }`;
        break;
      case "string_format":
        if (c.format !== "regex" || !(c.pattern instanceof RegExp)) {
          throw new UnsupportedSchema(`string format ${c.format}`);
        }
        code += patternTest(
          c.pattern,
          v,
          path,
          text(`Invalid string: must match pattern ${c.pattern}`),
          e,
        );
        break;
      default:
        throw new UnsupportedSchema(`zod check ${c.check}`);
    }
  }
  return code;
}

/** What a generated validator returns for an invalid value: zod's first issue. */
export interface Issue {
  /** zod's path, joined with "." ("" for the value itself). */
  path: string;
  message: string;
}

export type Validator = (value: unknown) => Issue | null;

/** A validator made at run time from `schema` (for tests; the store uses the generated module). */
export function compileValidator(schema: z.ZodType): Validator {
  const e = new Emitter();
  const fn = emitFunction(schema, e);
  const source = `${PRELUDE}\n${e.constants.join("\n")}\nreturn ${fn};`;
  return new Function(source)() as Validator;
}
