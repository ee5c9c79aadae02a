import assert from "node:assert/strict";
import { createHash } from "node:crypto";
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
