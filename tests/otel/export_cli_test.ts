// `reins export otel` end to end, under the binary's sandbox flags: real loop runs recorded by
// `reins run`, exported to a fake OTLP receiver on port 0 as the OTEL_* variables direct.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import {
  attributeOf,
  DEAD_COLLECTOR_URL,
  type OtlpSpan,
  startFakeCollector,
} from "../fixtures/fake_otlp.ts";

const SENTINEL = "sk-sentinel-abcdefghijklmnop0123";

/** A loop run with the mock model: reads secret.txt, fails one tool call, answers. */
async function recordLoopRun(home: string, work: string, extra: string[] = []): Promise<string> {
  await Deno.mkdir(work, { recursive: true });
  await Deno.writeTextFile(`${work}/secret.txt`, `the key is ${SENTINEL}\n`);
  const script = `${work}/../script.json`;
  await Deno.writeTextFile(
    script,
    JSON.stringify([
      {
        toolCalls: [{ id: "c1", name: "read_file", args: { path: "secret.txt" } }],
        usage: { inputTokens: 120, outputTokens: 15, cacheReadTokens: 100 },
      },
      {
        toolCalls: [{ id: "c2", name: "read_file", args: { path: "missing.txt" } }],
        usage: { inputTokens: 200, outputTokens: 12 },
      },
      {
        text: "The file holds a key; the other one is missing.",
        usage: { inputTokens: 260, outputTokens: 20 },
      },
    ]),
  );
  const result = await reins(
    [
      "run",
      "--model",
      `mock:${script}`,
      "--context",
      "ticket-9",
      "--json",
      ...extra,
      "Summarise secret.txt",
    ],
    // The script lies outside the data root and the working directory: the sandbox is told.
    { home, cwd: work, env: { OPENAI_API_KEY: SENTINEL }, allowPaths: [script] },
  );
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).runId;
}

function spanNamed(spans: OtlpSpan[], name: string): OtlpSpan {
  const span = spans.find((s) => s.name === name);
  assert.ok(span, `a span named ${name} among ${spans.map((s) => s.name).join(", ")}`);
  return span;
}

Deno.test("reins export otel RUN sends a loop run's trace to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runId = await recordLoopRun(home, `${dir.path}/work`);
  const result = await reins(["export", "otel", runId], {
    home,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=agents,authorization=Bearer%20tok-123456789",
      OTEL_SERVICE_NAME: "agents-ci",
      OPENAI_API_KEY: SENTINEL,
    },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `exported 1 run (6 spans) to ${collector.url}/v1/traces\n`);
  assert.match(result.stderr, new RegExp(`trace id ${runId.replaceAll("-", "")}`));

  assert.equal(collector.received.length, 1);
  const [request] = collector.received;
  assert.equal(request.path, "/v1/traces");
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.equal(request.headers.get("x-tenant"), "agents");
  assert.equal(request.headers.get("authorization"), "Bearer tok-123456789");
  const resource = request.body!.resourceSpans[0].resource.attributes;
  assert.deepEqual(attributeOf(resource, "service.name"), { stringValue: "agents-ci" });

  const spans = collector.spans();
  assert.deepEqual(spans.map((s) => [s.name, s.kind]), [
    ["invoke_agent reins", 1],
    ["chat mock", 1],
    ["execute_tool read_file", 1],
    ["chat mock", 1],
    ["execute_tool read_file", 1],
    ["chat mock", 1],
  ]);
  const [root, ...children] = spans;
  assert.equal(root.traceId, runId.replaceAll("-", ""));
  assert.equal(root.parentSpanId, undefined);
  for (const child of children) {
    assert.equal(child.parentSpanId, root.spanId);
    assert.equal(child.traceId, root.traceId);
  }
  const attrs = root.attributes;
  assert.deepEqual(attributeOf(attrs, "gen_ai.operation.name"), { stringValue: "invoke_agent" });
  assert.deepEqual(attributeOf(attrs, "gen_ai.agent.name"), { stringValue: "reins" });
  assert.deepEqual(attributeOf(attrs, "gen_ai.conversation.id"), { stringValue: "ticket-9" });
  assert.deepEqual(attributeOf(attrs, "gen_ai.usage.input_tokens"), { intValue: 580 });
  assert.deepEqual(attributeOf(attrs, "gen_ai.usage.output_tokens"), { intValue: 47 });
  assert.deepEqual(attributeOf(attrs, "gen_ai.usage.cache_read.input_tokens"), { intValue: 100 });
  assert.deepEqual(attributeOf(attrs, "reins.run.id"), { stringValue: runId });
  assert.deepEqual(attributeOf(attrs, "reins.driver"), { stringValue: "loop" });
  assert.deepEqual(attributeOf(attrs, "reins.status"), { stringValue: "completed" });
  assert.deepEqual(attributeOf(attrs, "reins.model.requests"), { intValue: 3 });
  const missing = children[3];
  assert.deepEqual(missing.status.code, 2);
  assert.deepEqual(attributeOf(missing.attributes, "error.type"), { stringValue: "tool_error" });
  assert.equal(missing.status.message, undefined, "the tool's error text is content");
  assert.deepEqual(
    attributeOf(spanNamed(spans, "execute_tool read_file").attributes, "gen_ai.tool.call.id"),
    {
      stringValue: "c1",
    },
  );

  const raw = request.raw;
  assert.ok(!raw.includes('"gen_ai.system"'), "the deprecated attribute is not sent");
  for (const text of ["Summarise secret.txt", "the key is", "The file holds a key", "secret.txt"]) {
    assert.ok(!raw.includes(text), `${JSON.stringify(text)} is content, not sent by default`);
  }
  assert.ok(!raw.includes(SENTINEL), "the sentinel secret is not sent");
  assert.ok(!raw.includes("tok-123456789"), "the collector's own credential is not in the payload");
});

