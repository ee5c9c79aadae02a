// `reins suite run` reporting to the strict fake platform, under the binary's sandbox: provision,
// start and batch first, ONGOING as each scenario starts, one result each as it finishes, none of
// it on the scenarios' path (a platform that holds its answers holds no scenario); a re-run of the suite joins the remembered test; a platform outage or refusal never
// changes the exit code; kill -9 mid-suite and --resume go on with the same execution.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";
import { type FakePlatform, startFakePlatform } from "../fixtures/fake_platform.ts";
import { listEntryIds } from "../../lib/platform/outbox.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const EXAMPLE_DIR = new URL("../../examples/suite/", import.meta.url).pathname;
const SHOP_AGENT = `${EXAMPLE_DIR}agents/shop.sh`;

function envFor(platform: { url: string; apiKey: string; secretKey: string }, extra = {}) {
  return {
    HARNESS_PLATFORM_URL: platform.url,
    HARNESS_PLATFORM_API_KEY: platform.apiKey,
    HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
    ...extra,
  };
}

function routes(platform: FakePlatform): string[] {
  return platform.requests.map((r) => `${r.route}${r.replayed ? " (replayed)" : ""}`);
}

/** Each call's requests in order: `status`, `result`. */
function byCall(platform: FakePlatform): Map<string, string[]> {
  const calls = new Map<string, string[]>();
  for (const request of platform.requests) {
    if (request.route !== "status" && request.route !== "result") continue;
    calls.set(request.id!, [...(calls.get(request.id!) ?? []), request.route]);
  }
  return calls;
}

Deno.test("reins suite run reports as it goes: provision, start and batch first, then ONGOING and one result per scenario", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  let batchedMs = 0;
  const platform = startFakePlatform({
    afterHandle: (seen) => {
      if (seen.route === "batch") batchedMs = Date.now();
    },
  });
  try {
    const result = await reins(["suite", "run", "suite.yaml", "--json"], {
      home,
      cwd: EXAMPLE_DIR,
      allowRun: [SHOP_AGENT, "sh"],
      env: envFor(platform, { ALK_HARNESS_JOB_ID: "job-42" }),
    });
    assert.equal(result.code, 0, result.stderr);
    const run = JSON.parse(result.stdout);
    assert.equal(run.report.state, "reported");
    assert.match(run.report.url, /^\/dashboard\/simulate\/test\/[^/]+\/[^/]+$/);

    const sequence = routes(platform);
    assert.deepEqual(sequence.slice(0, 3), ["provision", "start", "batch"]);
    assert.equal(
      sequence.filter((r) => r === "provision" || r === "start" || r === "batch").length,
      3,
    );
    // The execution was made first; the scenarios did not wait for it (they never wait for the
    // platform: see the slow platform's test below).
    assert.ok(batchedMs > 0);
    // Every call: its ONGOING ping, then exactly one result.
    const calls = byCall(platform);
    assert.equal(calls.size, 4);
    for (const steps of calls.values()) assert.deepEqual(steps, ["status", "result"]);

    const [provision, start] = platform.requests;
    const body = provision.body as { name: string; personas: Record<string, unknown>[] };
    assert.equal(body.name, "checkout-support");
    assert.deepEqual(body.personas[0], {
      name: "Dana",
      scenario_key: "refund-late-order",
      scenario_name: "Refund for a late order",
      role: "customer",
      situation: "Your order 1234 is ten days late and you want your money back.",
      outcome: "The agent refunds order 1234 and says when the money arrives.",
      persona: { name: "Dana", role: "customer", mood: "impatient" },
    });
    assert.deepEqual((start.body as { harness_job_id: string }).harness_job_id, "job-42");

    const results = [...platform.calls.values()].map((call) => call.results[0]);
    const refund = results.find((r) => r.call_metadata.harness_scenario === "refund-late-order")!;
    assert.equal(refund.status, "completed");
    assert.equal(refund.call_summary, "refund-late-order: passed (8/8)");
    assert.equal(refund.call_metadata.harness_met, 8);
    assert.equal(refund.call_metadata.harness_spent_usd, 0.006);
    const judged = refund.call_metadata.harness_evaluations.filter((e) => e.name === "resolution");
    assert.deepEqual(judged.map((e) => e.kind), ["judge", "metric"]);
    assert.equal(
      "decided_by" in judged[0] && judged[0].decided_by,
      "resolution (mock:resolution.json)",
    );
    assert.equal("score" in judged[1] && judged[1].score, 0.9);
    assert.deepEqual(
      refund.transcript.map((row) => row.speaker_role),
      ["user", "assistant", "user", "tool_calls", "tool_call_result", "assistant"],
    );
    using root = new DataRoot(home);
    assert.deepEqual(listEntryIds(root), [], "the outbox is empty once all is acknowledged");

    // The same suite again joins the remembered test with a new execution.
    const again = await reins(["suite", "run", "suite.yaml", "--json", "--filter", "refund-*"], {
      home,
      cwd: EXAMPLE_DIR,
      allowRun: [SHOP_AGENT, "sh"],
      env: envFor(platform),
    });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(platform.tests.size, 1);
    assert.equal(platform.executions.size, 2);
    assert.equal(JSON.parse(again.stdout).report.runTestId, run.report.runTestId);
  } finally {
    await platform.close();
  }
});

