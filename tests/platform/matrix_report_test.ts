// A matrix suite run reported to the ingestion API on Python's http.server: each agent a test of
// its own (named `AGENT · SUITE`, so the seed's agent_name is the agent), each epoch an execution
// of it with the same scenario_selectors — K epochs make one test with K executions, never K
// tests; each call's result names its agent and epoch. Sharded, the same: `suite plan` makes the
// tests and executions once, and the shards (each its own data root) only fill their calls.
import assert from "node:assert/strict";
import {
  hasPython,
  type PythonPlatform,
  startPythonPlatform,
} from "../fixtures/python_platform.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const PYTHON = hasPython();
if (!PYTHON) {
  console.warn(
    "SKIPPED tests/platform/matrix_report_test.ts: python3 is not on PATH, so the matrix's " +
      "report cannot be checked against Python's http.server",
  );
}

const AGENT = `#!/bin/sh
prompt=$(cat)
if [ "$MODE" = sloppy ] && [ "$prompt" = two ]; then echo "no idea"; exit 0; fi
echo "answer to $prompt"
`;

Deno.test({
  name: "reins suite run of a matrix: one test per agent, one execution per epoch, like with like",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT);
    await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
    await Deno.writeTextFile(
      `${dir.path}/suite.yaml`,
      [
        "suite: cmp",
        "epochs: 3",
        "agents:",
        "  careful: {driver: command, exec: ./agent.sh}",
        "  sloppy: {driver: command, exec: ./agent.sh, env: {MODE: sloppy}}",
        "scenarios:",
        "  - {key: one, persona: {name: Ann}, turns: [one], checks: [{regex: 'answer to one'}]}",
        "  - {key: two, persona: {name: Bob}, turns: [two], checks: [{regex: 'answer to two'}]}",
      ].join("\n"),
    );
    await using platform = await startPythonPlatform();
    const ran = await reins(["suite", "run", "suite.yaml", "--jobs", "3", "--json"], {
      home: `${dir.path}/home`,
      cwd: dir.path,
      env: platform.env,
      allowRun: [`${dir.path}/agent.sh`, "sh"],
    });
    assert.equal(ran.code, 1, ran.stderr);
    const json = JSON.parse(ran.stdout);
    const log = await platform.log();

    // One provision per agent, named with the agent first, the suite's scenarios its personas.
    const provisions = log.requests.filter((r) => r.route === "provision");
    assert.deepEqual(
      provisions.map((r) => [r.body!.name, r.body!.agent_name]).sort(),
      [["careful · cmp", "careful"], ["sloppy · cmp", "sloppy"]],
    );
    for (const provision of provisions) {
      assert.deepEqual(
        (provision.body!.personas as { scenario_key?: string; name: string }[]).map((p) => p.name),
        ["Ann", "Bob"],
      );
      assert.equal(provision.body!.modality, "text");
    }
    // Three executions of each test, each with the same selectors: the scenarios' own keys.
    const starts = log.requests.filter((r) => r.route === "start");
    assert.equal(starts.length, 6);
    const tests = Object.values(log.tests);
    assert.equal(tests.length, 2, "K epochs make one test per agent, not K");
    for (const test of tests) {
      const executions = Object.values(log.executions).filter((e) => e.run_test_id === test.id);
      assert.equal(executions.length, 3, `${test.body.name}: an execution per epoch`);
      for (const execution of executions) {
        const selectors = (execution.body as { scenario_selectors: unknown[] }).scenario_selectors;
        assert.deepEqual(selectors, [
          { scenario_key: "one", persona_name: "Ann" },
          { scenario_key: "two", persona_name: "Bob" },
        ]);
        assert.equal(execution.calls.length, 2);
      }
    }
    // Every cell's result is in, naming its agent and epoch.
    const results = Object.values(log.calls).map((call) => call.result!);
    assert.equal(results.length, 12);
    const seen = results.map((result) => {
      const metadata = result.call_metadata as Record<string, unknown>;
      return `${metadata.reins_agent}.${metadata.reins_epoch}:${metadata.reins_instance}`;
    }).sort();
    assert.deepEqual(seen, [
      "careful.1:one.careful.1",
      "careful.1:two.careful.1",
      "careful.2:one.careful.2",
      "careful.2:two.careful.2",
      "careful.3:one.careful.3",
      "careful.3:two.careful.3",
      "sloppy.1:one.sloppy.1",
      "sloppy.1:two.sloppy.1",
      "sloppy.2:one.sloppy.2",
      "sloppy.2:two.sloppy.2",
      "sloppy.3:one.sloppy.3",
      "sloppy.3:two.sloppy.3",
    ]);
    assert.deepEqual(
      json.report.reports.map((r: { agent: string; epoch: number; state: string }) =>
        `${r.agent}.${r.epoch}:${r.state}`
      ).sort(),
      [
        "careful.1:reported",
        "careful.2:reported",
        "careful.3:reported",
        "sloppy.1:reported",
        "sloppy.2:reported",
        "sloppy.3:reported",
      ],
    );
    assert.match(ran.stderr, /careful, epoch 1: reported to the platform: /);
  },
});

