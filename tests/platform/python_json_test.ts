// python_json.ts must write what the seed's Python writes: the golden strings below were printed
// by CPython 3.11's json.dumps; the property test asks a live python3 when one is installed.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  canonicalJson,
  compareCodePoints,
  pythonJson,
  pythonNumber,
} from "../../lib/platform/python_json.ts";

Deno.test("pythonNumber() writes floats as Python's repr does", () => {
  const cases: [number, string][] = [
    [0.1, "0.1"],
    [1e-5, "1e-05"],
    [1.5e-7, "1.5e-07"],
    [0.0001, "0.0001"],
    [123.456, "123.456"],
    [1.2345678901234567e-5, "1.2345678901234568e-05"],
    [1e21, "1e+21"],
    [2.5e25, "2.5e+25"],
    [5e-324, "5e-324"],
    [1.7976931348623157e308, "1.7976931348623157e+308"],
    [1000000000000000.5, "1000000000000000.5"],
    [-0.25, "-0.25"],
    // Integral values below 1e21 reach Python as ints (JSON.stringify writes no point).
    [1e16, "10000000000000000"],
    [100, "100"],
    [-0, "0"],
  ];
  for (const [value, expected] of cases) {
    assert.deepEqual(pythonNumber(value), expected, `${value}`);
  }
});

Deno.test("canonicalJson() matches json.dumps(sort_keys=True, separators=(',', ':'))", () => {
  const value = {
    b: 1,
    a: 'é\u007f\u0000\t\n"\\ 😀 \u2028',
    Z: [1, 2, { y: null, x: true }],
  };
  assert.deepEqual(
    canonicalJson(value),
    '{"Z":[1,2,{"x":true,"y":null}],"a":"\\u00e9\\u007f\\u0000\\t\\n\\"\\\\ \\ud83d\\ude00 \\u2028","b":1}',
  );
});

Deno.test("pythonJson() matches json.dumps() with Python's default separators", () => {
  assert.deepEqual(
    pythonJson({ cmd: "ls -la", n: [1, 2.5], é: null }),
    '{"cmd": "ls -la", "n": [1, 2.5], "\\u00e9": null}',
  );
});

Deno.test("compareCodePoints() sorts astral characters after U+FFFF, as Python does", () => {
  const sorted = ["a", "B", "é", "😀", "\uffff", "_"].sort(compareCodePoints);
  assert.deepEqual(sorted, ["B", "_", "a", "é", "\uffff", "😀"]);
});

Deno.test("canonicalJson() drops what the wire drops: undefined, functions, non-finite numbers", () => {
  assert.deepEqual(
    canonicalJson({ a: undefined, b: () => 1, c: NaN, d: [undefined] }),
    '{"c":null,"d":[null]}',
  );
});

const python = (() => {
  try {
    return new Deno.Command("python3", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "canonicalJson() and pythonJson() agree with python3 on random JSON values",
  ignore: !python,
  async fn() {
    const values = fc.sample(fc.jsonValue({ maxDepth: 3 }), { numRuns: 300, seed: 20260105 });
    values.push(...fc.sample(fc.double({ noNaN: true, noDefaultInfinity: true }), 200));
    const script = "import sys, json\n" +
      "for line in sys.stdin.read().split('\\n'):\n" +
      "    v = json.loads(line)\n" +
      "    print(json.dumps(v, sort_keys=True, separators=(',', ':')))\n" +
      "    print(json.dumps(v))\n";
    const child = new Deno.Command("python3", {
      args: ["-c", script],
      stdin: "piped",
      stdout: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(values.map((v) => JSON.stringify(v)).join("\n")));
    await writer.close();
    const lines = new TextDecoder().decode((await child.output()).stdout).split("\n");
    values.forEach((value, i) => {
      assert.deepEqual(canonicalJson(value), lines[2 * i], JSON.stringify(value));
      assert.deepEqual(pythonJson(value), lines[2 * i + 1], JSON.stringify(value));
    });
  },
});
