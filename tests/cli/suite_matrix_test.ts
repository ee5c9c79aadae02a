// `reins suite run FILE` of a matrix: every scenario against every agent of `agents:`, each epoch
// a cell of its own (its own context and family), rows named key.AGENT.N with the agent and epoch
// as fields of their own in --json, the table and JUnit per agent; --agent picks agents, --epochs
// (or --repeat, its older name) the epochs; plans deal cells to shards. Real command-driver
// agents (sh scripts) told apart by their agents' args and env.
import assert from "node:assert/strict";
import { reins, type ReinsOptions, tempDir } from "../support/reins.ts";

// Answers "answer to PROMPT" — or, as the agent whose MODE is sloppy, something else for "two".
const AGENT = `#!/bin/sh
prompt=$(cat)
if [ "$MODE" = sloppy ] && [ "$prompt" = two ]; then echo "no idea"; exit 0; fi
echo "answer to $prompt from $1"
`;

async function bench() {
  const dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT);
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: cmp",
      "epochs: 2",
      "agents:",
      "  careful: {driver: command, exec: ./agent.sh careful}",
      "  sloppy: {driver: command, exec: ./agent.sh sloppy, env: {MODE: sloppy}}",
      "scenarios:",
      "  - {key: one, turns: [one], checks: [{regex: 'answer to one'}]}",
      "  - {key: two, turns: [two], checks: [{regex: 'answer to two'}]}",
    ].join("\n"),
  );
  const options: ReinsOptions = {
    home: `${dir.path}/home`,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  };
  return { dir, options };
}

interface Row {
  instance: string;
  key: string;
  agent: string | null;
  epoch: number;
  status: string;
  runIds: string[];
}

Deno.test("reins suite run of a matrix: every scenario × agent × epoch its own row, context and family; JSON, table and JUnit per agent", async () => {
  const { dir, options } = await bench();
  await using _ = dir;
  const ran = await reins(
    ["suite", "run", "suite.yaml", "--jobs", "4", "--no-report", "--json", "--junit", "j.xml"],
    options,
  );
  assert.equal(ran.code, 1, ran.stderr);
  const json = JSON.parse(ran.stdout);
  const rows: Row[] = json.scenarios;
  assert.deepEqual(rows.map((r) => [r.instance, r.key, r.agent, r.epoch, r.status]), [
    ["one.careful.1", "one", "careful", 1, "passed"],
    ["one.careful.2", "one", "careful", 2, "passed"],
    ["one.sloppy.1", "one", "sloppy", 1, "passed"],
    ["one.sloppy.2", "one", "sloppy", 2, "passed"],
    ["two.careful.1", "two", "careful", 1, "passed"],
    ["two.careful.2", "two", "careful", 2, "passed"],
    ["two.sloppy.1", "two", "sloppy", 1, "failed"],
    ["two.sloppy.2", "two", "sloppy", 2, "failed"],
  ]);
  assert.deepEqual(json.options.agents, ["careful", "sloppy"]);
  assert.equal(json.options.repeat, 2);
  assert.deepEqual(
    json.agents.map((a: { agent: string; totals: { passed: number; failed: number } }) => [
      a.agent,
      a.totals.passed,
      a.totals.failed,
    ]),
    [["careful", 4, 0], ["sloppy", 2, 2]],
  );
  // Each cell its own conversation: a context and a family of its own; the agent's args reached it.
  const contexts = new Set<string>();
  for (const row of rows) {
    assert.equal(row.runIds.length, 1);
    const shown = await reins(["show", row.runIds[0], "--json"], options);
    const { record, events } = JSON.parse(shown.stdout);
    contexts.add(record.contextId);
    assert.equal(record.parentRunId, null, "each cell's first run heads its own family");
    const answer = events.find((e: { type: string }) => e.type === "completed").payload.result;
    if (row.status === "passed") assert.equal(answer, `answer to ${row.key} from ${row.agent}`);
  }
  assert.equal(contexts.size, rows.length);

  const junit = await Deno.readTextFile(`${dir.path}/j.xml`);
  const suites = [...junit.matchAll(/<testsuite name="([^"]+)" tests="(\d+)" failures="(\d+)"/g)]
    .map((m) => [m[1], Number(m[2]), Number(m[3])]);
  assert.deepEqual(suites, [["careful · cmp", 4, 0], ["sloppy · cmp", 4, 2]]);
  assert.match(junit, /<testcase name="two\.sloppy\.1" classname="cmp\.sloppy"/);
  assert.match(junit, /<testsuites name="cmp" tests="8" failures="2"/);

  const table = await reins(["suite", "show", json.suiteRunId], options);
  const lines = table.stdout.split("\n");
  const careful = lines.indexOf("agent careful");
  const sloppy = lines.indexOf("agent sloppy");
  assert.ok(careful >= 0 && sloppy > careful, table.stdout);
  assert.ok(lines.some((line) => line.startsWith("careful: 4 scenarios: 4 passed, 0 failed")));
  assert.ok(lines.some((line) => line.startsWith("sloppy: 4 scenarios: 2 passed, 2 failed")));
  assert.ok(
    lines.some((line) => /^all 2 agents: 8 scenarios: 6 passed, 2 failed/.test(line)),
    table.stdout,
  );

  // A rerun of the failures plays those cells again, each by its own agent.
  const rerun = await reins(
    [
      "suite",
      "run",
      "suite.yaml",
      "--rerun",
      "failed",
      "--from",
      json.suiteRunId,
      "--no-report",
      "--json",
    ],
    options,
  );
  assert.equal(rerun.code, 1, rerun.stderr);
  const again = JSON.parse(rerun.stdout);
  assert.deepEqual(again.scenarios.map((r: Row) => [r.instance, r.agent, r.epoch, r.status]), [
    ["two.sloppy.1", "sloppy", 1, "failed"],
    ["two.sloppy.2", "sloppy", 2, "failed"],
  ]);
  assert.deepEqual(again.options.agents, ["careful", "sloppy"]);
});

