// A matrix in the suite file: `agents:` (named configurations of driver, exec, model, args,
// approve, budget, env) and `epochs:`. What each cell's spec is, how rows are named and ordered,
// which agents are picked, and what the file refuses, each at its path and line.
import assert from "node:assert/strict";
import { cellSpec, parseSuite, SuiteFileError } from "../../lib/suite/load.ts";
import { instanceIdOf, instancesOf, selectedAgents } from "../../lib/suite/start.ts";
import { assignShards } from "../../lib/suite/plan.ts";

const encoder = new TextEncoder();

const MATRIX = [
  "suite: cmp",
  "approve: deny",
  "budget: {maxUsd: 1, maxTurns: 5}",
  "env: {A: suite, B: suite}",
  "epochs: 3",
  "agents:",
  "  sonnet: {driver: claude, model: claude-sonnet-4-5, args: ['--x'], budget: {maxUsd: 2}, env: {B: agent}}",
  "  haiku: {driver: claude, model: claude-haiku-4-5, approve: auto}",
  "  codex: {driver: codex, model: gpt-5-mini}",
  "scenarios:",
  "  - {key: one, turns: [hi]}",
  "  - {key: two, turns: [hi], approve: ask, budget: {maxTurns: 9}, env: {B: scenario}}",
].join("\n");

function problemsOf(text: string): string[] {
  try {
    parseSuite("/x/suite.yaml", encoder.encode(text));
  } catch (error) {
    if (error instanceof SuiteFileError) return error.lines("suite.yaml");
    throw error;
  }
  assert.fail("the file was accepted");
}

Deno.test("parseSuite() reads agents: in the file's order, and each cell's spec is its agent's over the suite's, the scenario's over both", () => {
  const suite = parseSuite("/x/suite.yaml", encoder.encode(MATRIX));
  assert.deepEqual(suite.agents, ["sonnet", "haiku", "codex"]);
  assert.equal(suite.epochs, 3);
  const [one, two] = suite.scenarios;
  const view = (spec: ReturnType<typeof cellSpec>) => ({
    agent: spec.agent,
    driver: spec.driver,
    model: spec.model,
    args: spec.args,
    approve: spec.approve,
    budget: spec.budget,
    env: spec.env,
  });
  assert.deepEqual(view(cellSpec(one, "sonnet")), {
    agent: "sonnet",
    driver: "claude",
    model: "claude-sonnet-4-5",
    args: ["--x"],
    approve: "deny",
    budget: { maxUsd: 2, maxTurns: 5 },
    env: { A: "suite", B: "agent" },
  });
  assert.deepEqual(view(cellSpec(one, "haiku")), {
    agent: "haiku",
    driver: "claude",
    model: "claude-haiku-4-5",
    args: [],
    approve: "auto",
    budget: { maxUsd: 1, maxTurns: 5 },
    env: { A: "suite", B: "suite" },
  });
  assert.deepEqual(view(cellSpec(two, "sonnet")), {
    agent: "sonnet",
    driver: "claude",
    model: "claude-sonnet-4-5",
    args: ["--x"],
    approve: "ask",
    budget: { maxUsd: 2, maxTurns: 9 },
    env: { A: "suite", B: "scenario" },
  });
  assert.equal(cellSpec(two, "codex").driver, "codex");
  // The scenario's own spec stands for its first agent (what reads a scenario alone).
  assert.equal(one.agent, "sonnet");
  assert.equal(one.model, "claude-sonnet-4-5");
  assert.throws(() => cellSpec(one, "nobody"), /no agent "nobody"/);
});

