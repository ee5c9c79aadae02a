// Shards: round-robin slices, the shard to run from flags or the scheduler's variables, and the
// merge of the slices' results.
import assert from "node:assert/strict";
import {
  assignShards,
  mergeShards,
  parseShard,
  type PlanFile,
  planProblems,
  shardFromEnv,
  type ShardRun,
} from "../../lib/suite/plan.ts";
import type { SuiteRunFile } from "../../lib/suite/state.ts";
import { stateOf } from "./_states.ts";
import { globMatcher } from "../../lib/suite/glob.ts";
import { compileRegex } from "../../lib/suite/regex.ts";

Deno.test("assignShards() deals the scenarios round robin, the same every time", () => {
  const instances = ["a", "b", "c", "d", "e"].map((key, index) => ({
    id: key,
    key,
    repeat: 1,
    agent: null,
    index,
  }));
  const shards = assignShards(instances, 3).map((i) => [i.id, i.shard]);
  assert.deepEqual(shards, [["a", 1], ["b", 2], ["c", 3], ["d", 1], ["e", 2]]);
  assert.deepEqual(assignShards(instances, 3), assignShards(instances, 3));
});

Deno.test("parseShard() and shardFromEnv(): I/N 1-based; JOB_COMPLETION_INDEX 0-based", () => {
  assert.deepEqual(parseShard("2/3"), { index: 2, count: 3 });
  for (const bad of ["0/3", "4/3", "x", "1/0", "-1/2"]) {
    assert.throws(() => parseShard(bad), /takes I\/N/);
  }
  assert.deepEqual(shardFromEnv({ REINS_SHARD: "3/4" }, 4), { index: 3, count: 4 });
  assert.deepEqual(shardFromEnv({ JOB_COMPLETION_INDEX: "0" }, 4), { index: 1, count: 4 });
  assert.deepEqual(shardFromEnv({ JOB_COMPLETION_INDEX: "3" }, 4), { index: 4, count: 4 });
  assert.throws(() => shardFromEnv({ JOB_COMPLETION_INDEX: "4" }, 4), /below the plan's 4 shards/);
  assert.equal(shardFromEnv({}, 4), null);
});

function shardRun(
  index: number,
  count: number,
  keys: string[],
  planId = "p1",
  createdAt = "2026-01-05T14:03:00.000Z",
): ShardRun {
  const header = {
    id: `run-${index}-${createdAt}`,
    suite: "s",
    createdAt,
    options: { shard: { planId, index, count, total: 5 } },
  } as unknown as SuiteRunFile;
  const order = ["a", "b", "c", "d", "e"];
  return {
    header,
    source: `shard ${index} at ${createdAt}`,
    states: keys.map((k) => stateOf(k, "passed", {}, order.indexOf(k))),
  };
}

Deno.test("regression: planProblems() finds an instance not in the suite, one removed, doubled or moved, a shard past N and a shared call", () => {
  const expected = ["a", "b", "c"].map((key, index) => ({
    id: key,
    key,
    repeat: 1,
    agent: null,
    index,
  }));
  const plan = (instances: PlanFile["instances"]): PlanFile => ({
    type: "reins.suite-plan",
    version: 1,
    id: "p",
    suite: "s",
    digest: "sha256:00",
    createdAt: "2026-01-05T14:03:00.000Z",
    shards: 2,
    repeat: 1,
    agents: null,
    filter: null,
    instances,
    platform: null,
    executions: null,
  });
  const planned = assignShards(expected, 2).map((instance, i) => ({
    ...instance,
    callExecutionId: `call-${i}`,
  }));
  assert.deepEqual(planProblems(plan(planned), expected), []);
  const [a, b, c] = planned;
  assert.deepEqual(
    planProblems(
      plan([
        { ...a, id: "zzz", key: "zzz" },
        { ...b, shard: 3 },
        { ...b, shard: 1, callExecutionId: "call-9" },
        { ...c, index: 0, callExecutionId: "call-1" },
      ]),
      expected,
    ),
    [
      'instances[0].id: "zzz" is not one of the suite\'s scenarios as planned',
      "instances[1].shard: 3 is not one of the plan's shards (1 to 2)",
      'instances[2].id: "b" is also instances[1] (two shards would run it)',
      "instances[3].callExecutionId: is also instances[1]'s",
      'instances[3].index: 0, but the suite\'s "c" has 2',
      'instances: "a" is missing (no shard would run it)',
    ],
  );
});

Deno.test("planProblems() of a matrix: one execution per agent and epoch, none shared, one for every reported cell", () => {
  const expected = ["a", "b"].flatMap((key, index) =>
    ["x", "y"].flatMap((agent) =>
      [1, 2].map((repeat) => ({ id: `${key}.${agent}.${repeat}`, key, repeat, agent, index }))
    )
  );
  const execution = (agent: string, epoch: number, testExecutionId: string) => ({
    baseUrl: "http://platform.test",
    workspaceId: null,
    name: `${agent} · s`,
    runTestId: `test-${agent}`,
    testExecutionId,
    url: `/runs/test-${agent}/${testExecutionId}`,
    agent,
    epoch,
  });
  const executions = [
    execution("x", 1, "e1"),
    execution("x", 2, "e2"),
    execution("y", 1, "e3"),
    execution("y", 2, "e4"),
  ];
  const plan = (given: Partial<PlanFile>): PlanFile => ({
    type: "reins.suite-plan",
    version: 1,
    id: "p",
    suite: "s",
    digest: "sha256:00",
    createdAt: "2026-01-05T14:03:00.000Z",
    shards: 3,
    repeat: 2,
    agents: ["x", "y"],
    filter: null,
    instances: assignShards(expected, 3).map((instance, i) => ({
      ...instance,
      callExecutionId: `call-${i}`,
    })),
    platform: null,
    executions,
    ...given,
  });
  assert.deepEqual(planProblems(plan({}), expected), []);
  assert.deepEqual(
    planProblems(
      plan({
        platform: executions[0],
        executions: [executions[0], { ...executions[1], epoch: 1 }, execution("y", 1, "e1")],
      }),
      expected,
    ),
    [
      "platform: a plan of a matrix reports through its executions, one per agent and epoch",
      'executions[1]: agent "x", epoch 1 is also executions[0]',
      "executions[2].testExecutionId: is also executions[0]'s",
      'instances[1].callExecutionId: no execution of agent "x", epoch 2 holds it',
      'instances[3].callExecutionId: no execution of agent "y", epoch 2 holds it',
      'instances[5].callExecutionId: no execution of agent "x", epoch 2 holds it',
      'instances[7].callExecutionId: no execution of agent "y", epoch 2 holds it',
    ],
  );
});

Deno.test("mergeShards() puts shards back in the suite's order and says what is missing or doubled", () => {
  const merged = mergeShards([shardRun(2, 3, ["b", "e"]), shardRun(1, 3, ["a", "d"])]);
  assert.deepEqual(merged.states.map((s) => s.instance.id), ["a", "b", "d", "e"]);
  assert.deepEqual(merged.missingShards, [3]);
  const doubled = mergeShards([
    shardRun(1, 2, ["a"], "p1", "2026-01-05T14:03:00.000Z"),
    shardRun(1, 2, ["a", "c"], "p1", "2026-01-05T15:00:00.000Z"),
    shardRun(2, 2, ["b"]),
  ]);
  assert.deepEqual(doubled.states.map((s) => s.instance.id), ["a", "b", "c"]);
  assert.equal(doubled.problems.length, 1);
  assert.match(doubled.problems[0], /^shard 1\/2 was given twice .*: the later one counts$/);
  assert.throws(
    () => mergeShards([shardRun(1, 2, ["a"], "p1"), shardRun(2, 2, ["b"], "p2")]),
    /2 different plans/,
  );
});

Deno.test("globMatcher() matches keys with *, ?, classes and alternatives", () => {
  const match = globMatcher("refund-*,login,t?st,[ab]x,[!c]y");
  assert.deepEqual(
    [
      "refund-late",
      "refund-",
      "login",
      "logins",
      "test",
      "tst",
      "ax",
      "bx",
      "cx",
      "dy",
      "cy",
      "a.b",
    ].filter(match),
    ["refund-late", "refund-", "login", "test", "ax", "bx", "dy"],
  );
  assert.equal(globMatcher("a.b")("aXb"), false);
  assert.throws(() => globMatcher("[ab"), /without its '\]'/);
  assert.throws(() => globMatcher(" , "), /needs a glob/);
});

Deno.test("compileRegex() takes leading (?ims) flags and refuses a broken pattern with the reason", () => {
  const compiled = compileRegex("(?is)sorry.apolog");
  assert.ok(compiled.ok);
  assert.equal(compiled.regex.flags, "isu");
  assert.ok(compiled.regex.test("SORRY\nAPOLOG"));
  assert.deepEqual(compileRegex("a(?i)b").ok, false);
  const broken = compileRegex("[z-a]");
  assert.ok(!broken.ok && broken.reason.startsWith("invalid regular expression ("));
});