Deno.test("reins export otel --otel-content adds prompts, answers and tool text, with secrets redacted", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runId = await recordLoopRun(home, `${dir.path}/work`);
  const result = await reins(["export", "otel", runId, "--otel-content"], {
    home,
    env: {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom`,
      OPENAI_API_KEY: SENTINEL,
    },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(collector.received[0].path, "/custom", "the traces endpoint is used as it is");
  const [root, , read] = collector.spans();
  const input = attributeOf(root.attributes, "gen_ai.input.messages") as { stringValue: string };
  assert.deepEqual(JSON.parse(input.stringValue), [
    { role: "user", parts: [{ type: "text", content: "Summarise secret.txt" }] },
  ]);
  const output = attributeOf(root.attributes, "gen_ai.output.messages") as { stringValue: string };
  assert.match(output.stringValue, /The file holds a key/);
  assert.deepEqual(attributeOf(read.attributes, "gen_ai.tool.call.arguments"), {
    stringValue: '{"path":"secret.txt"}',
  });
  assert.deepEqual(attributeOf(read.attributes, "gen_ai.tool.call.result"), {
    stringValue: "the key is [redacted]\n",
  });
  assert.ok(!collector.received[0].raw.includes(SENTINEL));
});

Deno.test("reins export otel gives the same trace when a run is exported twice", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runId = await recordLoopRun(home, `${dir.path}/work`);
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
  for (let i = 0; i < 2; i++) {
    const result = await reins(["export", "otel", "last"], { home, env });
    assert.equal(result.code, 0, result.stderr);
  }
  const [first, second] = collector.received.map((request) => request.body);
  assert.deepEqual(second, first);
  assert.equal(first!.resourceSpans[0].scopeSpans[0].spans[0].traceId, runId.replaceAll("-", ""));
});

Deno.test("reins export otel --since picks the settled runs started since then; --print shows the JSON without sending", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const first = await recordLoopRun(home, `${dir.path}/work`);
  const second = await recordLoopRun(home, `${dir.path}/work`);
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
  const printed = await reins(["export", "otel", "--since", "1h", "--print"], { home, env });
  assert.equal(printed.code, 0, printed.stderr);
  const request = JSON.parse(printed.stdout);
  const roots = request.resourceSpans[0].scopeSpans[0].spans.filter((s: OtlpSpan) =>
    !s.parentSpanId
  );
  assert.deepEqual(
    roots.map((s: OtlpSpan) => s.traceId),
    [first, second].map((id) => id.replaceAll("-", "")),
    "oldest first",
  );
  assert.equal(collector.received.length, 0, "--print sends nothing");

  const future = await reins(["export", "otel", "--since", "2999-01-01", "--json"], { home, env });
  assert.equal(future.code, 0, future.stderr);
  assert.deepEqual(JSON.parse(future.stdout), { exports: [], traces: {} });
  const sent = await reins(["export", "otel", "--since", "30m", "--json"], { home, env });
  assert.equal(sent.code, 0, sent.stderr);
  const summary = JSON.parse(sent.stdout);
  assert.equal(summary.exports.length, 1);
  assert.equal(summary.exports[0].state, "exported");
  assert.deepEqual(summary.exports[0].runIds, [first, second]);
  assert.deepEqual(Object.keys(summary.traces), [first, second]);
});

Deno.test("reins export otel exits 5 when the collector is down, refuses or rejects spans, and retries a 503", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await recordLoopRun(home, `${dir.path}/work`);

  const down = await reins(["export", "otel", "last"], {
    home,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: DEAD_COLLECTOR_URL, OTEL_EXPORTER_OTLP_TIMEOUT: "1000" },
  });
  assert.equal(down.code, 5);
  // regression: Deno's fetch says only "fetch failed"; the reason is in its cause. (Without a
  // proxy the requests go through reins's own socket, which says the reason itself.)
  assert.match(
    down.stderr,
    /not exported \(1 run\): cannot reach 127\.0\.0\.1:1023: (tcp connect error: )?Connection refused/,
  );
  assert.match(down.stderr, /nothing was kept: run the export again/);

  await using collector = startFakeCollector();
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
  collector.answer({ kind: "status", status: 400, body: '{"code":3,"message":"bad span"}' });
  const refused = await reins(["export", "otel", "last"], { home, env });
  assert.equal(refused.code, 5);
  assert.match(
    refused.stderr,
    /the collector refused the export \(1 run\): the collector answered 400: bad span/,
  );
  assert.equal(collector.received.length, 1, "a 400 is not retried");

  collector.answer({ kind: "partial", rejectedSpans: 2, errorMessage: "too old" });
  const partial = await reins(["export", "otel", "last"], { home, env });
  assert.equal(partial.code, 5);
  assert.match(partial.stderr, /partly exported: the collector rejected 2 spans: too old/);

  collector.received.length = 0;
  collector.answer({ kind: "status", status: 503, retryAfter: "0" }, { kind: "accept" });
  const retried = await reins(["export", "otel", "last"], { home, env });
  assert.equal(retried.code, 0, retried.stderr);
  assert.match(retried.stderr, /retrying in 0\.0 s: the collector answered 503/);
  assert.equal(collector.received.length, 2);
});

Deno.test("reins export otel --endpoint wins over the environment", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  await recordLoopRun(home, `${dir.path}/work`);
  const result = await reins(["export", "otel", "last", "--endpoint", collector.url], {
    home,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9/never" },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(collector.received[0].path, "/v1/traces");
});

Deno.test("reins export otel says what is wrong with its arguments, exit 2", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  const cases: [string[], RegExp][] = [
    [["export"], /reins export needs a format: otel/],
    [["export", "zipkin", "last"], /Unknown export format "zipkin": reins exports otel/],
    [["export", "otel"], /needs runs \(ids, prefixes or last\) or --since/],
    [
      ["export", "otel", "--since", "yesterday"],
      /--since takes an ISO time or a duration: got "yesterday"/,
    ],
    [["export", "otel", "last", "--endpoint", "collector:4318"], /--endpoint takes an http/],
  ];
  for (const [args, message] of cases) {
    const result = await reins(args, { home });
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
  const grpc = await reins(["export", "otel", "--since", "1h"], {
    home,
    env: { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
  });
  assert.equal(grpc.code, 2);
  assert.match(grpc.stderr, /Cannot export: OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
});

Deno.test("the collector's credential never reaches a run's files, even when the agent prints it", async () => {
  // regression: only the export redacted the header values; an agent that echoed its
  // environment wrote the collector's key into events.jsonl. Agents no longer inherit the
  // variable (tests/e2e/secrets_test.ts), so this one prints the key it learned some other way.
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const key = "hc-team-key-0a1b2c3d4e5f";
  await Deno.writeTextFile(
    `${dir.path}/leaky.sh`,
    `printf "%s\\n" "[$OTEL_EXPORTER_OTLP_HEADERS]" "x-honeycomb-team=${key}"\n`,
  );
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_HEADERS: `x-honeycomb-team=${key}`,
  };
  const ran = await reins(
    ["run", "--driver", "command", "--exec", `sh ${dir.path}/leaky.sh`, "--json", "go"],
    { home, cwd: dir.path, env, allowRun: ["sh"] },
  );
  assert.equal(ran.code, 0, ran.stderr);
  assert.ok(!ran.stdout.includes(key), "not in the answer printed");
  const { runId } = JSON.parse(ran.stdout);
  const events = await Deno.readTextFile(`${home}/runs/${runId}/events.jsonl`);
  assert.ok(!events.includes(key), "not in events.jsonl");
  assert.match(events, /x-honeycomb-team=\[redacted\]/);
  assert.match(
    events,
    /"\[\]\\nx-honeycomb-team=\[redacted\]/,
    "the agent did not see the variable",
  );
  const exported = await reins(["export", "otel", runId, "--otel-content"], { home, env });
  assert.equal(exported.code, 0, exported.stderr);
  for (const request of collector.received) assert.ok(!request.raw.includes(key));
  assert.equal(collector.received.at(-1)!.headers.get("x-honeycomb-team"), key, "it is still sent");
});

Deno.test("reins export otel reads the log as it goes: what it sends is what --print shows, a damaged line said once", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runId = await recordLoopRun(home, `${dir.path}/work`);
  // A line of garbage in the middle of the log: skipped, said once, though the export reads the
  // log twice.
  const log = `${home}/runs/${runId}/events.jsonl`;
  const lines = (await Deno.readTextFile(log)).split("\n");
  lines.splice(4, 0, "{garbage");
  await Deno.writeTextFile(log, lines.join("\n"));
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OPENAI_API_KEY: SENTINEL };
  const printed = await reins(["export", "otel", runId, "--print", "--otel-content"], {
    home,
    env,
  });
  assert.equal(printed.code, 0, printed.stderr);
  const sent = await reins(["export", "otel", runId, "--otel-content"], { home, env });
  assert.equal(sent.code, 0, sent.stderr);
  const said = sent.stderr.match(/events\.jsonl:5: skipped: not JSON/g) ?? [];
  assert.equal(said.length, 1, sent.stderr);
  assert.equal(collector.received.length, 1);
  assert.deepEqual(collector.received[0].body, JSON.parse(printed.stdout));
});
