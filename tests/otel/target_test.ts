// Where traces go (lib/otel/target.ts): the OTEL_EXPORTER_OTLP_* variables as the OpenTelemetry
// SDK specification defines them — its own examples for the URLs — then the config file, then
// --endpoint; headers, timeout, protocol, compression, service name, content opt-in.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import {
  explicitTarget,
  exportSettings,
  parseKeyValueList,
  tracesUrlOf,
} from "../../lib/otel/target.ts";

function settingsWith(env: Record<string, string>, config?: unknown) {
  const home = Deno.makeTempDirSync({ prefix: "reins-otel-target-" });
  try {
    if (config !== undefined) Deno.writeTextFileSync(`${home}/config.json`, JSON.stringify(config));
    return loadSettings({ REINS_HOME: home, HOME: home, ...env }).otel;
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
}

Deno.test("exportSettings() appends v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT (the specification's examples 1 and 3)", () => {
  for (
    const [base, url] of [
      ["http://collector:4318", "http://collector:4318/v1/traces"],
      ["http://collector:4318/", "http://collector:4318/v1/traces"],
      ["http://collector:4318/mycollector/", "http://collector:4318/mycollector/v1/traces"],
      ["https://otlp.example.com", "https://otlp.example.com/v1/traces"],
    ]
  ) {
    const target = exportSettings(settingsWith({ OTEL_EXPORTER_OTLP_ENDPOINT: base })).target;
    assert.equal(target?.url, url, base);
    assert.equal(target?.source, "OTEL_EXPORTER_OTLP_ENDPOINT");
  }
});

Deno.test("exportSettings() uses OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, root path when it has none (example 2)", () => {
  const both = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318",
  }));
  assert.equal(both.target?.url, "http://collector:4318/");
  const withPath = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example.com/custom/traces",
  }));
  assert.equal(withPath.target?.url, "https://collector.example.com/custom/traces");
});

Deno.test("exportSettings() takes --endpoint first, as a base URL or a full …/v1/traces URL", () => {
  const otel = settingsWith({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://env:4318/v1/traces" });
  assert.equal(
    exportSettings(otel, { endpoint: "http://flag:4318" }).target?.url,
    "http://flag:4318/v1/traces",
  );
  assert.equal(
    exportSettings(otel, { endpoint: "http://flag:4318/v1/traces" }).target?.url,
    "http://flag:4318/v1/traces",
  );
});

Deno.test("exportSettings() reads the config file's otel section below the environment", () => {
  const config = {
    otel: {
      endpoint: "http://from-config:4318",
      headers: { authorization: "Basic abc" },
      serviceName: "agents",
      content: true,
    },
  };
  const fromFile = exportSettings(settingsWith({}, config));
  assert.equal(fromFile.target?.url, "http://from-config:4318/v1/traces");
  assert.deepEqual(fromFile.target?.headers, { authorization: "Basic abc" });
  assert.equal(fromFile.serviceName, "agents");
  assert.equal(fromFile.content, true);
  assert.equal(fromFile.onSettle, true);
  const overridden = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://from-env:4318",
    OTEL_EXPORTER_OTLP_HEADERS: "x-token=t1",
    OTEL_SERVICE_NAME: "svc",
  }, config));
  assert.equal(overridden.target?.url, "http://from-env:4318/v1/traces");
  assert.deepEqual(overridden.target?.headers, { "x-token": "t1" });
  assert.equal(overridden.serviceName, "svc");
});

Deno.test("parseKeyValueList() reads W3C-baggage-style lists with percent-encoded values", () => {
  assert.deepEqual(parseKeyValueList("api-key=secret%3D1 , x-team=a%2Cb,,"), {
    "api-key": "secret=1",
    "x-team": "a,b",
  });
  assert.throws(() => parseKeyValueList("novalue"), SyntaxError);
  assert.throws(() => parseKeyValueList("=v"), SyntaxError);
});

