import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import { compileSchema } from "../../lib/store/compiled_schema.ts";
import { HarnessSession, RunEvent, RunRecord } from "../../lib/store/contracts.ts";
import { anyJson, eventInput } from "./_arbitraries.ts";

const envelope = fc.record({
  id: fc.string({ minLength: 1, maxLength: 8 }),
  runId: fc.string({ minLength: 1, maxLength: 8 }),
  sessionId: fc.string({ minLength: 1, maxLength: 8 }),
  sequence: fc.nat(),
  timestamp: fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString()),
});
const storedEvent = fc.tuple(envelope, eventInput).map(([head, body]) => ({ ...head, ...body }));

/** `value` with the field at a random path (top level or in the payload) replaced or removed. */
function mutated(
  value: Record<string, unknown>,
  pick: number,
  replacement: unknown,
  remove: boolean,
) {
  const copy = structuredClone(value) as Record<string, unknown>;
  const payload = copy.payload as Record<string, unknown> | undefined;
  const targets: [Record<string, unknown>, string][] = [
    ...Object.keys(copy).map((key) => [copy, key] as [Record<string, unknown>, string]),
    ...Object.keys(payload ?? {}).map((key) =>
      [payload!, key] as [Record<string, unknown>, string]
    ),
  ];
  const [target, key] = targets[pick % targets.length];
  if (remove) delete target[key];
  else target[key] = replacement;
  return copy;
}

Deno.test("compileSchema() compiles the event, record and harness-session contracts", () => {
  assert.notEqual(compileSchema(RunEvent), null);
  assert.notEqual(compileSchema(RunRecord), null);
  assert.notEqual(compileSchema(HarnessSession), null);
});

Deno.test("compileSchema() agrees with zod on valid events and on events with one field broken", () => {
  const check = compileSchema(RunEvent)!;
  fc.assert(
    fc.property(
      storedEvent,
      fc.nat(),
      anyJson,
      fc.boolean(),
      (event, pick, replacement, remove) => {
        assert.equal(check(event), true);
        assert.equal(RunEvent.safeParse(event).success, true);
        const broken = mutated(event, pick, replacement, remove);
        assert.equal(check(broken), RunEvent.safeParse(broken).success, JSON.stringify(broken));
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("compileSchema() agrees with zod on run records with one field broken", () => {
  const check = compileSchema(RunRecord)!;
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
  assert.equal(check(record), true);
  fc.assert(
    fc.property(fc.nat(), anyJson, fc.boolean(), (pick, replacement, remove) => {
      const broken = mutated(record, pick, replacement, remove);
      assert.equal(check(broken), RunRecord.safeParse(broken).success, JSON.stringify(broken));
    }),
    { numRuns: 1000 },
  );
});

Deno.test("compileSchema() refuses what zod refuses at the edges: types, bounds, strictness", () => {
  const cases: [z.ZodType, unknown[]][] = [
    [z.number().int().nonnegative(), [
      0,
      1,
      -1,
      1.5,
      Number.MAX_SAFE_INTEGER + 2,
      NaN,
      Infinity,
      "1",
    ]],
    [z.number().gt(1).lte(3), [1, 1.0001, 3, 3.0001]],
    [z.string().min(2).max(3), ["a", "ab", "abc", "abcd", 5]],
    [z.string().regex(/^a+$/), ["a", "aa", "b", ""]],
    [z.strictObject({ a: z.string() }), [{ a: "x" }, { a: "x", b: 1 }, {}, null, []]],
    [z.object({ a: z.string().optional() }), [{}, { a: undefined }, { a: 1 }, { b: 2 }]],
    [z.looseObject({ a: z.literal("x") }), [{ a: "x", z: [1] }, { a: "y" }]],
    [z.array(z.boolean()).min(1), [[], [true], [true, 1], "true"]],
    [z.union([z.string(), z.number()]), ["a", 1, null, true]],
    // regression: an unknown() field may hold undefined but its key must be there, as in zod
    [z.object({ a: z.unknown() }), [{}, { a: undefined }, { a: 1 }]],
    [z.enum(["a", "b"]).nullable(), ["a", "c", null, undefined]],
    [z.iso.datetime({ offset: true }), [
      "2026-02-28T10:00:00Z",
      "2026-02-29T10:00:00Z",
      "2024-02-29T10:00:00.5+01:00",
      "2026-01-01 10:00:00Z",
    ]],
  ];
  for (const [schema, values] of cases) {
    const check = compileSchema(schema);
    assert.notEqual(check, null);
    for (const value of values) {
      assert.equal(check!(value), schema.safeParse(value).success, `${JSON.stringify(value)}`);
    }
  }
});

Deno.test("compileSchema() returns null for a construct it does not know", () => {
  assert.equal(compileSchema(z.string().transform((s) => s.length)), null);
  assert.equal(compileSchema(z.object({ a: z.string().email() })), null);
  assert.equal(compileSchema(z.number().multipleOf(2)), null);
  assert.equal(compileSchema(z.record(z.string(), z.number())), null);
});