Deno.test("reins suite run keeps its exit code when the platform refuses or cannot be reached, and says so", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const platform = startFakePlatform();
  try {
    const refused = await reins(["suite", "run", "suite.yaml", "--filter", "no-refund-*"], {
      home,
      cwd: EXAMPLE_DIR,
      allowRun: [SHOP_AGENT, "sh"],
      env: envFor(platform, { HARNESS_PLATFORM_SECRET_KEY: "wrong" }),
    });
    assert.equal(refused.code, 0, refused.stderr);
    assert.match(
      refused.stderr,
      /the platform refused the suite's report: POST \/run-tests\/provision\/ failed \(401\)/,
    );
    assert.match(refused.stderr, /the exit code does not count it/);

    // A platform that is down: a port this test holds, whose every connection is dropped at
    // once. (A closed server's port could be taken by another test meanwhile.)
    const dropping = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    (async () => {
      for await (const conn of dropping) conn.close();
    })().catch(() => {});
    const downUrl = `http://127.0.0.1:${(dropping.addr as Deno.NetAddr).port}`;
    const down = await reins(["suite", "run", "suite.yaml", "--filter", "no-refund-*,refund-*"], {
      home,
      cwd: EXAMPLE_DIR,
      allowRun: [SHOP_AGENT, "sh"],
      env: envFor({ ...platform, url: downUrl }),
    });
    dropping.close();
    assert.equal(down.code, 0, down.stderr);
    assert.match(
      down.stderr,
      /the suite run finished, but reporting it to the platform did not: .*could not be sent/,
    );
    assert.match(down.stderr, /reins report --pending sends it/);
  } finally {
    await platform.close();
  }
});

Deno.test("reins suite run --resume after kill -9 reports into the same execution: one provision, one result per scenario", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const agent = `${dir.path}/agent.sh`;
  await Deno.writeTextFile(
    agent,
    `#!/bin/sh\nprompt=$(cat)\necho $$ > ${dir.path}/pid-$prompt\nwhile [ -f ${dir.path}/hold-$prompt ]; do sleep 0.05; done\necho "answer to $prompt"\n`,
  );
  await Deno.chmod(agent, 0o755);
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: resumable",
      "driver: command",
      `exec: ${agent}`,
      "scenarios:",
      ...["a", "b", "c"].map((key) =>
        `  - {key: ${key}, turns: [${key}], checks: [{regex: 'answer to ${key}'}]}`
      ),
    ].join("\n"),
  );
  await Deno.writeTextFile(`${dir.path}/hold-b`, "");
  const platform = startFakePlatform();
  try {
    const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
      home,
      cwd: dir.path,
      allowRun: [agent, "sh"],
      env: envFor(platform),
    });
    const started = () => {
      try {
        return Deno.statSync(`${dir.path}/pid-b`).isFile;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 30_000;
    // b's agent runs and its ONGOING ping is in.
    const ongoing = () => [...platform.calls.values()].some((call) => call.status === "ongoing");
    while (!started() || !ongoing()) {
      if (Date.now() > deadline) throw new Error("b never started");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGKILL");
    await child.status;
    await child.stdout.cancel();
    await child.stderr.cancel();
    try {
      Deno.kill(Number(Deno.readTextFileSync(`${dir.path}/pid-b`).trim()), "SIGKILL");
    } catch { /* gone */ }
    await Deno.remove(`${dir.path}/hold-b`);
    using root = new DataRoot(home);
    assert.equal(listEntryIds(root).length, 1, "the open report stays in the outbox");

    const resumed = await reins(["suite", "run", "suite.yaml", "--resume", "--json"], {
      home,
      cwd: dir.path,
      allowRun: [agent, "sh"],
      env: envFor(platform),
    });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).report.state, "reported");
    assert.equal(platform.tests.size, 1);
    assert.equal(platform.executions.size, 1);
    assert.equal(routes(platform).filter((r) => r === "batch").length, 1);
    const results = [...platform.calls.values()].map((call) => call.results.length);
    assert.deepEqual(results, [1, 1, 1]);
    assert.deepEqual(
      [...platform.calls.values()].map((call) => call.results[0].call_metadata.harness_scenario),
      ["a", "b", "c"],
    );
  } finally {
    await platform.close();
  }
});

