// The validators generated from the zod schemas against zod itself, the oracle: the same verdict
// on valid values and on values with one field broken, the same first issue (message and path),
// and the same value where zod fills in a default.
import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import {
  compileValidator,
  PRELUDE,
  UnsupportedSchema,
} from "../../scripts/_tools/schema_codegen.ts";
import { HarnessSession, PAYLOADS, RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { ConfigFile, Settings } from "../../lib/core/config_schema.ts";
import { anyJson, eventInput } from "../store/_arbitraries.ts";

/** zod's verdict as the generated validators give it: null, or the first issue. */
function oracle(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0];
  return { path: issue.path.map(String).join("."), message: issue.message };
}

function agrees(schema: z.ZodType, value: unknown, validate = compileValidator(schema)) {
  // Each side gets its own copy: the generated validator writes defaults into what it checks.
  const ours = validate(structuredClone(value));
  assert.deepEqual(ours, oracle(schema, structuredClone(value)), JSON.stringify(value));
}

const envelope = fc.record({
  id: fc.string({ minLength: 1, maxLength: 8 }),
  runId: fc.string({ minLength: 1, maxLength: 8 }),
  sessionId: fc.string({ minLength: 1, maxLength: 8 }),
  sequence: fc.nat(),
  timestamp: fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString()),
});
const storedEvent = fc.tuple(envelope, eventInput).map(([head, body]) => ({ ...head, ...body }));

/** `value` with the field at a random path (top level or one level down) replaced or removed. */
function mutated(
  value: Record<string, unknown>,
  pick: number,
  replacement: unknown,
  remove: boolean,
) {
  const copy = structuredClone(value) as Record<string, unknown>;
  const targets: [Record<string, unknown>, string][] = [];
  for (const key of Object.keys(copy)) {
    targets.push([copy, key]);
    const inner = copy[key];
    if (inner !== null && typeof inner === "object" && !Array.isArray(inner)) {
      for (const innerKey of Object.keys(inner)) {
        targets.push([inner as Record<string, unknown>, innerKey]);
      }
    }
  }
  const [target, key] = targets[pick % targets.length];
  if (remove) delete target[key];
  else target[key] = replacement;
  return copy;
}