Deno.test("exportSettings() takes the traces headers over the general ones, and drops a bad list with a warning", () => {
  const signal = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
    OTEL_EXPORTER_OTLP_HEADERS: "a=1",
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: "b=2",
  }));
  assert.deepEqual(signal.target?.headers, { b: "2" });
  const bad = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
    OTEL_EXPORTER_OTLP_HEADERS: "a=1,broken",
  }));
  assert.deepEqual(bad.target?.headers, {});
  assert.equal(bad.warnings.length, 1);
  assert.match(
    bad.warnings[0],
    /OTEL_EXPORTER_OTLP_HEADERS was ignored: 'broken' is not key=value/,
  );
});

Deno.test("exportSettings() reads the timeout in milliseconds, 0 as no limit, and warns on a bad one", () => {
  const at = (value: string) =>
    exportSettings(settingsWith({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TIMEOUT: value,
    }));
  assert.equal(at("2500").target?.timeoutMs, 2500);
  assert.equal(at("0").target?.timeoutMs, null);
  const bad = at("-5");
  assert.equal(bad.target?.timeoutMs, 10_000);
  assert.match(bad.warnings[0], /OTEL_EXPORTER_OTLP_TIMEOUT="-5" is not a whole number/);
  assert.equal(
    exportSettings(settingsWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" })).target
      ?.timeoutMs,
    10_000,
    "the specification's default",
  );
});

Deno.test("exportSettings() refuses OTLP/gRPC, takes http/protobuf and http/json, and gzip", () => {
  const grpc = exportSettings(settingsWith({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317",
    OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
  }));
  assert.match(grpc.unusable ?? "", /OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
  assert.equal(grpc.onSettle, false);
  assert.equal(explicitTarget(grpc), null);
  for (const protocol of ["http/json", "http/protobuf"]) {
    const ok = exportSettings(settingsWith({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
    }));
    assert.equal(ok.unusable, null);
    assert.equal(ok.target?.compression, "gzip");
  }
});

Deno.test("exportSettings() exports on settle only with an endpoint, unless OTEL_SDK_DISABLED or the config turns it off", () => {
  assert.equal(exportSettings(settingsWith({})).onSettle, false);
  assert.equal(exportSettings(settingsWith({})).target, null);
  assert.equal(
    explicitTarget(exportSettings(settingsWith({})))?.url,
    "http://localhost:4318/v1/traces",
    "an explicit export goes to the specification's default",
  );
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
  assert.equal(exportSettings(settingsWith(endpoint)).onSettle, true);
  assert.equal(
    exportSettings(settingsWith({ ...endpoint, OTEL_SDK_DISABLED: "true" })).onSettle,
    false,
  );
  assert.equal(
    exportSettings(settingsWith(endpoint, { otel: { exportOnSettle: false } })).onSettle,
    false,
  );
});

Deno.test("exportSettings() names the service from OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES, default reins", () => {
  assert.equal(exportSettings(settingsWith({})).serviceName, "reins");
  const resource = settingsWith({
    OTEL_RESOURCE_ATTRIBUTES: "service.name=a,deployment.environment=ci",
  });
  assert.equal(exportSettings(resource).serviceName, "a");
  assert.deepEqual(exportSettings(resource).resourceAttributes, {
    "service.name": "a",
    "deployment.environment": "ci",
  });
  assert.equal(
    exportSettings(
      settingsWith({ OTEL_RESOURCE_ATTRIBUTES: "service.name=a", OTEL_SERVICE_NAME: "b" }),
    )
      .serviceName,
    "b",
  );
});

Deno.test("exportSettings() exports content only when asked: flag, config or the GenAI capture variable", () => {
  assert.equal(exportSettings(settingsWith({})).content, false);
  assert.equal(exportSettings(settingsWith({}), { content: true }).content, true);
  assert.equal(
    exportSettings(settingsWith({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" }))
      .content,
    true,
  );
});

Deno.test("exportSettings() ignores an endpoint that is not an http(s) URL, with a warning", () => {
  const bad = exportSettings(settingsWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }));
  assert.equal(bad.target, null);
  assert.match(bad.warnings[0], /OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is not an http/);
});

Deno.test("tracesUrlOf() does not double the slash of a base that ends in one", () => {
  assert.equal(tracesUrlOf(new URL("http://h:1/a//")), "http://h:1/a/v1/traces");
});
