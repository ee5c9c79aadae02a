// A suite's scenarios as traces: `reins suite run` of the example suite with
// OTEL_EXPORTER_OTLP_ENDPOINT set exports every run of every scenario as it settles (the turn
// engine does it, four scenarios at a time here), each conversation grouped by its context id and
// each later turn linked to its scenario's first; a collector that is down changes nothing.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import {
  attributeOf,
  DEAD_COLLECTOR_URL,
  type OtlpSpan,
  startFakeCollector,
} from "../fixtures/fake_otlp.ts";

const EXAMPLE_DIR = new URL("../../examples/suite/", import.meta.url).pathname;
const SHOP_AGENT = `${EXAMPLE_DIR}agents/shop.sh`;

interface SuiteRun {
  scenarios: { key: string; status: string; runIds: string[] }[];
}

const relationOf = (link: OtlpSpan["links"][number]) =>
  (attributeOf(link.attributes, "reins.link.relation") as { stringValue?: string } | undefined)
    ?.stringValue;

const str = (span: OtlpSpan, key: string) =>
  (attributeOf(span.attributes, key) as { stringValue?: string } | undefined)?.stringValue;

Deno.test("reins suite run exports each scenario's runs as they settle, grouped by conversation", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const result = await reins(["suite", "run", "suite.yaml", "--no-report", "--json"], {
    home: `${dir.path}/home`,
    cwd: EXAMPLE_DIR,
    allowRun: [SHOP_AGENT, "sh"],
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /trace of run/, "no export warning");
  const run: SuiteRun = JSON.parse(result.stdout);
  const runIds = run.scenarios.flatMap((scenario) => scenario.runIds);
  assert.ok(runIds.length > run.scenarios.length, "scenarios of several turns");

  const roots = collector.spans().filter((span) => span.parentSpanId === undefined);
  assert.deepEqual(
    roots.map((span) => str(span, "reins.run.id")).sort(),
    [...runIds].sort(),
    "every run of every scenario, once",
  );
  const byRun = new Map(roots.map((span) => [str(span, "reins.run.id")!, span]));
  for (const scenario of run.scenarios) {
    const turns = scenario.runIds.map((id) => byRun.get(id)!);
    const [first, ...later] = turns;
    // The suite's command agent, or the built-in loop for the scenario that asks for it.
    assert.equal(first.name, `invoke_agent ${str(first, "reins.harness")}`);
    assert.match(first.name, /^invoke_agent (command|reins)$/);
    assert.equal(str(first, "reins.trigger"), "suite");
    const conversation = str(first, "gen_ai.conversation.id");
    assert.ok(conversation, `scenario ${scenario.key} has a conversation id`);
    later.forEach((turn, i) => {
      assert.equal(str(turn, "gen_ai.conversation.id"), conversation, "one conversation");
      assert.equal(str(turn, "reins.run.parent_id"), str(first, "reins.run.id"));
      // Linked to its first turn (its parent) and to the turn it resumes, once per run.
      const resumed = turns[i];
      assert.equal(str(turn, "reins.run.resumed_from_id"), str(resumed, "reins.run.id"));
      assert.deepEqual(
        turn.links.map((link) => [link.spanId, relationOf(link)]),
        resumed === first
          ? [[first.spanId, "parent,resumed_from"]]
          : [[first.spanId, "parent"], [resumed.spanId, "resumed_from"]],
      );
    });
  }
  const tools = collector.spans().filter((span) => span.name === "execute_tool issue_refund");
  assert.ok(tools.length >= 2, "the agent's refund tool calls are spans");
});

Deno.test("reins suite run with the collector down ends as it does without one", async () => {
  await using dir = await tempDir();
  const run = (home: string, env: Record<string, string>) =>
    reins(["suite", "run", "suite.yaml", "--no-report", "--json"], {
      home,
      cwd: EXAMPLE_DIR,
      allowRun: [SHOP_AGENT, "sh"],
      env,
    });
  const without = await run(`${dir.path}/a`, {});
  const down = await run(`${dir.path}/b`, { OTEL_EXPORTER_OTLP_ENDPOINT: DEAD_COLLECTOR_URL });
  assert.equal(down.code, without.code, down.stderr);
  const statuses = (text: string) =>
    (JSON.parse(text) as SuiteRun).scenarios.map((s) => [s.key, s.status]);
  assert.deepEqual(statuses(down.stdout), statuses(without.stdout));
  const runIds = (JSON.parse(down.stdout) as SuiteRun).scenarios.flatMap((s) => s.runIds);
  const kept = [...Deno.readDirSync(`${dir.path}/b/outbox/otlp`)].filter((e) =>
    e.name.endsWith(".json")
  );
  assert.equal(kept.length, runIds.length, "each run's trace waits in the outbox");
});
