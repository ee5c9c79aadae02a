// Export on settle end to end: `reins run` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its run
// as it settles, under the binary's sandbox. A collector that is down, hangs or answers 500 never
// changes the run's exit code or answer, delays the exit by at most the settle budget, and the
// trace is delivered later by `reins export otel --pending`.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { SETTLE_BUDGET_MS } from "../../lib/otel/export.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/mod.ts";
import { reins, tempDir } from "../support/reins.ts";
import {
  type Answer,
  attributeOf,
  DEAD_COLLECTOR_URL,
  startFakeCollector,
} from "../fixtures/fake_otlp.ts";

/** A mock model script: one tool call, then an answer; or a script that runs dry (a failed run). */
async function script(dir: string, kind: "completes" | "fails"): Promise<string> {
  const path = `${dir}/${kind}.json`;
  const steps = kind === "completes"
    ? [{ toolCalls: [{ id: "c1", name: "list_files", args: { path: "." } }] }, { text: "Listed." }]
    : [{ toolCalls: [{ id: "c1", name: "list_files", args: { path: "." } }] }];
  await Deno.writeTextFile(path, JSON.stringify(steps));
  return path;
}

async function timedRun(home: string, cwd: string, model: string, env: Record<string, string>) {
  const startedMs = performance.now();
  const result = await reins(["run", "--model", `mock:${model}`, "--json", "list them"], {
    home,
    cwd,
    env,
  });
  return { ...result, tookMs: performance.now() - startedMs };
}

Deno.test("reins run exports its run to OTEL_EXPORTER_OTLP_ENDPOINT when it settles", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const model = await script(dir.path, "completes");
  const ran = await timedRun(`${dir.path}/home`, dir.path, model, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  });
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stderr, "", "nothing to say when the collector takes it");
  const { runId, result } = JSON.parse(ran.stdout);
  assert.equal(result, "Listed.");
  const spans = collector.spans();
  assert.deepEqual(spans.map((span) => span.name), [
    "invoke_agent reins",
    "chat mock",
    "execute_tool list_files",
    "chat mock",
  ]);
  assert.equal(spans[0].traceId, runId.replaceAll("-", ""));
  assert.deepEqual(attributeOf(spans[0].attributes, "reins.status"), { stringValue: "completed" });
  const outbox = await Array.fromAsync(Deno.readDir(`${dir.path}/home/outbox/otlp`));
  assert.deepEqual(outbox.filter((e) => e.name.endsWith(".json")), [], "nothing is kept");
});

const COLLECTORS: [string, Answer | "down"][] = [
  ["down", "down"],
  ["hanging", { kind: "hang" }],
  ["answering 500", { kind: "status", status: 500 }],
];

for (const [name, answer] of COLLECTORS) {
  Deno.test(`reins run with a collector ${name}: the same exit code and answer, at most the budget later, delivered by --pending`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    await using collector = startFakeCollector();
    let url = collector.url;
    if (answer === "down") {
      url = DEAD_COLLECTOR_URL;
    } else collector.answer(answer);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: url };

    for (const kind of ["completes", "fails"] as const) {
      const model = await script(dir.path, kind);
      const without = await timedRun(home, dir.path, model, {});
      const withCollector = await timedRun(home, dir.path, model, env);
      assert.equal(withCollector.code, without.code, withCollector.stderr);
      assert.equal(withCollector.code, kind === "completes" ? 0 : 1);
      const summary = JSON.parse(withCollector.stdout);
      assert.equal(summary.status, JSON.parse(without.stdout).status);
      assert.equal(summary.result, JSON.parse(without.stdout).result);
      const delayMs = withCollector.tookMs - without.tookMs;
      // The budget, and room for a loaded machine; a hanging collector's own 10 s timeout would
      // show here.
      assert.ok(
        delayMs < SETTLE_BUDGET_MS + 3_000,
        `the collector delayed the exit by ${delayMs.toFixed(0)} ms`,
      );
      assert.match(
        withCollector.stderr,
        new RegExp(
          `reins: warning: trace of run ${summary.runId} not exported yet: .+; kept \\(outbox/otlp/[0-9a-f-]+\\.json\\) for reins export otel --pending`,
        ),
      );
    }

    // The collector is back: the two traces go out, and the outbox is empty again.
    collector.answer({ kind: "accept" });
    collector.received.length = 0;
    const later = await reins(["export", "otel", "--pending", "--json"], {
      home,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
    });
    assert.equal(later.code, 0, later.stderr);
    const exports = JSON.parse(later.stdout).exports;
    assert.deepEqual(exports.map((e: { state: string }) => e.state), ["exported", "exported"]);
    const roots = collector.spans().filter((span) => span.parentSpanId === undefined);
    assert.deepEqual(
      roots.map((span) => attributeOf(span.attributes, "reins.status")),
      [{ stringValue: "completed" }, { stringValue: "failed" }],
    );
    const left = await Array.fromAsync(Deno.readDir(`${home}/outbox/otlp`));
    assert.deepEqual(left.filter((e) => e.name.endsWith(".json")), []);
  });
}

Deno.test("reins run does not export with OTEL_SDK_DISABLED=true or the config's exportOnSettle false", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  const model = await script(dir.path, "completes");
  const disabled = await timedRun(home, dir.path, model, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_SDK_DISABLED: "true",
  });
  assert.equal(disabled.code, 0, disabled.stderr);
  await Deno.writeTextFile(
    `${home}/config.json`,
    JSON.stringify({ otel: { exportOnSettle: false } }),
  );
  const off = await timedRun(home, dir.path, model, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  assert.equal(off.code, 0, off.stderr);
  assert.equal(collector.received.length, 0);
});

Deno.test("runTurn() exports every settled run, a suite's scenario turns with their family, and warns through hooks.warn", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const home = `${dir.path}/home`;
  using store = openStore(home);
  const settings = loadSettings({
    REINS_HOME: home,
    HOME: dir.path,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  });
  const calm = { stop: new AbortController().signal, kill: new AbortController().signal };
  const turn = (parentRunId: string | null, prompt: string) =>
    runTurn(
      store,
      settings,
      {
        agent: { kind: "loop", model: null, baseUrl: null },
        prompt,
        cwd: dir.path,
        contextId: "scenario-1",
        approval: "auto",
        budget: {},
        timeoutSeconds: null,
        parentRunId,
        trigger: "suite",
      },
      calm,
      { warn: (message) => warnings.push(message) },
    );
  const warnings: string[] = [];
  const first = await turn(null, "first turn");
  const second = await turn(first.summary.runId, "second turn");
  assert.deepEqual(warnings, []);
  const roots = collector.spans().filter((span) => span.parentSpanId === undefined);
  assert.deepEqual(
    roots.map((span) => span.traceId),
    [first, second].map((outcome) => outcome.summary.runId.replaceAll("-", "")),
  );
  assert.deepEqual(attributeOf(roots[0].attributes, "reins.trigger"), { stringValue: "suite" });
  assert.deepEqual(attributeOf(roots[1].attributes, "reins.run.parent_id"), {
    stringValue: first.summary.runId,
  });
  assert.equal(roots[1].links[0].spanId, roots[0].spanId, "the later turn links to the first");
  assert.deepEqual(attributeOf(roots[1].attributes, "gen_ai.conversation.id"), {
    stringValue: "scenario-1",
  });

  collector.answer({ kind: "status", status: 503 });
  const third = await turn(first.summary.runId, "third turn");
  assert.equal(third.summary.status, "completed");
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /not exported yet: the collector answered 503/);
});
