// parseRequest(), resultText(), errorText(): the JSON-RPC 2.0 envelope of A2A's binding.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  errorText,
  parseRequest,
  resultText,
  RPC,
  RPC_CODES,
  RpcError,
} from "../../lib/serve/jsonrpc.ts";

const encoder = new TextEncoder();
const parseText = (text: string) => parseRequest(encoder.encode(text), 64);

Deno.test("parseRequest() takes a request with a string or integer id and object params", () => {
  assert.deepEqual(
    parseText('{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}'),
    { ok: true, request: { id: "a", method: "GetTask", params: { id: "t" } } },
  );
  assert.deepEqual(
    parseText('{"jsonrpc":"2.0","id":7,"method":"ListTasks"}'),
    { ok: true, request: { id: 7, method: "ListTasks", params: {} } },
  );
});

Deno.test("parseRequest() answers each malformed envelope with its code and the id it can tell", () => {
  const cases: [string, number, string | number | null][] = [
    ["{", RPC.parseError, null],
    ['"just a string"', RPC.invalidRequest, null],
    ["[1,2]", RPC.invalidRequest, null],
    ['{"jsonrpc":"1.0","id":1,"method":"GetTask"}', RPC.invalidRequest, 1],
    ['{"jsonrpc":"2.0","method":"GetTask"}', RPC.invalidRequest, null],
    ['{"jsonrpc":"2.0","id":null,"method":"GetTask"}', RPC.invalidRequest, null],
    ['{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}', RPC.invalidRequest, null],
    ['{"jsonrpc":"2.0","id":{},"method":"GetTask"}', RPC.invalidRequest, null],
    ['{"jsonrpc":"2.0","id":"x","method":3}', RPC.invalidRequest, "x"],
    ['{"jsonrpc":"2.0","id":"x","method":"GetTask","params":[1]}', RPC.invalidParams, "x"],
    [`${"[".repeat(65)}${"]".repeat(65)}`, RPC.invalidRequest, null],
  ];
  for (const [text, code, id] of cases) {
    const parsed = parseText(text);
    assert.equal(parsed.ok, false, text);
    if (parsed.ok) continue;
    assert.equal(parsed.error.code, code, text);
    assert.equal(parsed.id, id, text);
  }
});

Deno.test("parseRequest() refuses bytes that are not UTF-8 as a parse error", () => {
  const parsed = parseRequest(new Uint8Array([0x7b, 0xff, 0x7d]), 64);
  assert.equal(parsed.ok, false);
  if (!parsed.ok) {
    assert.equal(parsed.error.code, RPC.parseError);
    assert.match(parsed.error.message, /not UTF-8/);
  }
});

Deno.test("parseRequest() gives any bytes a request or an error with a JSON-RPC code", () => {
  const envelope = fc.record({
    jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue()),
    id: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()),
    method: fc.oneof(fc.string(), fc.jsonValue()),
    params: fc.jsonValue({ maxDepth: 4 }),
  }, { requiredKeys: [] });
  fc.assert(
    fc.property(
      fc.oneof(
        envelope.map((value) => encoder.encode(JSON.stringify(value))),
        fc.uint8Array({ maxLength: 200 }),
        fc.string().map((s) => encoder.encode(s)),
      ),
      (bytes) => {
        const parsed = parseRequest(bytes, 64);
        if (parsed.ok) {
          assert.equal(typeof parsed.request.method, "string");
          assert.ok(typeof parsed.request.id === "string" || Number.isInteger(parsed.request.id));
        } else {
          assert.ok(RPC_CODES.includes(parsed.error.code), String(parsed.error.code));
          // The answer to it is itself valid JSON.
          JSON.parse(errorText(parsed.id, parsed.error));
        }
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("resultText() and errorText() write JSON-RPC 2.0 answers", () => {
  assert.deepEqual(JSON.parse(resultText(3, { a: 1 })), {
    jsonrpc: "2.0",
    id: 3,
    result: { a: 1 },
  });
  const error = new RpcError(RPC.taskNotFound, "Task not found", [{ "@type": "x" }]);
  assert.deepEqual(JSON.parse(errorText("q", error)), {
    jsonrpc: "2.0",
    id: "q",
    error: { code: -32001, message: "Task not found", data: [{ "@type": "x" }] },
  });
});
