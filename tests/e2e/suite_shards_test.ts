// Shards on a scheduler of one's own: `suite plan` provisions, starts and allocates once; three
// shard processes, each with its own data root as on three machines (the shard from --shard, from
// REINS_SHARD and from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX), report into those calls;
// `suite merge` puts their results together as the table one process would have printed.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";
import { startFakePlatform } from "../fixtures/fake_platform.ts";

const AGENT = `#!/bin/sh
# Answers the prompt; "crash" exits non-zero (an error), "wrong" answers what the check refuses.
prompt=$(cat)
case "$prompt" in
  crash) echo "boom" >&2; exit 7 ;;
  wrong) echo "something else" ;;
  *) printf '{"type":"usage.updated","payload":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":null,"cacheWriteTokens":null,"reasoningTokens":null,"costUsd":0.001,"requests":1}}\\n'
     echo "answer to $prompt" ;;
esac
`;

const KEYS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"];

async function writeSuite(dir: string): Promise<void> {
  await Deno.writeTextFile(`${dir}/agent.sh`, AGENT);
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  const prompt = (key: string) => key === "gamma" ? "crash" : key === "zeta" ? "wrong" : key;
  await Deno.writeTextFile(
    `${dir}/suite.yaml`,
    [
      "suite: sharded",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      ...KEYS.map((key) =>
        `  - {key: ${key}, persona: {name: ${key}}, turns: [${prompt(key)}, ${
          prompt(key)
        }], checks: [{regex: 'answer to', in: any}, {maxUsd: 1, unknown: pass}]}`
      ),
    ].join("\n"),
  );
}

/** A table's rows as cells, the duration column and the total time left out (they differ). */
function comparable(stdout: string): string[][] {
  const lines = stdout.trimEnd().split("\n");
  const rows = lines.slice(0, -2).map((line) => line.split(/\s{2,}/));
  for (const row of rows) row.splice(5, 1);
  const total = lines[lines.length - 1].replace(/ in [0-9.]+s/, "");
  return [...rows, [total]];
}

Deno.test("reins suite plan + three shards + merge: one provision, start and batch, each scenario reported once, the single-process table", async () => {
  await using dir = await tempDir();
  await writeSuite(dir.path);
  const platform = startFakePlatform();
  const env = {
    HARNESS_PLATFORM_URL: platform.url,
    HARNESS_PLATFORM_API_KEY: platform.apiKey,
    HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
  };
  const allowRun = [`${dir.path}/agent.sh`, "sh"];
  try {
    const planned = await reins([
      "suite",
      "plan",
      "suite.yaml",
      "--shards",
      "3",
      "--out",
      "plan.json",
      "--json",
    ], {
      home: `${dir.path}/planner`,
      cwd: dir.path,
      env,
    });
    assert.equal(planned.code, 0, planned.stderr);
    const plan = JSON.parse(await Deno.readTextFile(`${dir.path}/plan.json`));
    assert.equal(plan.instances.length, KEYS.length);
    assert.ok(plan.instances.every((i: { callExecutionId: string | null }) => i.callExecutionId));
    assert.deepEqual(plan.instances.map((i: { shard: number }) => i.shard), [1, 2, 3, 1, 2, 3, 1]);
    assert.deepEqual(platform.requests.map((r) => r.route), ["provision", "start", "batch"]);

    // Three machines: each its own data root, the shard told three ways.
    const shards: { home: string; args: string[]; env: Record<string, string> }[] = [
      { home: `${dir.path}/m1`, args: ["--shard", "1/3"], env: {} },
      { home: `${dir.path}/m2`, args: [], env: { REINS_SHARD: "2/3" } },
      { home: `${dir.path}/m3`, args: [], env: { JOB_COMPLETION_INDEX: "2" } },
    ];
    const children = shards.map((shard) =>
      spawnReins(["suite", "run", "suite.yaml", "--plan", "plan.json", "--json", ...shard.args], {
        home: shard.home,
        cwd: dir.path,
        allowRun,
        env: { ...env, ...shard.env },
      })
    );
    const outputs = await Promise.all(children.map((child) => child.output()));
    const runs = outputs.map((output) => JSON.parse(new TextDecoder().decode(output.stdout)));
    assert.deepEqual(
      runs.map((run) => run.scenarios.map((s: { key: string }) => s.key)),
      [["alpha", "delta", "eta"], ["beta", "epsilon"], ["gamma", "zeta"]],
    );
    assert.deepEqual(outputs.map((o) => o.code), [0, 0, 1]);
    assert.deepEqual(runs.map((run) => run.report.state), ["reported", "reported", "reported"]);

    // One provision, one start, one batch in all; every scenario's call got exactly one result.
    const routes = platform.requests.map((r) => r.route);
    for (const route of ["provision", "start", "batch"] as const) {
      assert.equal(routes.filter((r) => r === route).length, 1, route);
    }
    const calls = [...platform.calls.values()];
    assert.equal(calls.length, KEYS.length);
    assert.deepEqual(calls.map((call) => call.results.length), KEYS.map(() => 1));
    assert.deepEqual(
      calls.map((call) => call.results[0].call_metadata.harness_scenario).sort(),
      [...KEYS].sort(),
    );
    // Each result went into the call the plan allocated for its scenario.
    for (const instance of plan.instances) {
      assert.equal(
        platform.calls.get(instance.callExecutionId)!.results[0].call_metadata.harness_scenario,
        instance.key,
      );
    }
    const crashed = calls.find((call) =>
      call.results[0].call_metadata.harness_scenario === "gamma"
    )!;
    assert.equal(crashed.results[0].status, "failed");
    assert.match(crashed.results[0].error_message!, /^turn 1 failed: .*exited with code 7: boom/);

    // Merged: a suite run folder, and two data roots.
    const m1 = `${dir.path}/m1/suites/${runs[0].suiteRunId}`;
    const merged = await reins([
      "suite",
      "merge",
      m1,
      `${dir.path}/m2`,
      `${dir.path}/m3`,
      "--junit",
      `${dir.path}/merged.xml`,
    ], {
      home: `${dir.path}/planner`,
      cwd: dir.path,
    });
    assert.equal(merged.code, 1, merged.stderr);
    const single = await reins(["suite", "run", "suite.yaml", "--no-report", "--jobs", "3"], {
      home: `${dir.path}/single`,
      cwd: dir.path,
      allowRun,
    });
    assert.equal(single.code, 1, single.stderr);
    assert.deepEqual(comparable(merged.stdout), comparable(single.stdout));
    const xml = await Deno.readTextFile(`${dir.path}/merged.xml`);
    assert.match(xml, /<testsuite name="sharded" tests="7" failures="1" errors="1" skipped="0"/);

    // A missing shard is said, and fails the merge.
    const partial = await reins(["suite", "merge", `${dir.path}/m1`, `${dir.path}/m3`], {
      home: `${dir.path}/planner`,
      cwd: dir.path,
    });
    assert.equal(partial.code, 1);
    assert.match(partial.stderr, /shard 2\/3 missing: its scenarios are not in the table/);
  } finally {
    await platform.close();
  }
});
