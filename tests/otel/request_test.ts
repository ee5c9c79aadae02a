// The export request (lib/otel/request.ts): one resource and scope with the pinned schema URL,
// the service's attributes, and the redactor applied to every string whatever span carries it.
import assert from "node:assert/strict";
import { SCHEMA_URL, SEMCONV_VERSION, traceRequest } from "../../lib/otel/request.ts";
import { Redactor } from "../../lib/core/redact.ts";
import { exportRedactor, headerSecrets } from "../../lib/otel/redact.ts";
import { plainAttrs, recordedRun } from "./_runs.ts";

const SENTINEL = "sk-sentinel-0123456789abcdefXYZ";

function leakyRun() {
  return recordedRun({
    goal: `use the key ${SENTINEL}`,
    events: [
      {
        type: "tool.started",
        payload: { callId: "c1", tool: "read_file", args: { key: SENTINEL } },
      },
      {
        type: "tool.completed",
        payload: {
          callId: "c1",
          ok: false,
          error: `Authorization: Bearer ${SENTINEL}`,
          startedAt: null,
          finishedAt: null,
        },
      },
      { type: "problem", payload: { source: "loop", reason: `saw ${SENTINEL}`, text: SENTINEL } },
      {
        type: "failed",
        payload: { reason: `the endpoint said: bad key ${SENTINEL}`, result: null },
      },
    ],
  });
}

Deno.test("traceRequest() puts every run under one resource and scope carrying the pinned schema URL", () => {
  assert.equal(SCHEMA_URL, `https://opentelemetry.io/schemas/${SEMCONV_VERSION}`);
  const runs = [leakyRun(), leakyRun()];
  const request = traceRequest(runs, {
    content: false,
    serviceName: "agents",
    serviceVersion: "9.9.9",
    resourceAttributes: { "deployment.environment": "ci", "service.name": "ignored" },
    redact: (text) => text,
  });
  assert.equal(request.resourceSpans.length, 1);
  const [resourceSpans] = request.resourceSpans;
  assert.equal(resourceSpans.schemaUrl, SCHEMA_URL);
  assert.deepEqual(plainAttrs(resourceSpans.resource.attributes), {
    "deployment.environment": "ci",
    "service.name": "agents",
    "service.version": "9.9.9",
  });
  assert.equal(resourceSpans.scopeSpans.length, 1);
  const [scope] = resourceSpans.scopeSpans;
  assert.deepEqual(scope.scope, { name: "reins", version: "9.9.9" });
  assert.equal(scope.schemaUrl, SCHEMA_URL);
  assert.deepEqual(
    [...new Set(scope.spans.map((span) => span.traceId))],
    runs.map((run) => run.record.id.replaceAll("-", "")),
  );
});

Deno.test("traceRequest() sends no secret, content or not: every string passes the redactor", () => {
  for (const content of [false, true]) {
    const request = traceRequest([leakyRun()], {
      content,
      serviceName: "reins",
      serviceVersion: "0.1.0",
      redact: (text) => new Redactor([SENTINEL]).text(text),
    });
    const json = JSON.stringify(request);
    assert.ok(!json.includes(SENTINEL), `no sentinel with content ${content}`);
    assert.ok(!json.includes("0123456789abcdef"), "not even a piece of it");
    assert.match(json, /\[redacted\]/);
  }
});

Deno.test("headerSecrets() takes credential headers and long values, not every header", () => {
  assert.deepEqual(
    headerSecrets({
      authorization: "Bearer abc123",
      "x-honeycomb-team": "hcteam",
      "x-tenant": "agents",
      "x-scope": "a-value-long-enough-to-be-a-key",
    }),
    ["abc123", "hcteam", "a-value-long-enough-to-be-a-key"],
  );
});

Deno.test("exportRedactor() makes the process redact the collector's credentials", () => {
  const redact = exportRedactor({ "x-api-key": "otlp-key-7f3a9" });
  assert.equal(redact("the key otlp-key-7f3a9 leaked"), "the key [redacted] leaked");
});

Deno.test("traceRequest() cuts attribute values at the length limit, and not span names", () => {
  const run = recordedRun({
    goal: "x".repeat(100),
    events: [{ type: "completed", payload: { reason: null, result: "y".repeat(100) } }],
  });
  const request = traceRequest([run], {
    content: true,
    serviceName: "reins",
    serviceVersion: "0.1.0",
    redact: (text) => text,
    valueLengthLimit: 20,
  });
  const [root] = request.resourceSpans[0].scopeSpans[0].spans;
  for (const { value } of root.attributes) {
    if ("stringValue" in value) assert.ok(value.stringValue.length <= 20, value.stringValue);
  }
  assert.equal(root.name, "invoke_agent reins");
});