const SUITE = [
  "suite: cmp",
  "epochs: 2",
  "agents:",
  "  careful: {driver: command, exec: ./agent.sh}",
  "  sloppy: {driver: command, exec: ./agent.sh, env: {MODE: sloppy}}",
  "scenarios:",
  "  - {key: one, persona: {name: Ann}, turns: [one], checks: [{regex: 'answer to one'}]}",
  "  - {key: two, persona: {name: Bob}, turns: [two], checks: [{regex: 'answer to two'}]}",
  "  - {key: three, persona: {name: Cy}, turns: [three], checks: [{regex: 'answer to three'}]}",
].join("\n");

Deno.test({
  name:
    "reins suite plan + run --shard of a matrix: each agent's test and each epoch's execution made once, each cell reported once into its call",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT);
    await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
    await Deno.writeTextFile(`${dir.path}/suite.yaml`, SUITE);
    await using platform = await startPythonPlatform();
    const planned = await reins(
      ["suite", "plan", "suite.yaml", "--shards", "3", "--out", "plan.json", "--json"],
      { home: `${dir.path}/planner`, cwd: dir.path, env: platform.env },
    );
    assert.equal(planned.code, 0, planned.stderr);
    const plan = JSON.parse(await Deno.readTextFile(`${dir.path}/plan.json`));
    assert.equal(plan.platform, null);
    assert.deepEqual(
      plan.executions.map((e: { agent: string; epoch: number; name: string }) =>
        `${e.agent}.${e.epoch}:${e.name}`
      ),
      [
        "careful.1:careful · cmp",
        "careful.2:careful · cmp",
        "sloppy.1:sloppy · cmp",
        "sloppy.2:sloppy · cmp",
      ],
    );
    const afterPlan = await platform.log();
    // The planner made it all: a test per agent, an execution per epoch, a call per cell.
    assert.deepEqual(
      afterPlan.requests.map((r) => r.route),
      [
        "provision",
        "start",
        "batch",
        "start",
        "batch",
        "provision",
        "start",
        "batch",
        "start",
        "batch",
      ],
    );
    assert.equal(Object.keys(afterPlan.calls).length, 12);

    const shards = [1, 2, 3];
    const outputs = await Promise.all(
      shards.map((shard) =>
        reins([
          "suite",
          "run",
          "suite.yaml",
          "--plan",
          "plan.json",
          "--shard",
          `${shard}/3`,
          "--json",
        ], {
          home: `${dir.path}/m${shard}`,
          cwd: dir.path,
          env: platform.env,
          allowRun: [`${dir.path}/agent.sh`, "sh"],
        })
      ),
    );
    const runs = outputs.map((output) => JSON.parse(output.stdout));
    for (const [i, output] of outputs.entries()) {
      assert.ok(output.code === 0 || output.code === 1, output.stderr);
      for (const report of runs[i].report.reports) assert.equal(report.state, "reported");
    }
    // Every shard reported each of its agent-epochs into the plan's execution of it.
    const planned_ = new Map(
      plan.executions.map((e: { agent: string; epoch: number; testExecutionId: string }) => [
        `${e.agent}.${e.epoch}`,
        e.testExecutionId,
      ]),
    );
    for (const run of runs) {
      for (const report of run.report.reports) {
        assert.equal(report.testExecutionId, planned_.get(`${report.agent}.${report.epoch}`));
      }
    }

    const log = await platform.log();
    const routes = log.requests.map((r) => r.route);
    assert.equal(routes.filter((r) => r === "provision").length, 2, "one test per agent");
    assert.equal(
      routes.filter((r) => r === "start").length,
      4,
      "one execution per agent and epoch",
    );
    assert.equal(routes.filter((r) => r === "batch").length, 4);
    const tests = Object.values(log.tests);
    assert.deepEqual(
      tests.map((t) => [t.body.name, t.body.agent_name, t.body.modality]).sort(),
      [["careful · cmp", "careful", "text"], ["sloppy · cmp", "sloppy", "text"]],
    );
    for (const test of tests) {
      const executions = Object.values(log.executions).filter((e) => e.run_test_id === test.id);
      assert.equal(executions.length, 2, `${test.body.name}: an execution per epoch`);
      for (const execution of executions) {
        assert.deepEqual((execution.body as { scenario_selectors: unknown[] }).scenario_selectors, [
          { scenario_key: "one", persona_name: "Ann" },
          { scenario_key: "two", persona_name: "Bob" },
          { scenario_key: "three", persona_name: "Cy" },
        ]);
        // Each of its calls has exactly one result, of its own agent and epoch, whichever shard.
        const epoch = plan.executions.find((e: { testExecutionId: string }) =>
          e.testExecutionId === execution.id
        );
        const cells = execution.calls.map((id) => log.calls[id]);
        assert.deepEqual(cells.map((call) => call.result_patches), [1, 1, 1]);
        assert.deepEqual(
          cells.map((call) => {
            const metadata = call.result!.call_metadata as Record<string, unknown>;
            return `${metadata.reins_agent}.${metadata.reins_epoch}`;
          }),
          [1, 2, 3].map(() => `${epoch.agent}.${epoch.epoch}`),
        );
        assert.deepEqual(
          cells.map((call) =>
            (call.result!.call_metadata as { harness_scenario: string }).harness_scenario
          )
            .sort(),
          ["one", "three", "two"],
        );
      }
    }
    // Each cell's result went into the call the plan allocated for it.
    for (const instance of plan.instances) {
      const metadata = log.calls[instance.callExecutionId].result!.call_metadata as Record<
        string,
        unknown
      >;
      assert.equal(metadata.reins_instance, instance.id);
    }
  },
});