Deno.test("parseSuite() refuses what a matrix cannot take, each at its line", () => {
  assert.deepEqual(
    problemsOf([
      "suite: cmp",
      "agents:",
      "  1st: {driver: claude}",
      "  shop: {driver: command}",
      "  loopy: {driver: loop, model: sonnet, args: [a]}",
      "  oc: {driver: opencode, model: gpt-5, modle: y}",
      "  Shop: {driver: command, exec: ./a.sh}",
      "scenarios:",
      "  - {key: one, turns: [hi], driver: codex, model: gpt-5}",
    ].join("\n")),
    [
      "suite.yaml:3:8: agents.1st: must be 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter",
      "suite.yaml:6:40: agents.oc.modle: unknown key (did you mean 'model'?)",
    ],
  );
  assert.deepEqual(
    problemsOf([
      "suite: cmp",
      "driver: claude",
      "agents:",
      "  shop: {driver: command}",
      "  loopy: {driver: loop, model: sonnet, args: [a]}",
      "  oc: {driver: opencode, model: gpt-5}",
      "  Shop: {driver: command, exec: ./a.sh}",
      "scenarios:",
      "  - {key: one, turns: [hi], driver: codex, model: gpt-5}",
    ].join("\n")),
    [
      "suite.yaml:2:9: driver: driver goes in agents: (the suite is a matrix of its agents)",
      "suite.yaml:4:18: agents.shop.driver: the command driver needs exec",
      "suite.yaml:5:32: agents.loopy.model: the loop's model must be demo, mock:FILE, replay:RUN or openai:MODEL",
      "suite.yaml:5:46: agents.loopy.args: args go with a harness driver (claude, codex, gemini, opencode), not loop",
      "suite.yaml:6:33: agents.oc.model: opencode's model must be PROVIDER/MODEL",
      'suite.yaml:7:9: agents.Shop: "Shop" differs from the agent "shop" only in case',
      "suite.yaml:9:37: scenarios[0].driver: driver goes in agents: (the suite is a matrix of its agents)",
      "suite.yaml:9:51: scenarios[0].model: model goes in agents: (the suite is a matrix of its agents)",
    ],
  );
  assert.deepEqual(problemsOf("suite: s\nagents: {}\nscenarios: [{key: a, turns: [hi]}]"), [
    "suite.yaml:2:9: agents: needs at least one agent (or leave agents out)",
  ]);
});

Deno.test("instancesOf(): every scenario against every agent, each epoch its own row, named key.AGENT.N", () => {
  const suite = parseSuite("/x/suite.yaml", encoder.encode(MATRIX));
  const rows = instancesOf(suite, { filter: null, repeat: 2, agents: ["sonnet", "codex"] });
  assert.deepEqual(rows.map((row) => [row.id, row.key, row.agent, row.repeat]), [
    ["one.sonnet.1", "one", "sonnet", 1],
    ["one.sonnet.2", "one", "sonnet", 2],
    ["one.codex.1", "one", "codex", 1],
    ["one.codex.2", "one", "codex", 2],
    ["two.sonnet.1", "two", "sonnet", 1],
    ["two.sonnet.2", "two", "sonnet", 2],
    ["two.codex.1", "two", "codex", 1],
    ["two.codex.2", "two", "codex", 2],
  ]);
  assert.deepEqual(
    instancesOf(suite, { filter: "two", repeat: 1, agents: ["haiku"] }).map((row) => row.id),
    ["two.haiku"],
  );
  // Without agents, the names of before: key, key.N.
  assert.equal(instanceIdOf("k", null, 1, 1), "k");
  assert.equal(instanceIdOf("k", null, 3, 4), "k.3");
  // Shards deal cells, not scenarios: one scenario's cells go to different shards.
  assert.deepEqual(
    assignShards(rows, 3).filter((row) => row.key === "one").map((row) => row.shard),
    [1, 2, 3, 1],
  );
});

Deno.test("selectedAgents(): all by default, in the file's order; a name the suite lacks is refused with a guess", () => {
  const suite = parseSuite("/x/suite.yaml", encoder.encode(MATRIX));
  assert.deepEqual(selectedAgents(suite, null), ["sonnet", "haiku", "codex"]);
  assert.deepEqual(selectedAgents(suite, ["codex", "sonnet"]), ["sonnet", "codex"]);
  assert.throws(
    () => selectedAgents(suite, ["haiku", "sonet"]),
    /--agent "sonet" is not one of the suite's agents \(did you mean 'sonnet'\?\)/,
  );
  const plain = parseSuite(
    "/x/suite.yaml",
    encoder.encode("suite: s\nscenarios: [{key: a, turns: [hi]}]"),
  );
  assert.equal(selectedAgents(plain, null), null);
  assert.throws(() => selectedAgents(plain, ["x"]), /has no agents:/);
});