Deno.test("compileValidator() agrees with zod on events, valid and with one field broken", () => {
  const validate = compileValidator(RunEvent);
  fc.assert(
    fc.property(
      storedEvent,
      fc.nat(),
      anyJson,
      fc.boolean(),
      (event, pick, replacement, remove) => {
        assert.equal(validate(event), null);
        agrees(RunEvent, mutated(event, pick, replacement, remove), validate);
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("compileValidator() agrees with zod on each payload with one field broken", () => {
  const validators = Object.fromEntries(
    Object.entries(PAYLOADS).map(([type, schema]) => [type, compileValidator(schema)]),
  );
  fc.assert(
    fc.property(eventInput, fc.nat(), anyJson, fc.boolean(), (event, pick, replacement, remove) => {
      const schema = PAYLOADS[event.type];
      const payload = event.payload as Record<string, unknown>;
      if (Object.keys(payload).length === 0) return;
      agrees(schema, mutated(payload, pick, replacement, remove), validators[event.type]);
    }),
    { numRuns: 2000 },
  );
});

const record = {
  id: "r1",
  sessionId: "s1",
  contextId: null,
  nativeSessionId: null,
  parentRunId: null,
  resumedFromRunId: null,
  relation: null,
  harness: "h",
  driver: "d",
  trigger: "cli",
  cwd: "/",
  goal: null,
  startedAt: "2026-01-01T00:00:00.000Z",
  endedAt: null,
  status: "running",
  exitCode: null,
  terminalReason: null,
};

Deno.test("compileValidator() agrees with zod on run records and harness sessions, one field broken", () => {
  const session = {
    type: "reins.harness-session",
    session_id: "s",
    native_session_id: null,
    harness: "h",
    driver: "d",
    created_ms: 1,
    updated_ms: 2,
  };
  const validateRecord = compileValidator(RunRecord);
  const validateSession = compileValidator(HarnessSession);
  assert.equal(validateRecord(record), null);
  assert.equal(validateSession(session), null);
  fc.assert(
    fc.property(fc.nat(), anyJson, fc.boolean(), (pick, replacement, remove) => {
      agrees(RunRecord, mutated(record, pick, replacement, remove), validateRecord);
      agrees(HarnessSession, mutated(session, pick, replacement, remove), validateSession);
    }),
    { numRuns: 1500 },
  );
});

Deno.test("compileValidator() agrees with zod on the config file, defaults filled in as zod fills them", () => {
  const validate = compileValidator(ConfigFile);
  const file = {
    drivers: { claude: { program: "/bin/claude", args: ["--x"], idleTimeoutSeconds: 5 } },
    prices: { "gpt-x": { inputPerMillion: 1, outputPerMillion: 2 } },
    otel: { endpoint: "http://localhost:4318", headers: { a: "b" }, content: true },
  };
  for (const value of [{}, { drivers: {} }, { drivers: { codex: {} } }, file]) {
    const ours = structuredClone(value);
    assert.equal(validate(ours), null);
    assert.deepEqual(ours, ConfigFile.parse(structuredClone(value)), JSON.stringify(value));
  }
  fc.assert(
    fc.property(fc.nat(), anyJson, fc.boolean(), (pick, replacement, remove) => {
      agrees(ConfigFile, mutated(file, pick, replacement, remove), validate);
    }),
    { numRuns: 1500 },
  );
});

Deno.test("compileValidator() passes over a record's own __proto__ key as zod does, and removes it", () => {
  // JSON.parse makes `__proto__` an own key; zod's record neither checks it nor returns it.
  const schema = z.object({ env: z.record(z.string(), z.string()) });
  const validate = compileValidator(schema);
  for (const text of ['{"env":{"__proto__":5}}', '{"env":{"A":"b","__proto__":{"x":1}}}']) {
    const value = JSON.parse(text);
    agrees(schema, value, validate);
    assert.equal(validate(value), null, text);
    assert.equal(Object.hasOwn(value.env, "__proto__"), false, text);
  }
  // The other keys are still checked.
  agrees(schema, JSON.parse('{"env":{"__proto__":"x","B":7}}'), validate);
  assert.notEqual(validate(JSON.parse('{"env":{"__proto__":"x","B":7}}')), null);
});

Deno.test("compileValidator() agrees with zod on settings (URLs, records, nested objects)", () => {
  const validate = compileValidator(Settings);
  const driver = { args: [] };
  const settings = {
    home: "/h",
    homeSource: "flag",
    configPath: "/h/config.json",
    json: false,
    quiet: false,
    color: false,
    tempDir: "/tmp",
    platform: {
      url: "https://platform.example",
      apiKey: null,
      secretKey: null,
      workspaceId: null,
      jobId: null,
      allowHttp: false,
    },
    openai: { baseUrl: "https://api.openai.com/v1", apiKey: "k" },
    proxy: { http: null, https: null, all: null, noProxy: null },
    drivers: { claude: driver, codex: driver, gemini: driver, opencode: driver },
    prices: {},
    snapshot: { maxBytes: 1024, maxEntries: 10 },
    gateway: { enabled: true },
    confine: { enabled: false, allowHosts: [], hide: [] },
    harnessEnv: { ANTHROPIC_BASE_URL: "https://api.anthropic.com" },
    otel: { env: { OTEL_SERVICE_NAME: "x" }, file: {} },
  };
  assert.equal(validate(structuredClone(settings)), null);
  for (const url of ["ftp://x.example", "not a url", "http://", "https://ok.example:8443/p"]) {
    agrees(Settings, { ...settings, openai: { ...settings.openai, baseUrl: url } }, validate);
  }
  fc.assert(
    fc.property(fc.nat(), anyJson, fc.boolean(), (pick, replacement, remove) => {
      agrees(Settings, mutated(settings, pick, replacement, remove), validate);
    }),
    { numRuns: 1500 },
  );
});

Deno.test("compileValidator() gives zod's first issue at the edges: types, bounds, strictness, formats", () => {
  const cases: [z.ZodType, unknown[]][] = [
    [z.number().int().nonnegative(), [
      0,
      1,
      -1,
      1.5,
      Number.MAX_SAFE_INTEGER + 2,
      NaN,
      -Infinity,
      "1",
    ]],
    [z.number().gt(1).lte(3), [1, 1.0001, 3, 3.0001]],
    [z.number().positive(), [0, 1, Infinity]],
    [z.string().min(2).max(3), ["a", "ab", "abc", "abcd", 5, undefined, null, [], {}]],
    [z.string().regex(/^a+$/), ["a", "aa", "b", ""]],
    [z.strictObject({ a: z.string() }), [
      { a: "x" },
      { a: "x", b: 1 },
      { a: "x", b: 1, c: 2 },
      {},
      null,
      [],
    ]],
    [z.object({ a: z.string().optional() }), [{}, { a: undefined }, { a: 1 }, { b: 2 }]],
    [z.looseObject({ a: z.literal("x") }), [{ a: "x", z: [1] }, { a: "y" }, {}]],
    [z.array(z.boolean()).min(1), [[], [true], [true, 1], "true"]],
    [z.array(z.string()).max(1), [["a", "b"]]],
    [z.union([z.string(), z.number()]), ["a", 1, null, true]],
    // regression: an unknown() field may hold undefined but its key must be there, as in zod
    [z.object({ a: z.unknown() }), [{}, { a: undefined }, { a: 1 }]],
    [z.enum(["a", "b"]).nullable(), ["a", "c", null, undefined, 3]],
    [z.object({ e: z.enum(["a", "b"]) }), [{}, { e: "c" }]],
    [z.record(z.string(), z.number()), [{}, { a: 1 }, { a: "x" }, [], 5, null]],
    [z.object({ a: z.array(z.string()).default([]) }), [{}, { a: ["x"] }, { a: "x" }]],
    [z.uuid(), ["x", "0193a5f2-7c1f-7000-8000-000000000016"]],
    [z.url({ protocol: /^https?$/ }), ["http://x", "ftp://x", "x", "HTTP://x"]],
    [z.iso.datetime({ offset: true }), [
      "2026-02-28T10:00:00Z",
      "2026-02-29T10:00:00Z",
      "2024-02-29T10:00:00.5+01:00",
      "2026-01-01 10:00:00Z",
    ]],
    // The minute isDatetime remembers: later times in it are still read whole, second and fraction.
    [z.iso.datetime(), [
      "2026-02-28T10:00:00.000Z",
      "2026-02-28T10:00:59.999Z",
      "2026-02-28T10:00:60.000Z",
      "2026-02-28T10:00:0a.000Z",
      "2026-02-28T10:00:07.0a0Z",
      "2026-02-28T10:00:07.000+",
      "2026-02-28T10:00:07,000Z",
      "2026-02-29T10:00:00.000Z",
      "2026-02-28T10:00:07.123Z",
    ]],
    [
      z.discriminatedUnion("type", [
        z.object({ type: z.literal("a") }),
        z.object({ type: z.literal("b"), x: z.number() }),
      ]),
      [{ type: "a" }, { type: "b" }, { type: "c" }, {}, 5, { type: "b", x: 1 }],
    ],
  ];
  for (const [schema, values] of cases) {
    const validate = compileValidator(schema);
    for (const value of values) agrees(schema, value, validate);
  }
});

Deno.test("compileValidator() refuses a construct it does not know, so zod keeps it", () => {
  for (
    const schema of [
      z.string().transform((s) => s.length),
      z.object({ a: z.string().email() }),
      z.number().multipleOf(2),
      z.record(z.string().min(2), z.number()),
      z.object({ a: z.string() }).refine(() => true),
    ]
  ) {
    assert.throws(() => compileValidator(schema as z.ZodType), UnsupportedSchema);
  }
});

/** `YYYY-MM-DDTHH:MM:SS.sssZ` from fields that may each be out of range (month 13, second 60). */
const utcShaped = fc.tuple(
  fc.integer({ min: 0, max: 9999 }),
  fc.integer({ min: 0, max: 13 }),
  fc.integer({ min: 0, max: 32 }),
  fc.integer({ min: 0, max: 25 }),
  fc.integer({ min: 0, max: 61 }),
  fc.integer({ min: 0, max: 61 }),
  fc.integer({ min: 0, max: 999 }),
).map(([year, month, day, hour, minute, second, ms]) => {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${String(year).padStart(4, "0")}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}:${
    two(second)
  }.${String(ms).padStart(3, "0")}Z`;
});

Deno.test("compileValidator() reads a YYYY-MM-DDTHH:MM:SS.sssZ as zod does, leap days and month ends too", () => {
  const schemas = [
    z.iso.datetime(),
    z.iso.datetime({ offset: true }),
    z.iso.datetime({ precision: 3 }),
    z.iso.datetime({ local: true }),
    // Patterns that refuse three digits of fraction: never read by hand.
    z.iso.datetime({ precision: 0 }),
    z.iso.datetime({ precision: 2 }),
  ];
  // Every rule of the Gregorian calendar: by four, not by a hundred, by four hundred.
  const leapDays = [2000, 1900, 2024, 2100, 2200, 1800, 2400, 400, 200, 100, 0, 2026, 2023]
    .flatMap((year) =>
      ["02-28", "02-29", "02-30", "04-30", "04-31", "12-31", "12-32"].map(
        (day) => `${String(year).padStart(4, "0")}-${day}`,
      )
    );
  for (const schema of schemas) {
    for (const day of leapDays) {
      // A fresh validator for each, so that no minute is remembered from another.
      agrees(schema, `${day}T10:00:00.000Z`);
    }
    const validate = compileValidator(schema);
    fc.assert(
      fc.property(utcShaped, (value) => {
        agrees(schema, value);
        agrees(schema, value, validate);
      }),
      { numRuns: 400 },
    );
  }
});

Deno.test("isDatetime reads a valid YYYY-MM-DDTHH:MM:SS.sssZ without its pattern, and only that", () => {
  const isDatetime = new Function(`${PRELUDE}\nreturn isDatetime;`)() as (
    check: { pattern: { test(v: string): boolean }; minute: string; utc: boolean },
    v: string,
  ) => boolean;
  let ran = 0;
  const pattern = { test: () => (ran++, true) };
  // regression: the first timestamp of a process compiled zod's datetime pattern (~0.4 ms).
  assert.equal(isDatetime({ pattern, minute: "", utc: true }, "2026-12-04T19:16:00.123Z"), true);
  assert.equal(ran, 0);
  // Anything else goes to the pattern: another shape, an invalid date, a pattern that is not known
  // to take the shape.
  isDatetime({ pattern, minute: "", utc: true }, "2026-12-04T19:16:00Z");
  isDatetime({ pattern, minute: "", utc: true }, "2026-02-29T19:16:00.123Z");
  isDatetime({ pattern, minute: "", utc: false }, "2026-12-04T19:16:00.123Z");
  assert.equal(ran, 3);
});