/** A matrix planned in two shards whose shard 1 is killed with -9 while it plays two.careful.1. */
async function killedShard(dir: string, platform: PythonPlatform, shardFlags: string[]) {
  // As AGENT, and a prompt with a hold file waits until the file is gone.
  const agent = `#!/bin/sh
prompt=$(cat)
echo $$ > ${dir}/pid-$prompt
while [ -f ${dir}/hold-$prompt ]; do sleep 0.05; done
if [ "$MODE" = sloppy ] && [ "$prompt" = two ]; then echo "no idea"; exit 0; fi
echo "answer to $prompt"
`;
  await Deno.writeTextFile(`${dir}/agent.sh`, agent);
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  await Deno.writeTextFile(`${dir}/suite.yaml`, SUITE);
  await Deno.writeTextFile(`${dir}/hold-two`, "");
  const options = { cwd: dir, env: platform.env, allowRun: [`${dir}/agent.sh`, "sh"] };
  const planned = await reins(
    ["suite", "plan", "suite.yaml", "--shards", "2", "--out", "plan.json"],
    { ...options, home: `${dir}/planner` },
  );
  assert.equal(planned.code, 0, planned.stderr);
  const shard1 = ["suite", "run", "suite.yaml", "--plan", "plan.json", "--shard", "1/2"];
  const child = spawnReins([...shard1, "--jobs", "1", ...shardFlags], {
    ...options,
    home: `${dir}/m1`,
  });
  // Shard 1 plays one.careful.1, one.sloppy.1, then waits in two.careful.1.
  const deadline = Date.now() + 60_000;
  while (!(await Deno.stat(`${dir}/pid-two`).then(() => true, () => false))) {
    if (Date.now() > deadline) throw new Error("shard 1 never reached two.careful.1");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { options, shard1, child };
}

async function killNow(dir: string, child: Deno.ChildProcess): Promise<void> {
  child.kill("SIGKILL");
  await child.status;
  await child.stdout.cancel();
  await child.stderr.cancel();
  try {
    Deno.kill(Number((await Deno.readTextFile(`${dir}/pid-two`)).trim()), "SIGKILL");
  } catch { /* gone */ }
  await Deno.remove(`${dir}/hold-two`);
}

Deno.test({
  name:
    "regression: reins suite run --resume of a matrix's shard begun with --no-report provisions no test of its own",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await using platform = await startPythonPlatform();
    const { options, child } = await killedShard(dir.path, platform, ["--no-report"]);
    await killNow(dir.path, child);
    const resumed = await reins(["suite", "run", "suite.yaml", "--resume", "--json"], {
      ...options,
      home: `${dir.path}/m1`,
    });
    assert.ok(resumed.code === 0 || resumed.code === 1, resumed.stderr);
    const routes = (await platform.log()).requests.map((r) => r.route);
    assert.deepEqual(
      ["provision", "start", "batch"].map((route) => routes.filter((r) => r === route).length),
      [2, 4, 4],
      "only the plan's tests and executions",
    );
  },
});

