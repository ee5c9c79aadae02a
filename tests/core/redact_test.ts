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

// The names NAMED_CREDENTIAL knows, as a person writes them, and the key shapes' openings.
const CREDENTIAL_NAMES = [
  "password",
  "passwd",
  "api_key",
  "api-key",
  "apikey",
  "secret_key",
  "client_secret",
  "access_token",
  "auth-token",
  "refresh_token",
  "x-api-key",
  "X-Secret-Key",
];
const KEY_SHAPE_SAMPLES = [
  "sk-0123456789abcdefABCD",
  "ghp_0123456789abcdefghij0123",
  "github_pat_0123456789abcdefghij",
  "xoxb-0123456789-abcdef",
  "AKIAABCDEFGHIJKLMNOP",
  "Bearer abcdefgh.ijk-lmn",
  "Token 0123456789abcdef",
];
/** A lower-case word: what an identifier's other parts are made of. */
const word = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
const joiner = fc.constantFrom("_", "-", "");

Deno.test("regression: redactTokenShapes() leaves a failed tool check's detail alone ({tool: reset_password})", () => {
  // JUnit's message of the check: its name, then its detail.
  const text = "tool reset_password: reset_password was never called; tools used: none";
  assert.equal(redactTokenShapes(text), text);
  for (
    const unchanged of [
      "check_password: grep -q hunter2 app.log exited with 1",
      "refresh-token validates the session",
      "my-secret-key: abcd1234",
      "a basic understanding of the refund policy",
      "the token expiration is checked",
      "Basic Authentication is refused",
      "task-sk-0123456789abcdefghij ran",
      "AKIAABCDEFGHIJKLMNOP-suffix",
    ]
  ) {
    assert.equal(redactTokenShapes(unchanged), unchanged);
  }
});

Deno.test("redactTokenShapes() matches no credential name inside an identifier (property)", () => {
  fc.assert(
    fc.property(
      word,
      joiner,
      fc.constantFrom(...CREDENTIAL_NAMES),
      fc.option(fc.tuple(fc.constantFrom("_", "-"), word), { nil: undefined }),
      fc.constantFrom(": ", "=", " = ", '":"'),
      (prefix, join, name, suffix, separator) => {
        // `X-Password: v` is a header, the one prefix a credential's name may have in lower case.
        fc.pre(!(prefix === "x" && join === "-"));
        // `sk-…`, `ghp_…`, `xoxb-…` open a key shape, whole words redacted by design.
        fc.pre(!/^(sk|gh[pousr]|github|xox[abprs])$/.test(prefix));
        // A prefix word before the name (reset_password, mypassword, my-api-key), maybe a suffix.
        const id = `${prefix}${join}${name}${suffix ? suffix.join("") : ""}`;
        for (const text of [`${id}${separator}${id}`, `tool ${id}: ${id} was never called`]) {
          assert.equal(redactTokenShapes(text), text);
        }
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("redactTokenShapes() matches no key shape inside an identifier (property)", () => {
  fc.assert(
    fc.property(
      word,
      fc.constantFrom("_", "-", ""),
      fc.constantFrom(...KEY_SHAPE_SAMPLES),
      (prefix, join, shape) => {
        // A prefix that itself opens a key shape makes the whole word one (sk-sk-…).
        fc.pre(!/^(sk|gh[pousr]|github|xox[abprs])$/.test(prefix));
        const id = `${prefix}${join}${shape.replace(" ", join === "" ? "_" : join)}`;
        const text = `the agent called ${id} twice`;
        assert.equal(redactTokenShapes(text), text);
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("redactTokenShapes() still redacts a credential named as a whole word, a header or an environment variable (property)", () => {
  const secret = fc.stringMatching(/^[A-Za-z0-9]{3,20}[a-z][0-9]$/);
  const before = fc.constantFrom("", "a ", "{", '{"', "\n", "-H '", "--");
  fc.assert(
    fc.property(
      before,
      fc.constantFrom(...CREDENTIAL_NAMES),
      fc.constantFrom(": ", "=", " = "),
      secret,
      (lead, name, separator, value) => {
        const quote = lead.endsWith('"') ? '"' : "";
        const named = redactTokenShapes(`${lead}${name}${quote}${separator}${value} ok`);
        assert.ok(!named.includes(value), named);
        const env = `SHOP_${name.toUpperCase().replace(/-/g, "_")}`;
        const exported = redactTokenShapes(`export ${env}=${value}`);
        assert.equal(exported, `export ${env}=${REDACTED}`);
        const header = `X-${name.replace(/^x-/i, "")}`;
        assert.equal(redactTokenShapes(`${header}: ${value}`), `${header}: ${REDACTED}`);
      },
    ),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.constantFrom(...KEY_SHAPE_SAMPLES), fc.constantFrom(" ", "=", '"', "("), (
      shape,
      lead,
    ) => {
      assert.ok(redactTokenShapes(`key${lead}${shape})`).includes(REDACTED));
    }),
  );
});
