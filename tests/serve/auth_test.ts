// BearerCheck and the serve token: what is let in, and the token file made on first start.
import assert from "node:assert/strict";
import fc from "fast-check";
import { BearerCheck, dataRootToken, readTokenFile } from "../../lib/serve/auth.ts";
import { openStore } from "../../lib/store/store.ts";
import { UntrustedFileError } from "../../lib/core/trust.ts";
import { tempDir } from "../support/reins.ts";

const TOKEN = "s3cret-token-0123456789abcdef";

Deno.test("BearerCheck.allows() takes exactly the token, with the Bearer scheme in any case", () => {
  const check = new BearerCheck(TOKEN);
  assert.equal(check.allows(`Bearer ${TOKEN}`), true);
  assert.equal(check.allows(`bearer  ${TOKEN} `), true);
  for (
    const refused of [
      undefined,
      "",
      TOKEN,
      `Basic ${TOKEN}`,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Bearer ${TOKEN} extra`,
      `Bearer ${TOKEN.toUpperCase()}`,
      "Bearer ",
    ]
  ) {
    assert.equal(check.allows(refused), false, JSON.stringify(refused));
  }
});

Deno.test("BearerCheck.allows() refuses every other string", () => {
  const check = new BearerCheck(TOKEN);
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (other) => {
      fc.pre(other !== TOKEN);
      assert.equal(check.allows(`Bearer ${other}`), false);
    }),
    { numRuns: 5000 },
  );
});

Deno.test("dataRootToken() makes serve.token 0600 on first use and returns the same after", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const first = dataRootToken(store);
  assert.equal(first.generated, true);
  assert.equal(first.path, `${dir.path}/home/serve.token`);
  assert.match(first.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal((await Deno.stat(first.path)).mode! & 0o777, 0o600);
  const again = dataRootToken(store);
  assert.deepEqual(again, { ...first, generated: false });
});

Deno.test("readTokenFile() takes the first line and refuses short or spaced tokens", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/t`;
  await Deno.writeTextFile(file, `${TOKEN}\nignored\n`);
  assert.equal(readTokenFile(file).token, TOKEN);
  await Deno.writeTextFile(file, "tiny\n");
  assert.throws(() => readTokenFile(file), /is 4 characters long: at least 16 are needed/);
  await Deno.writeTextFile(file, "a token with spaces in it\n");
  assert.throws(() => readTokenFile(file), /holds spaces, control or non-ASCII characters/);
  assert.throws(() => readTokenFile(`${dir.path}/missing`), /Cannot read the token file/);
});

// regression: the token file's mode was not looked at
Deno.test("readTokenFile() refuses a group/other-writable file and warns of a readable one", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/t`;
  await Deno.writeTextFile(file, `${TOKEN}\n`);
  await Deno.chmod(file, 0o666);
  assert.throws(() => readTokenFile(file), UntrustedFileError);
  await Deno.chmod(file, 0o602);
  assert.throws(() => readTokenFile(file), /writable by others \(mode 0602\)/);
  const warnings: string[] = [];
  await Deno.chmod(file, 0o640);
  assert.equal(readTokenFile(file, (m) => warnings.push(m)).token, TOKEN);
  await Deno.chmod(file, 0o600);
  assert.equal(readTokenFile(file, (m) => warnings.push(m)).token, TOKEN);
  assert.deepEqual(warnings, [
    `the token file ${file} may be read by its group (mode 0640): anyone who reads it can use this server; chmod 600 ${file}`,
  ]);
});