Deno.test({
  name:
    "reins suite run --resume of a matrix's shard killed with -9 goes on in the plan's calls: nothing provisioned or started, each call's one result",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await using platform = await startPythonPlatform();
    const { options, shard1, child } = await killedShard(dir.path, platform, []);
    // Its ping for two.careful.1 is in.
    const deadline = Date.now() + 60_000;
    while (!Object.values((await platform.log()).calls).some((c) => c.status === "ongoing")) {
      if (Date.now() > deadline) throw new Error("no ONGOING ping came");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await killNow(dir.path, child);

    const resumed = await reins(["suite", "run", "suite.yaml", "--resume", "--json"], {
      ...options,
      home: `${dir.path}/m1`,
    });
    assert.ok(resumed.code === 0 || resumed.code === 1, resumed.stderr);
    for (const report of JSON.parse(resumed.stdout).report.reports) {
      assert.equal(report.state, "reported", JSON.stringify(report));
    }
    const other = await reins([...shard1.slice(0, -1), "2/2"], {
      ...options,
      home: `${dir.path}/m2`,
    });
    assert.ok(other.code === 0 || other.code === 1, other.stderr);

    const log = await platform.log();
    const routes = log.requests.map((r) => r.route);
    assert.deepEqual(
      ["provision", "start", "batch"].map((route) => routes.filter((r) => r === route).length),
      [2, 4, 4],
      "the plan's tests and executions, and no other",
    );
    const calls = Object.values(log.calls);
    assert.equal(calls.length, 12);
    // Every call has its result. One the kill caught in flight (sent, its answer not yet saved) is
    // sent again by the resume as the same step, with the same Idempotency-Key (the stub does not
    // honour it, so it counts two PATCHes of the one result): never a second report's.
    for (const call of calls) {
      const keys = log.requests.filter((r) =>
        r.route === "result" && r.target.includes(`/call-executions/${call.id}/result/`)
      ).map((r) => r.headers["idempotency-key"]);
      assert.equal(keys.length, call.result_patches);
      assert.ok(keys.every((key) => typeof key === "string" && key.length > 0));
      assert.ok(call.result_patches >= 1, `${call.id} has no result`);
      assert.equal(new Set(keys).size, 1, `${call.id}: ${keys.join(", ")}`);
    }
    const plan = JSON.parse(await Deno.readTextFile(`${dir.path}/plan.json`));
    for (const instance of plan.instances) {
      const metadata = log.calls[instance.callExecutionId].result!.call_metadata as Record<
        string,
        unknown
      >;
      assert.equal(metadata.reins_instance, instance.id);
    }
  },
});
