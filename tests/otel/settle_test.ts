// Export when a run settles (lib/otel/export.ts exportOnSettle), against a collector that is up,
// down, hanging or failing: the export is written to the outbox first, takes at most its budget,
// never throws, and what did not go out is sent later by `reins export otel --pending`.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { exportOnSettle } from "../../lib/otel/export.ts";
import { listOtlpEntryIds, readOtlpEntry } from "../../lib/otel/outbox.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/run_turn.ts";
import { reins, tempDir } from "../support/reins.ts";
import { type Answer, DEAD_COLLECTOR_URL, startFakeCollector } from "../fixtures/fake_otlp.ts";

/** The data root at `home`, for a look at its outbox (a reader keeps nothing open). */
const rootOf = (home: string) => new DataRoot(home);

async function recordRun(home: string, cwd: string): Promise<string> {
  const result = await reins(["run", "--json", "look around"], { home, cwd });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).runId;
}

function settleWith(home: string, env: Record<string, string>) {
  const settings = loadSettings({ REINS_HOME: home, HOME: home, ...env });
  const warnings: string[] = [];
  return {
    warnings,
    settle: (runId: string, budgetMs?: number) =>
      exportOnSettle({
        root: rootOf(home),
        settings,
        runId,
        load: (id) => {
          using store = openStore(home);
          return { record: store.inspectRun(id).record, events: store.readEvents(id).events };
        },
        warn: (message) => warnings.push(message),
        budgetMs,
      }),
  };
}

Deno.test("exportOnSettle() sends the run's trace and keeps nothing when the collector takes it", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runId = await recordRun(home, dir.path);
  const { settle, warnings } = settleWith(home, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  const outcomes = await settle(runId);
  assert.deepEqual(outcomes?.map((o) => [o.state, o.runIds]), [["exported", [runId]]]);
  assert.deepEqual(warnings, []);
  assert.equal(collector.spans()[0].traceId, runId.replaceAll("-", ""));
  assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
});

Deno.test("exportOnSettle() does nothing without an endpoint, or with OTEL_SDK_DISABLED", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const runId = await recordRun(home, dir.path);
  assert.equal(await settleWith(home, {}).settle(runId), null);
  await using collector = startFakeCollector();
  const disabled = settleWith(home, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_SDK_DISABLED: "true",
  });
  assert.equal(await disabled.settle(runId), null);
  assert.equal(collector.received.length, 0);
  assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
});

const FAILURES: [string, Answer | "down"][] = [
  ["down", "down"],
  ["hanging", { kind: "hang" }],
  ["answering 500", { kind: "status", status: 500 }],
  ["answering 503 every time", { kind: "status", status: 503, retryAfter: "0" }],
];

for (const [name, answer] of FAILURES) {
  Deno.test(`exportOnSettle() with a collector ${name}: within the budget, kept in the outbox, sent later by --pending`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const runId = await recordRun(home, dir.path);
    await using collector = startFakeCollector();
    let url = collector.url;
    if (answer === "down") {
      url = DEAD_COLLECTOR_URL;
    } else collector.answer(answer);
    const { settle, warnings } = settleWith(home, {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer collector-token-5e1f",
    });

    const startedMs = performance.now();
    const outcomes = await settle(runId, 1_000);
    const tookMs = performance.now() - startedMs;
    assert.ok(tookMs < 1_000 + 500, `bounded by the budget: took ${tookMs.toFixed(0)} ms`);
    assert.equal(outcomes?.length, 1);
    assert.equal(outcomes![0].state, "pending");
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0],
      new RegExp(`trace of run ${runId} not exported yet: .+; kept \\(outbox/otlp/`),
    );
    assert.match(warnings[0], /reins export otel --pending/);

    const [id] = listOtlpEntryIds(rootOf(home));
    const kept = readOtlpEntry(rootOf(home), id);
    assert.ok(kept?.ok);
    assert.deepEqual(kept.entry.runIds, [runId]);
    assert.equal(kept.entry.state, "pending");
    assert.equal(kept.entry.attempts, 1);
    assert.equal(kept.entry.version, 2);
    const requests = Deno.readTextFileSync(rootOf(home).layout.otlpRequests(id));
    assert.equal(requests.split("\n").filter(Boolean).length, kept.entry.batches);
    for (const text of [JSON.stringify(kept.entry), requests]) {
      assert.ok(!text.includes("collector-token-5e1f"), "no headers are kept");
    }

    // The collector is back: `reins export otel --pending` sends it and empties the outbox.
    collector.answer({ kind: "accept" });
    const later = await reins(["export", "otel", "--pending"], {
      home,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
    });
    assert.equal(later.code, 0, later.stderr);
    assert.match(later.stdout, /exported 1 run \(\d+ spans\)/);
    assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
    assert.equal(collector.spans()[0].traceId, runId.replaceAll("-", ""));
  });
}

