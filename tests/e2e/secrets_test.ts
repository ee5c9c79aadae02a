// Secrets never stored, printed or uploaded: sentinel keys given to reins come back from echoing
// servers (a model endpoint answering 401 with the Authorization header it got, a platform
// answering 400 with X-Api-Key and X-Secret-Key), and then nothing under the data root (index and
// its WAL included), on stdout or on stderr, and nothing reins uploads, holds them.
import assert from "node:assert/strict";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { makeRun } from "../platform/_runs.ts";
import { reins, tempDir } from "../support/reins.ts";

const MODEL_KEY = "sentinel-model-key-5b1f0c2a";
const PLATFORM_KEY = "sentinel-platform-key-77d1e0";
const PLATFORM_SECRET = "sentinel-platform-secret-c4a9";
// A key of a shape reins knows without being told: a server quoting someone else's token.
const STRANGER_TOKEN = "sk-proj-STRANGERxSTRANGERxSTRANGER42";
const SENTINELS = [MODEL_KEY, PLATFORM_KEY, PLATFORM_SECRET, STRANGER_TOKEN];

/** Every file below `dir`, as [path, bytes]. */
function* filesBelow(dir: string): Generator<[string, Uint8Array]> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* filesBelow(path);
    else if (entry.isFile) yield [path, Deno.readFileSync(path)];
  }
}

/** The sentinels found in the data root's files and in the given outputs, with where. */
function leaks(home: string, outputs: Record<string, string>): string[] {
  const found: string[] = [];
  const latin1 = new TextDecoder("latin1");
  for (const [path, bytes] of filesBelow(home)) {
    const text = latin1.decode(bytes);
    for (const sentinel of SENTINELS) {
      if (text.includes(sentinel)) found.push(`${sentinel} in ${path.slice(home.length)}`);
    }
  }
  for (const [name, text] of Object.entries(outputs)) {
    for (const sentinel of SENTINELS) {
      if (text.includes(sentinel)) found.push(`${sentinel} in ${name}`);
    }
  }
  return found;
}

/** A model endpoint that refuses every request and quotes back what it was sent. */
function echoingModelEndpoint() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const authorization = request.headers.get("authorization") ?? "(none)";
    return Response.json({
      error: {
        message:
          `Incorrect API key provided. You sent Authorization: ${authorization} (key ${MODEL_KEY}); ` +
          `the key on file is ${STRANGER_TOKEN}`,
        type: "invalid_request_error",
      },
    }, { status: 401 });
  });
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    close: () => server.shutdown(),
  };
}

Deno.test("regression: a model endpoint quoting the Authorization header leaks the key nowhere", async () => {
  await using dir = await tempDir();
  const model = echoingModelEndpoint();
  const outputs: Record<string, string> = {};
  try {
    const env = { OPENAI_API_KEY: MODEL_KEY };
    const flags = ["--model", "openai:gpt-test", "--base-url", model.baseUrl];
    const run = await reins(["run", ...flags, "--json", "say hello"], { home: dir.path, env });
    outputs["run --json stdout"] = run.stdout;
    outputs["run --json stderr"] = run.stderr;
    assert.equal(run.code, 1, run.stderr);
    const summary = JSON.parse(run.stdout);
    assert.equal(summary.status, "failed");
    assert.match(summary.reason, /refused the API key \(401/);
    assert.match(summary.reason, /\[redacted\]/);

    const events = await reins(["run", ...flags, "--events", "say hello"], {
      home: dir.path,
      env,
    });
    outputs["run --events stdout"] = events.stdout;
    outputs["run --events stderr"] = events.stderr;
    assert.equal(events.code, 1);

    for (const args of [["show", "last", "--json"], ["show", "last", "--verbose"], ["runs"]]) {
      const shown = await reins(args, { home: dir.path, env });
      assert.equal(shown.code, 0, shown.stderr);
      outputs[args.join(" ")] = shown.stdout + shown.stderr;
    }
    assert.match(outputs["show last --json"], /Authorization: Bearer \[redacted\]/);
  } finally {
    await model.close();
  }
  assert.deepEqual(leaks(dir.path, outputs), []);
  // The index holds the failed runs (it is one of the files looked at above).
  assert.ok(Deno.statSync(`${dir.path}/index.sqlite`).isFile);
});

Deno.test("regression: a platform quoting X-Api-Key and X-Secret-Key leaks them nowhere", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform({
    apiKey: PLATFORM_KEY,
    secretKey: PLATFORM_SECRET,
    intercept: (request) =>
      request.route === "provision"
        ? new Response(
          `Bad request: X-Api-Key: ${request.headers.get("x-api-key")}, ` +
            `X-Secret-Key: ${request.headers.get("x-secret-key")} do not match a workspace`,
          { status: 400 },
        )
        : undefined,
  });
  const outputs: Record<string, string> = {};
  try {
    const { record } = await makeRun(dir.path);
    const env = {
      HARNESS_PLATFORM_URL: platform.url,
      HARNESS_PLATFORM_API_KEY: PLATFORM_KEY,
      HARNESS_PLATFORM_SECRET_KEY: PLATFORM_SECRET,
    };
    const human = await reins(["report", record.id], { home: dir.path, env });
    outputs["report stdout"] = human.stdout;
    outputs["report stderr"] = human.stderr;
    assert.equal(human.code, 5, human.stderr);
    assert.match(human.stderr, /refused/);
    assert.match(human.stderr, /X-Api-Key: \[redacted\]/);

    const json = await reins(["report", record.id, "--json"], { home: dir.path, env });
    outputs["report --json stdout"] = json.stdout;
    outputs["report --json stderr"] = json.stderr;
    assert.equal(json.code, 5);
    JSON.parse(json.stdout);

    const doctor = await reins(["doctor"], { home: dir.path, env });
    outputs["doctor"] = doctor.stdout + doctor.stderr;
    const outbox = [...Deno.readDirSync(`${dir.path}/outbox`)].map((e) => e.name);
    assert.ok(outbox.some((name) => name.endsWith(".json")), `outbox: ${outbox}`);
  } finally {
    await platform.close();
  }
  assert.deepEqual(leaks(dir.path, outputs), []);
});

