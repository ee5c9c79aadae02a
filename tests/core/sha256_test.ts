import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { sha256Hex } from "../../lib/core/sha256.ts";

Deno.test("sha256Hex() gives the digests of the standard test vectors", () => {
  assert.equal(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("sha256Hex() agrees with node:crypto around every block boundary and on UTF-8 text", () => {
  for (let length = 0; length <= 200; length++) {
    const bytes = Uint8Array.from({ length }, (_, i) => (i * 131 + length) & 0xff);
    assert.equal(sha256Hex(bytes), createHash("sha256").update(bytes).digest("hex"), `${length}`);
  }
  const path = "/home/ä/プロジェクト/🦕";
  assert.equal(sha256Hex(path), createHash("sha256").update(path).digest("hex"));
});

Deno.test("sha256Hex() agrees with node:crypto on any text, one after another (its buffers are reused)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: "binary", maxLength: 300 }), { maxLength: 8 }),
      (texts) => {
        for (const text of texts) {
          assert.equal(sha256Hex(text), createHash("sha256").update(text).digest("hex"));
        }
      },
    ),
    { numRuns: 500 },
  );
});