Deno.test("exportOnSettle() sends what waited in the outbox once the collector takes a new run", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const first = await recordRun(home, dir.path);
  const second = await recordRun(home, dir.path);
  const { settle } = settleWith(home, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  collector.answer({ kind: "status", status: 500 });
  assert.equal((await settle(first))![0].state, "pending");
  collector.answer({ kind: "accept" });
  const outcomes = await settle(second);
  assert.deepEqual(outcomes?.map((o) => [o.state, o.runIds]), [
    ["exported", [second]],
    ["exported", [first]],
  ]);
  assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
});

Deno.test("exportOnSettle() keeps a refused export out of later runs' catch-up; --pending tries it again", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const first = await recordRun(home, dir.path);
  const second = await recordRun(home, dir.path);
  const { settle, warnings } = settleWith(home, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  collector.answer({ kind: "status", status: 400, body: '{"message":"bad"}' });
  assert.equal((await settle(first))![0].state, "refused");
  assert.match(
    warnings[0],
    /the collector refused the trace of run .+: the collector answered 400: bad/,
  );
  collector.answer({ kind: "accept" });
  assert.deepEqual((await settle(second))!.map((o) => o.runIds), [[second]]);
  assert.equal(listOtlpEntryIds(rootOf(home)).length, 1);
  const later = await reins(["export", "otel", "--pending"], {
    home,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  assert.equal(later.code, 0, later.stderr);
  assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
});

Deno.test("reins doctor shows where traces go and the trace exports waiting in the outbox", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const runId = await recordRun(home, dir.path);
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: DEAD_COLLECTOR_URL };
  assert.equal((await settleWith(home, env).settle(runId, 500))![0].state, "pending");

  const doctor = await reins(["doctor", "--json"], { home, env });
  assert.equal(doctor.code, 0, doctor.stderr);
  const otel = JSON.parse(doctor.stdout).otel;
  assert.deepEqual(otel, {
    endpoint: `${DEAD_COLLECTOR_URL}/v1/traces`,
    source: "OTEL_EXPORTER_OTLP_ENDPOINT",
    exportOnSettle: true,
    content: false,
    serviceName: "reins",
    collectorHost: "granted",
    problems: [],
    pendingExports: 1,
    refusedExports: 0,
    unreadableExports: [],
  });
  const human = await reins(["doctor"], { home, env });
  assert.match(
    human.stdout,
    new RegExp(
      `\\notel {9}${DEAD_COLLECTOR_URL}/v1/traces \\(from OTEL_EXPORTER_OTLP_ENDPOINT\\); on settle: yes; content: no; sandbox net: granted\\n`,
    ),
  );
  assert.match(
    human.stdout,
    /\noutbox {7}1 trace export\(s\) pending: reins export otel --pending sends them/,
  );
  const none = await reins(["doctor"], { home, env: {} });
  assert.match(none.stdout, /\notel {9}no endpoint \(OTEL_EXPORTER_OTLP_ENDPOINT\)/);
});

Deno.test("exportOnSettle() from many turns at once (a server's) sends each trace once and warns of none", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const runIds: string[] = [];
  for (let i = 0; i < 5; i++) runIds.push(await recordRun(home, dir.path));
  const { settle, warnings } = settleWith(home, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  collector.answer({ kind: "status", status: 503 });
  assert.equal((await settle(runIds[0]))![0].state, "pending");
  assert.equal(warnings.length, 1);
  warnings.length = 0;
  collector.answer({ kind: "accept" });
  // regression: a catch-up that found another turn's export being sent warned that it was busy.
  await Promise.all(runIds.slice(1).map((runId) => settle(runId)));
  assert.deepEqual(warnings, []);
  assert.deepEqual(listOtlpEntryIds(rootOf(home)), []);
  const sent = collector.spans().filter((span) => span.parentSpanId === undefined)
    .map((span) => span.traceId).sort();
  assert.deepEqual(sent, runIds.map((id) => id.replaceAll("-", "")).sort(), "each trace once");
});

// regression: the settings' warnings were remembered by the module, once per process: a second
// store (another data root, a test after another) never heard them.
Deno.test("runTurn() says a warning about the OpenTelemetry settings once per store, not once per process", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const turnIn = (store: Store, warnings: string[]) => {
    const settings = loadSettings({
      REINS_HOME: store.home,
      HOME: dir.path,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_TIMEOUT: "soon",
    });
    return runTurn(
      store,
      settings,
      {
        agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
        prompt: "hello",
        cwd: dir.path,
        contextId: null,
        approval: "auto",
        budget: {},
        timeoutSeconds: null,
        parentRunId: null,
        trigger: "api",
      },
      { stop: new AbortController().signal, kill: new AbortController().signal },
      {
        warn: (message) => warnings.push(message),
      },
    );
  };
  const said = (warnings: string[]) =>
    warnings.filter((w) => w.includes("OTEL_EXPORTER_OTLP_TIMEOUT"));
  for (const home of ["first", "second"]) {
    using store = openStore(`${dir.path}/${home}`);
    const warnings: string[] = [];
    for (let i = 0; i < 3; i++) {
      assert.equal((await turnIn(store, warnings)).summary.status, "completed");
    }
    assert.equal(said(warnings).length, 1, `${home} store: ${JSON.stringify(warnings)}`);
  }
  assert.equal(collector.spans().filter((span) => span.parentSpanId === undefined).length, 6);
});
