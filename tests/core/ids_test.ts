import assert from "node:assert/strict";
import fc from "fast-check";
import { posix } from "node:path";
import { idTimeMs, isSafeName, newId, safeName } from "../../lib/core/ids.ts";
import { UsageError } from "../../lib/core/errors.ts";
import { isInside, joinPath, normalizePath } from "../../lib/core/paths.ts";

Deno.test("newId() makes uuid v7 ids that sort in creation order", () => {
  const ids = Array.from({ length: 5000 }, () => newId());
  assert.deepEqual([...ids].sort(), ids);
  assert.deepEqual(new Set(ids).size, ids.length);
  for (const id of ids.slice(0, 20)) {
    assert.ok(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id), id);
  }
});

Deno.test("idTimeMs() reads back the creation time of a uuid v7", () => {
  const now = Date.now();
  const id = newId(now + 10_000);
  assert.deepEqual(idTimeMs(id), now + 10_000);
  assert.deepEqual(idTimeMs("not-an-id"), null);
});

Deno.test("safeName() accepts ordinary ids and returns them unchanged", () => {
  const names = ["a", "ticket-42", "A.b_c-9", "0".repeat(128), "slack.C024BE91L.1712"];
  // names that only begin like a Windows device are not one
  names.push("console", "nul-2", "com10", "lpt0", "auxiliary.txt", "com", "CON_1");
  for (const name of names) {
    assert.deepEqual(safeName(name), name);
  }
});

Deno.test("safeName() refuses unsafe ids with an error that quotes the value", () => {
  const cases = [
    "",
    "..",
    "../x",
    "a/b",
    ".hidden",
    "a..b",
    "x".repeat(129),
    "a\\b",
    "a\0b",
    "-x",
    "a.",
    "NUL",
    "con",
    "Aux.txt",
    "prn.tar.gz",
    "COM1",
    "lpt9.log",
  ];
  for (const name of cases) {
    assert.throws(() => safeName(name, "context id"), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /^Cannot use ".*" as a context id: /s);
      assert.ok(error.message.includes(JSON.stringify(name).slice(0, 40)), error.message);
      assert.equal(error.exitCode, 2);
      return true;
    });
  }
});

// Names that try to escape their parent: traversal, separators, NUL, leading dots, absolute
// paths, full-width dots and slashes, device names with superscripts, trailing dots or spaces.
const hostile = fc.oneof(
  fc.constantFrom(
    "..",
    ".",
    "../etc",
    "a/../../b",
    "/etc/passwd",
    "C:\\Windows",
    "\\\\server\\share",
    "a\u0000b",
    ".bashrc",
    "\uFF0E\uFF0E",
    "\uFF0E\uFF0E\uFF0Fetc",
    "a\uFF0Fb",
    "COM\u00B9",
    "LPT\u00B2",
    "name.",
    "name ",
    "name. ",
    "",
    "x".repeat(129),
    "a\u2215b",
    "a\u2044b",
  ),
  fc.tuple(
    fc.string({ maxLength: 20 }),
    fc.constantFrom("..", "/", "\\", "\0", "\uFF0F", "\uFF0E\uFF0E", " ", "."),
    fc.string({ maxLength: 20 }),
  ).map(([a, b, c]) => a + b + c),
  fc.string({ unit: "binary", minLength: 0, maxLength: 140 }),
);

Deno.test("safeName() accepts no name that resolves outside its parent (property)", () => {
  const parent = "/data/reins/contexts";
  fc.assert(
    fc.property(hostile, (name) => {
      if (!isSafeName(name)) {
        try {
          safeName(name);
          return false;
        } catch (error) {
          return error instanceof UsageError;
        }
      }
      const joined = joinPath(parent, name);
      // Accepted: it stays one segment directly under the parent, with nothing to reinterpret.
      return isInside(joined, parent) && joined !== parent &&
        normalizePath(joined) === `${parent}/${name}` && !name.endsWith(".") &&
        !name.endsWith(" ") && /^[\x21-\x7e]+$/.test(name);
    }),
    { numRuns: 5000 },
  );
});

Deno.test("normalizePath() is posix normalize without a trailing slash, for any mix of segments", () => {
  const segment = fc.constantFrom("a", "b.c", ".d", "...", "..", ".", "", "e.", "x y");
  fc.assert(
    fc.property(fc.boolean(), fc.array(segment, { maxLength: 8 }), (absolute, segments) => {
      const path = `${absolute ? "/" : ""}${segments.join("/")}`;
      const expected = posix.normalize(path);
      const trimmed = expected.length > 1 && expected.endsWith("/")
        ? expected.slice(0, -1)
        : expected;
      return normalizePath(path) === trimmed;
    }),
    { numRuns: 20_000 },
  );
  for (const path of ["/", ".", "..", "", "a/", "/a/b", "./a", "a/.", "a//b", "/..", "../a/.."]) {
    const expected = posix.normalize(path);
    assert.equal(normalizePath(path), expected === "/" ? "/" : expected.replace(/\/$/, ""), path);
  }
});

Deno.test("safeName() refuses Windows device names in any case, with any extension", () => {
  // regression: "NUL.txt" was a valid context id: on Windows its directory is the NUL device
  const devices = ["CON", "PRN", "AUX", "NUL"];
  for (let n = 1; n <= 9; n++) devices.push(`COM${n}`, `LPT${n}`);
  for (const device of devices) {
    for (
      const name of [
        device,
        device.toLowerCase(),
        `${device[0]}${device.slice(1).toLowerCase()}.txt`,
      ]
    ) {
      assert.throws(() => safeName(name, "context id"), (error: unknown) => {
        assert.ok(error instanceof UsageError);
        assert.equal(
          error.message,
          `Cannot use ${JSON.stringify(name)} as a context id: ${
            JSON.stringify(name.split(".")[0])
          } is a device name on Windows`,
        );
        return true;
      });
    }
  }
});

Deno.test("safeName() accepts exactly the documented pattern (property)", () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/), (name) => {
      const device = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\.|$)/i.test(name);
      return isSafeName(name) === (!name.includes("..") && !name.endsWith(".") && !device);
    }),
  );
});
