// The collector in the binary's sandbox: `deno task compile` lets it reach the host of the
// endpoint it was built with, and a collector the sandbox does not allow is exit 4 on demand and
// a warning (never a changed outcome) when a run settles.
import assert from "node:assert/strict";
import { permissionFlags, sandboxFromEnv } from "../../scripts/permissions.ts";
import { reins, tempDir } from "../support/reins.ts";

function netFlag(env: Record<string, string>): string {
  return permissionFlags(sandboxFromEnv(env)).find((flag) => flag.startsWith("--allow-net="))!;
}

Deno.test("sandboxFromEnv() lets the binary reach the collector of OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT", () => {
  assert.match(
    netFlag({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example.com:4318" }),
    /,otlp\.example\.com:4318(,|$)/,
  );
  const traces = netFlag({
    OTEL_EXPORTER_OTLP_ENDPOINT: "https://base.example.com",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example.com/v1/traces",
  });
  assert.match(traces, /,traces\.example\.com(,|$)/);
  assert.doesNotMatch(traces, /base\.example\.com/, "only the endpoint traces go to");
  assert.doesNotMatch(netFlag({}), /example\.com/);
});

Deno.test("sandboxFromEnv() passes the OTEL_* variables reins reads to the binary", () => {
  const env = permissionFlags(sandboxFromEnv({})).find((flag) => flag.startsWith("--allow-env="))!;
  for (
    const name of [
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_SERVICE_NAME",
    ]
  ) {
    assert.ok(env.split(/[=,]/).includes(name), name);
  }
});

Deno.test("reins export otel to a collector the sandbox does not allow is exit 4, naming how to allow it", async () => {
  await using dir = await tempDir();
  const run = await reins(["run", "--json", "hello"], { home: dir.path });
  assert.equal(run.code, 0, run.stderr);
  // The sandbox refuses before any name is looked up: nothing leaves this machine.
  const result = await reins(["export", "otel", "last"], {
    home: dir.path,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.invalid:4318" },
  });
  assert.equal(result.code, 4, result.stderr);
  assert.match(
    result.stderr,
    /The sandbox refused to connect to collector\.invalid:4318: grant it with REINS_ALLOW_NET=collector\.invalid:4318/,
  );
  assert.match(result.stderr, /OTEL_EXPORTER_OTLP_ENDPOINT/);
});