Deno.test("reins suite run --agent picks agents, --epochs (--repeat) the epochs; a wrong name or two epoch counts are refused", async () => {
  const { dir, options } = await bench();
  await using _ = dir;
  const one = await reins(
    ["suite", "run", "suite.yaml", "--agent", "careful", "--epochs", "1", "--no-report", "--json"],
    options,
  );
  assert.equal(one.code, 0, one.stderr);
  const json = JSON.parse(one.stdout);
  assert.deepEqual(json.scenarios.map((r: Row) => r.instance), ["one.careful", "two.careful"]);
  assert.deepEqual(json.options.agents, ["careful"]);
  // regression: "(× 1 agents: careful)" and "all 1 agents: …"
  const table = await reins(["suite", "show", json.suiteRunId], options);
  assert.match(table.stdout, /^1 agent: 2 scenarios: 2 passed/m);
  assert.doesNotMatch(table.stdout, /1 agents/);
  const said = await reins(
    ["suite", "run", "suite.yaml", "--agent", "careful", "--epochs", "1", "--no-report"],
    options,
  );
  assert.match(said.stderr, /: 2 scenarios \(× 1 agent: careful\), /);

  const repeated = await reins(
    ["suite", "run", "suite.yaml", "--agent", "sloppy", "--repeat", "3", "--no-report", "--json"],
    options,
  );
  assert.equal(repeated.code, 1);
  assert.deepEqual(
    JSON.parse(repeated.stdout).scenarios.map((r: Row) => r.instance),
    [
      "one.sloppy.1",
      "one.sloppy.2",
      "one.sloppy.3",
      "two.sloppy.1",
      "two.sloppy.2",
      "two.sloppy.3",
    ],
  );

  for (
    const [args, message] of [
      [
        ["--agent", "carefull"],
        /--agent "carefull" is not one of the suite's agents \(did you mean 'careful'\?\)/,
      ],
      [["--epochs", "2", "--repeat", "3"], /--epochs 2 and --repeat 3 say two things/],
    ] as const
  ) {
    const refused = await reins(["suite", "run", "suite.yaml", "--no-report", ...args], options);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, message);
  }
  const listed = await reins(["suite", "list", "--json"], options);
  assert.equal(JSON.parse(listed.stdout).suiteRuns.length, 3, "a refused run leaves none behind");
});

Deno.test("reins suite plan of a matrix deals cells to shards; the shards' runs merge into the whole matrix", async () => {
  const { dir, options } = await bench();
  await using _ = dir;
  const planned = await reins(
    ["suite", "plan", "suite.yaml", "--shards", "3", "--out", "plan.json", "--no-report"],
    options,
  );
  assert.equal(planned.code, 0, planned.stderr);
  const plan = JSON.parse(await Deno.readTextFile(`${dir.path}/plan.json`));
  assert.deepEqual(plan.agents, ["careful", "sloppy"]);
  assert.deepEqual(
    plan.instances.map((i: { id: string; agent: string; shard: number }) => [i.id, i.shard]),
    [
      ["one.careful.1", 1],
      ["one.careful.2", 2],
      ["one.sloppy.1", 3],
      ["one.sloppy.2", 1],
      ["two.careful.1", 2],
      ["two.careful.2", 3],
      ["two.sloppy.1", 1],
      ["two.sloppy.2", 2],
    ],
  );
  const homes: string[] = [];
  for (const shard of [1, 2, 3]) {
    const home = `${dir.path}/shard${shard}`;
    homes.push(home);
    const ran = await reins(
      ["suite", "run", "suite.yaml", "--plan", "plan.json", "--shard", `${shard}/3`, "--no-report"],
      { ...options, home },
    );
    assert.ok(ran.code === 0 || ran.code === 1, ran.stderr);
  }
  const merged = await reins(
    ["suite", "merge", ...homes, "--json"],
    { ...options, allowPaths: homes },
  );
  assert.equal(merged.code, 1, merged.stderr);
  const rows = JSON.parse(merged.stdout).scenarios as Row[];
  assert.deepEqual(rows.map((r) => [r.instance, r.agent, r.epoch, r.status]), [
    ["one.careful.1", "careful", 1, "passed"],
    ["one.careful.2", "careful", 2, "passed"],
    ["one.sloppy.1", "sloppy", 1, "passed"],
    ["one.sloppy.2", "sloppy", 2, "passed"],
    ["two.careful.1", "careful", 1, "passed"],
    ["two.careful.2", "careful", 2, "passed"],
    ["two.sloppy.1", "sloppy", 1, "failed"],
    ["two.sloppy.2", "sloppy", 2, "failed"],
  ]);
});