Deno.test("regression: a key recorded in a run is not uploaded in the result body", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform();
  try {
    // Recorded by a process that did not know the key (an older reins): it is in the files.
    const { record } = await makeRun(dir.path, {
      events: [
        { type: "message.completed", payload: { role: "user", text: "use the key" } },
        {
          type: "message.completed",
          payload: { role: "assistant", text: `I called the API with ${MODEL_KEY}.` },
        },
      ],
      outcome: { status: "failed", reason: `401 for Bearer ${MODEL_KEY}` },
    });
    const env = {
      HARNESS_PLATFORM_URL: platform.url,
      HARNESS_PLATFORM_API_KEY: platform.apiKey,
      HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
      OPENAI_API_KEY: MODEL_KEY,
    };
    const result = await reins(["report", record.id, "--json"], { home: dir.path, env });
    assert.equal(result.code, 0, result.stderr);
    const sent = JSON.stringify(platform.requests.map((request) => request.body ?? null));
    assert.ok(sent.includes("[redacted]"), "the result body was sent, with the key redacted");
    assert.ok(!sent.includes(MODEL_KEY), "the key was uploaded");
    assert.ok(!result.stdout.includes(MODEL_KEY) && !result.stderr.includes(MODEL_KEY));
  } finally {
    await platform.close();
  }
});

Deno.test("regression: an agent started by reins does not inherit the platform's key and secret", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/env.sh`, "env\n");
  const result = await reins(
    ["run", "--driver", "command", "--exec", `sh ${dir.path}/env.sh`, "--json", "print env"],
    {
      home: dir.path,
      allowRun: ["sh"],
      env: {
        HARNESS_PLATFORM_URL: "http://127.0.0.1:9",
        HARNESS_PLATFORM_API_KEY: PLATFORM_KEY,
        HARNESS_PLATFORM_SECRET_KEY: PLATFORM_SECRET,
        FI_API_KEY: `${PLATFORM_KEY}-fi`,
        FI_SECRET_KEY: `${PLATFORM_SECRET}-fi`,
        OPENAI_API_KEY: MODEL_KEY,
      },
    },
  );
  assert.equal(result.code, 0, result.stderr);
  // The agent's own output is stored redacted anyway; read what it printed from the events it
  // would see: the names must be absent, not only their values.
  const { result: printed } = JSON.parse(result.stdout);
  assert.doesNotMatch(printed, /^(HARNESS_PLATFORM_|FI_)/m);
  // It keeps what it needs: its own model key (shown redacted, but there).
  assert.match(printed, /^OPENAI_API_KEY=\[redacted\]$/m);
  assert.match(printed, /^REINS_RUN_ID=/m);
});

Deno.test("regression: an agent started by reins does not inherit the collector's OTLP headers", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/env.sh`, "env\n");
  const token = "sentinel-collector-token-3e9d";
  const result = await reins(
    ["run", "--driver", "command", "--exec", `sh ${dir.path}/env.sh`, "--json", "print env"],
    {
      home: dir.path,
      allowRun: ["sh"],
      env: {
        // No endpoint: nothing is exported, so the run does not wait on a collector.
        OTEL_EXPORTER_OTLP_HEADERS: `x-honeycomb-team=${token}`,
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: `authorization=Bearer%20${token}-traces`,
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: `x-token=${token}-metrics`,
        OTEL_EXPORTER_OTLP_LOGS_HEADERS: `x-token=${token}-logs`,
        OTEL_SERVICE_NAME: "agents",
      },
    },
  );
  assert.equal(result.code, 0, result.stderr);
  const { result: printed } = JSON.parse(result.stdout);
  assert.doesNotMatch(printed, /^OTEL_EXPORTER_OTLP_[A-Z_]*HEADERS=/m);
  assert.ok(!printed.includes(token), printed);
  // The rest of the OTel settings are not secrets: the agent keeps them.
  assert.match(printed, /^OTEL_SERVICE_NAME=agents$/m);
  assert.match(printed, /^REINS_RUN_ID=/m);
});
