import assert from "node:assert/strict";
import fc from "fast-check";
import {
  REDACTED,
  redactJsonText,
  Redactor,
  redactTokenShapes,
  rememberSecrets,
  secretsInArgs,
  secretsInEnv,
} from "../../lib/core/redact.ts";

Deno.test("Redactor.text() replaces every known secret, longest first", () => {
  const redactor = new Redactor(["abcd-1234", "abcd-1234-efgh", null, undefined, "ab"]);
  assert.equal(redactor.size, 2);
  assert.equal(
    redactor.text("a abcd-1234-efgh b abcd-1234 c ab"),
    `a ${REDACTED} b ${REDACTED} c ab`,
  );
});

Deno.test("Redactor.text() replaces a secret in its JSON-escaped form too", () => {
  const secret = 'se"cr\\et-value';
  const redactor = new Redactor([secret]);
  const json = JSON.stringify({ message: `bad key ${secret}` });
  assert.deepEqual(JSON.parse(redactor.text(json)), { message: `bad key ${REDACTED}` });
});

Deno.test("Redactor ignores values JSON holds outside strings, so JSON stays JSON", () => {
  const redactor = new Redactor(["12345678", "true", "alse", "-1.5e10", "1, true]", "false-alert"]);
  assert.equal(redactor.size, 0);
});

Deno.test("redactTokenShapes() redacts bearer tokens, provider keys and named credentials", () => {
  const cases: [string, string][] = [
    ["Authorization: Bearer abcdefgh.ijk-lmn", `Authorization: Bearer ${REDACTED}`],
    ["authorization: basic dXNlcjpwYXNzd29yZA==", `authorization: basic ${REDACTED}`],
    ["key sk-proj-0123456789abcdefABCD was refused", `key ${REDACTED} was refused`],
    ["sk-ant-api03-0123456789abcdef-XYZ", REDACTED],
    ["token ghp_0123456789abcdefghij0123", `token ${REDACTED}`],
    ["id AKIAABCDEFGHIJKLMNOP", `id ${REDACTED}`],
    [
      "X-Api-Key: hunter2-key, X-Secret-Key: s3cret!",
      `X-Api-Key: ${REDACTED}, X-Secret-Key: ${REDACTED}`,
    ],
    ['{"x-api-key":"abcd1234","ok":true}', `{"x-api-key":"${REDACTED}","ok":true}`],
    ["OPENAI_API_KEY=abc123def", `OPENAI_API_KEY=${REDACTED}`],
    ["password = 'letmein'", `password = '${REDACTED}'`],
  ];
  for (const [input, expected] of cases) assert.equal(redactTokenShapes(input), expected, input);
});

Deno.test("redactTokenShapes() leaves ordinary text and reins's own JSON alone", () => {
  const unchanged = [
    "the task-0123456789abcdefghij is done",
    "api key set: yes; secret key set: no",
    '{"apiKeySet":true,"secretKeySet":false,"apiKey":null,"password":12345678}',
    "set OPENAI_API_KEY to a key this endpoint accepts",
    "Bearer ${token}",
    "risk-assessment-for-the-new-feature",
  ];
  for (const text of unchanged) assert.equal(redactTokenShapes(text), text);
});

Deno.test("Redactor.value() returns the same value when nothing is secret, a redacted copy otherwise", () => {
  const redactor = new Redactor(["s3cret-value"]);
  const clean = { a: [1, "two", { three: null }] };
  assert.equal(redactor.value(clean), clean);
  const dirty = { reason: "401 for s3cret-value", nested: [{ "s3cret-value": 1 }], n: 4 };
  assert.deepEqual(redactor.value(dirty), {
    reason: `401 for ${REDACTED}`,
    nested: [{ [REDACTED]: 1 }],
    n: 4,
  });
  assert.equal(dirty.reason, "401 for s3cret-value", "the input is not changed");
});

Deno.test("Redactor.text() of any JSON text is JSON text, for secrets without a quote", () => {
  const secret = fc.string({ minLength: 4, maxLength: 12 }).filter((s) => !s.includes('"'));
  fc.assert(
    fc.property(fc.array(secret, { maxLength: 3 }), fc.jsonValue(), (secrets, value) => {
      const redactor = new Redactor(secrets);
      JSON.parse(redactor.text(JSON.stringify(value)));
      const walked = redactor.value({ value });
      JSON.stringify(walked);
    }),
    { numRuns: 1000 },
  );
});

Deno.test("redactJsonText() keeps JSON text JSON when a secret with a quote crosses a string", () => {
  rememberSecrets('x","ok');
  const text = `${JSON.stringify({ a: "x", ok: true, note: 'say x","ok' }, null, 2)}\n`;
  const redacted = redactJsonText(text);
  assert.deepEqual(JSON.parse(redacted), { a: "x", ok: true, note: `say ${REDACTED}` });
  assert.ok(redacted.endsWith("}\n"));
});

Deno.test("secretsInEnv() and secretsInArgs() find the credentials reins is given", () => {
  assert.deepEqual(
    secretsInEnv({
      OPENAI_API_KEY: "k1-openai",
      HARNESS_PLATFORM_API_KEY: "k2-platform",
      FI_SECRET_KEY: "k3-fi-secret",
      HARNESS_PLATFORM_URL: "http://x",
    }).sort(),
    ["k1-openai", "k2-platform", "k3-fi-secret"],
  );
  assert.deepEqual(
    secretsInArgs(["--model", "m", "--api-key", "v1-key", "--token=v2-token", "--verbose"]),
    ["v1-key", "v2-token"],
  );
});