Deno.test("reins suite run uploads the files a scenario's turns attached as its call's recordings, as a voice suite", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const agent = `${dir.path}/agent.sh`;
  await Deno.writeTextFile(
    agent,
    [
      "#!/bin/sh",
      "cat > /dev/null",
      "printf 'RIFF-fake-audio-%s' \"$REINS_RUN_ID\" > call.wav",
      `echo '{"type":"attachment.added","payload":{"path":"call.wav"}}'`,
      "echo 'spoken answer'",
    ].join("\n"),
  );
  await Deno.chmod(agent, 0o755);
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: spoken",
      "modality: voice",
      "driver: command",
      `exec: ${agent}`,
      "scenarios:",
      "  - {key: call, turns: [hello], checks: [{regex: spoken}]}",
    ].join("\n"),
  );
  const platform = startFakePlatform();
  try {
    const result = await reins(["suite", "run", "suite.yaml", "--json"], {
      home,
      cwd: dir.path,
      allowRun: [agent, "sh"],
      env: envFor(platform),
    });
    assert.equal(result.code, 0, result.stderr);
    const run = JSON.parse(result.stdout);
    assert.equal(run.report.state, "reported");
    assert.equal((platform.requests[0].body as { modality: string }).modality, "voice");
    const [call] = [...platform.calls.values()];
    assert.equal(call.results.length, 1);
    const runId = run.scenarios[0].runIds[0];
    const expected = new TextEncoder().encode(`RIFF-fake-audio-${runId}`);
    const sha256 = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", expected)))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    assert.deepEqual(
      call.recordings.map((r) => ({ filename: r.filename, bytes: r.bytes, sha256: r.sha256 })),
      [{ filename: "call.wav", bytes: expected.length, sha256 }],
    );
    assert.deepEqual(
      platform.requests.map((r) => r.route),
      ["provision", "start", "batch", "status", "result", "recording"],
    );
  } finally {
    await platform.close();
  }
});

Deno.test("regression: a judge that cannot grade counts nowhere, alike in the table, JUnit and the platform's result (1/1, not 1/2)", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const agent = `${dir.path}/agent.sh`;
  await Deno.writeTextFile(agent, "#!/bin/sh\ncat > /dev/null\necho 'refunded 1234'\n");
  await Deno.chmod(agent, 0o755);
  await Deno.writeTextFile(`${dir.path}/judge.json`, '[{"text": "I would rather not say."}]');
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: grading",
      "driver: command",
      `exec: ${agent}`,
      "scenarios:",
      "  - key: refund",
      "    turns: [refund please]",
      "    checks:",
      "      - {name: refunded, regex: '1234'}",
      "      - {name: resolution, judge: {model: 'mock:judge.json', rubric: Refunded?}, pass: 0.5}",
    ].join("\n"),
  );
  const platform = startFakePlatform();
  try {
    const result = await reins(["suite", "run", "suite.yaml", "--junit", "junit.xml"], {
      home,
      cwd: dir.path,
      allowRun: [agent],
      env: envFor(platform),
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^refund\s+passed\s+1\/1\s/m);
    assert.match(result.stderr, /1 judge could not grade \(grading_error\)/);
    const junit = await Deno.readTextFile(`${dir.path}/junit.xml`);
    assert.match(junit, /<testsuite name="grading" tests="1" failures="0" errors="0"/);
    const [call] = [...platform.calls.values()];
    const [body] = call.results;
    assert.equal(body.call_summary, "refund: passed (1/1)");
    assert.equal(body.call_metadata.harness_met, 1);
    assert.equal(body.call_metadata.harness_of, 1);
    assert.equal(body.call_metadata.harness_failure_classification, "grading_failure");
    const judged = body.call_metadata.harness_evaluations.find((e) => e.name === "resolution");
    assert.ok(judged && "grading_error" in judged && judged.grading_error === true);
  } finally {
    await platform.close();
  }
});
