// Reports from the outbox to the strict fake platform: the full sequence, outages, refusals,
// resumption, joining a remembered test, changed recordings.
import assert from "node:assert/strict";
import { PlatformClient, platformTarget } from "../../lib/platform/client.ts";
import { deliverEntry, deliverPending, PLATFORM_RETRY } from "../../lib/platform/deliver.ts";
import {
  createReport,
  type NewReport,
  scenarioFinished,
  scenarioStarted,
  updateReport,
} from "../../lib/platform/report_entry.ts";
import { listEntryIds, lockEntry, readEntry } from "../../lib/platform/outbox.ts";
import { personaOf, selectorOf } from "../../lib/platform/payloads.ts";
import { readReported } from "../../lib/platform/reported.ts";
import type { RetryPolicy } from "../../lib/net/retry.ts";
import { type RunReport, runReportOf } from "../../lib/platform/run_outcome.ts";
import { type FakePlatformOptions, startFakePlatform } from "../fixtures/fake_platform.ts";
import { tempDir } from "../support/reins.ts";
import { makeRun, type RunSpec } from "./_runs.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const FAST: RetryPolicy = { attempts: 4, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 2000 };

interface World {
  home: string;
  root: DataRoot;
  dir: string;
  platform: ReturnType<typeof startFakePlatform>;
  client: PlatformClient;
  target: NewReport["target"];
  report(specs: RunSpec[], name?: string): Promise<{ id: string; runs: RunReport[] }>;
}

async function world(
  fn: (w: World) => Promise<void>,
  options: FakePlatformOptions = {},
  extra: { jobId?: string } = {},
): Promise<void> {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using root = new DataRoot(home);
  const platform = startFakePlatform(options);
  const target = platformTarget({
    url: platform.url,
    apiKey: platform.apiKey,
    secretKey: platform.secretKey,
    workspaceId: null,
    jobId: extra.jobId ?? null,
    allowHttp: false,
  });
  const client = new PlatformClient(target);
  try {
    await fn({
      home,
      root,
      dir: dir.path,
      platform,
      client,
      target,
      async report(specs, name = "nightly") {
        const runs: RunReport[] = [];
        for (const spec of specs) {
          const { record, events } = await makeRun(home, spec);
          runs.push(runReportOf(record, events, { runDir: root.layout.run(record.id) }));
        }
        return { id: createReport(root, { name, scenarios: runs, target }).id, runs };
      },
    });
  } finally {
    client.close();
    await platform.close();
  }
}

const route = (platform: World["platform"]) =>
  platform.requests.map((r) => `${r.route}${r.replayed ? " (replayed)" : ""} ${r.status}`);

// regression: a finished run's result came right after an ONGOING ping the seed sends only when a
// scenario starts, and a run with an audio recording was provisioned as a text call
Deno.test("deliverEntry() walks provision, start, batch, result and recording field for field", async () => {
  await world(async ({ home, root, dir, platform, client, report }) => {
    const wav = `${dir}/call.wav`;
    await Deno.writeFile(wav, new Uint8Array(2048).fill(5));
    const { id, runs } = await report([{ attach: [wav] }, { goal: "Write the changelog" }]);
    const read = readEntry(root, id);
    assert.ok(read?.ok);
    const { entry } = read;
    const outcome = await deliverEntry(root, id, client, { retry: FAST });

    assert.deepEqual(route(platform), [
      "provision 201",
      "start 201",
      "batch 201",
      "result 200",
      "recording 201",
      "result 200",
    ]);
    const [provision, start, batch, result] = platform.requests;
    assert.deepEqual(provision.body, {
      name: "nightly",
      agent_name: "nightly",
      personas: runs.map((run) => personaOf(run.scenario)),
      modality: "voice",
    });
    const test = [...platform.tests.values()][0];
    assert.deepEqual(start.body, {
      scenario_ids: test.scenarioIds,
      scenario_selectors: runs.map((run) => selectorOf(run.scenario)),
    });
    assert.deepEqual(batch.body, { count: 2 });
    assert.deepEqual(result.body, entry.calls[0].result);
    for (const request of platform.requests) {
      assert.ok(request.idempotencyKey, `${request.route} carries an Idempotency-Key`);
    }
    // Per call, not per body: the same run reported --again into another call is not a replay.
    assert.deepEqual(result.idempotencyKey, `reins-${id}-result-${result.id}`);

    const execution = [...platform.executions.values()][0];
    assert.deepEqual(outcome, {
      id,
      name: "nightly",
      state: "reported",
      runIds: runs.map((run) => run.runId),
      runTestId: test.id,
      testExecutionId: execution.id,
      url: `/dashboard/simulate/test/${test.id}/${execution.id}`,
      calls: Object.fromEntries(runs.map((run, i) => [run.runId, execution.callIds[i]])),
      problems: [],
      reason: null,
      hint: null,
    });
    const [first, second] = execution.callIds.map((callId) => platform.calls.get(callId)!);
    assert.deepEqual(first.status, "completed");
    assert.deepEqual(first.recordings.map((r) => [r.filename, r.bytes]), [["call.wav", 2048]]);
    assert.deepEqual(second.recordings, []);
    assert.deepEqual(listEntryIds(root), []);

    const remembered = readReported(root);
    assert.deepEqual(remembered.tests.map((t) => [t.name, t.run_test_id, t.test_execution_id]), [
      ["nightly", test.id, execution.id],
    ]);
    assert.deepEqual(remembered.runs[runs[0].runId][0].call_execution_id, execution.callIds[0]);
    assert.deepEqual((await Deno.stat(`${home}/platform.json`)).mode! & 0o777, 0o600);
  });
});

Deno.test("deliverEntry() sends the harness job id and the seed's start body when one is set", async () => {
  await world(
    async ({ root, platform, client, report }) => {
      const { id } = await report([{}]);
      await deliverEntry(root, id, client, { retry: FAST });
      const start = platform.requests.find((r) => r.route === "start")!;
      assert.deepEqual(Object.keys(start.body as object), [
        "scenario_ids",
        "harness_job_id",
        "scenario_selectors",
      ]);
      assert.deepEqual((start.body as { harness_job_id: string }).harness_job_id, "job-42");
    },
    {},
    { jobId: "job-42" },
  );
});

Deno.test("createReport() writes the whole report to the outbox (0600) before the first request", async () => {
  let seenAtFirstRequest: string[] | null = null;
  let home = "";
  await world(async (w) => {
    home = w.home;
    const { id } = await w.report([{}, {}]);
    await deliverEntry(w.root, id, w.client, { retry: FAST });
    assert.deepEqual(seenAtFirstRequest, [`${id}.json`, "0600", "2 calls", "pending"]);
  }, {
    intercept: () => {
      if (seenAtFirstRequest !== null) return;
      const names = [...Deno.readDirSync(`${home}/outbox`)].map((e) => e.name).filter((n) =>
        n.endsWith(".json")
      );
      const entry = JSON.parse(Deno.readTextFileSync(`${home}/outbox/${names[0]}`));
      seenAtFirstRequest = [
        names[0],
        (Deno.statSync(`${home}/outbox/${names[0]}`).mode! & 0o777).toString(8).padStart(4, "0"),
        `${entry.calls.length} calls`,
        entry.state,
      ];
    },
  });
});

Deno.test("deliverEntry() reports once when the platform answers 503 to the first calls", async () => {
  await world(async ({ root, platform, client, report }) => {
    platform.failNext("provision", 2, 503);
    platform.failNext("result", 3, 503, { "Retry-After": "0" });
    const { id, runs } = await report([{}]);
    const outcome = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(outcome.state, "reported");
    assert.deepEqual(platform.resultsByRun().get(runs[0].runId)!.length, 1);
    assert.deepEqual(platform.tests.size, 1);
    assert.deepEqual(route(platform).filter((r) => r.startsWith("result")), [
      "result 503",
      "result 503",
      "result 503",
      "result 200",
    ]);
  });
});

Deno.test("deliverEntry() keeps a report pending through an outage and resumes after its last acknowledged step", async () => {
  await world(async ({ root, platform, client, report }) => {
    platform.failNext("result", 8, 502);
    const { id, runs } = await report([{}, {}]);
    const first = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(first.state, "pending");
    assert.match(first.reason!, /failed \(502\)/);
    const read = readEntry(root, id);
    assert.ok(read?.ok);
    assert.deepEqual(
      [read.entry.attempts, read.entry.allocated, read.entry.calls.map((c) => c.resultSent)],
      [1, true, [false, false]],
    );
    const second = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(second.state, "pending");
    const third = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(third.state, "reported");
    assert.deepEqual(
      route(platform).filter((r) => !r.startsWith("result") && !r.startsWith("status")),
      ["provision 201", "start 201", "batch 201"],
    );
    for (const run of runs) assert.deepEqual(platform.resultsByRun().get(run.runId)!.length, 1);
  });
});

Deno.test("deliverEntry() stops a report the platform refuses and deliverPending() does not retry it", async () => {
  await world(async ({ root, platform, client, report }) => {
    platform.failNext("start", 1, 400);
    const { id } = await report([{}]);
    const outcome = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(outcome.state, "refused");
    assert.match(outcome.reason!, /^POST \/run-tests\/[^/]+\/test-executions\/ failed \(400\)/);
    const before = platform.requests.length;
    const again = await deliverPending(root, client, { retry: FAST });
    assert.deepEqual(again.map((o) => o.state), ["refused"]);
    assert.deepEqual(platform.requests.length, before);
    const retried = await deliverPending(root, client, { retry: FAST, retryRefused: true });
    assert.deepEqual(retried.map((o) => o.state), ["reported"]);
    assert.deepEqual(platform.tests.size, 1, "the acknowledged provision was not repeated");
  });
});

Deno.test("createReport() joins the test remembered under the same name with a new execution", async () => {
  await world(async ({ root, platform, client, report }) => {
    const a = await report([{ goal: "Deploy" }]);
    const first = await deliverEntry(root, a.id, client, { retry: FAST });
    const b = await report([{ goal: "Deploy" }]);
    const second = await deliverEntry(root, b.id, client, { retry: FAST });
    assert.deepEqual(platform.tests.size, 1);
    assert.deepEqual(second.runTestId, first.runTestId);
    assert.notDeepEqual(second.testExecutionId, first.testExecutionId);
    assert.deepEqual(platform.requests.filter((r) => r.route === "provision").length, 1);
  });
});

Deno.test("createReport() provisions a new test when the remembered one lacks a scenario", async () => {
  await world(async ({ root, platform, client, report }) => {
    const a = await report([{ goal: "Deploy" }]);
    const first = await deliverEntry(root, a.id, client, { retry: FAST });
    const b = await report([{ goal: "Roll back" }]);
    const second = await deliverEntry(root, b.id, client, { retry: FAST });
    assert.deepEqual(second.state, "reported");
    assert.notDeepEqual(second.runTestId, first.runTestId);
    assert.deepEqual(platform.tests.size, 2);
  });
});

Deno.test("deliverEntry() provisions again when the remembered test is gone (404)", async () => {
  await world(async ({ root, platform, client, report }) => {
    const a = await report([{ goal: "Deploy" }]);
    const first = await deliverEntry(root, a.id, client, { retry: FAST });
    platform.tests.delete(first.runTestId!);
    const b = await report([{ goal: "Deploy" }]);
    const second = await deliverEntry(root, b.id, client, { retry: FAST });
    assert.deepEqual(second.state, "reported");
    assert.notDeepEqual(second.runTestId, first.runTestId);
    assert.deepEqual(readReported(root).tests.map((t) => t.run_test_id), [second.runTestId]);
  });
});

Deno.test("deliverEntry() reports the result but not a recording that changed after it was attached", async () => {
  await world(async ({ root, dir, platform, client, report }) => {
    const wav = `${dir}/call.wav`;
    await Deno.writeFile(wav, new Uint8Array(4096).fill(1));
    const { id, runs } = await report([{ attach: [wav] }]);
    const copy = runs[0].recordings[0].path;
    await Deno.writeFile(copy, new Uint8Array(4096).fill(2));
    const outcome = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(outcome.state, "reported");
    assert.deepEqual(outcome.problems.length, 1);
    assert.match(
      outcome.problems[0],
      /^recording call\.wav of run .+ not sent: Cannot send the recording "call\.wav": its sha256 is/,
    );
    assert.deepEqual(platform.resultsByRun().get(runs[0].runId)!.length, 1);
    const [call] = platform.calls.values();
    assert.deepEqual(call.recordings, []);
  });
});

Deno.test("deliverEntry() leaves alone a report meant for another platform", async () => {
  await world(async ({ root, platform, report }) => {
    const { id } = await report([{}]);
    const other = startFakePlatform();
    const client = new PlatformClient(platformTarget({
      url: other.url,
      apiKey: other.apiKey,
      secretKey: other.secretKey,
      workspaceId: null,
      jobId: null,
      allowHttp: false,
    }));
    try {
      const outcome = await deliverEntry(root, id, client, { retry: FAST });
      assert.deepEqual(outcome.state, "pending");
      assert.match(outcome.reason!, new RegExp(`it is for ${platform.url}`));
      assert.deepEqual(other.requests.length, 0);
    } finally {
      client.close();
      await other.close();
    }
  });
});

Deno.test("deliverEntry() does not touch a report another process is sending", async () => {
  await world(async ({ root, platform, client, report }) => {
    const { id } = await report([{}]);
    using _held = lockEntry(root, id)!;
    const outcome = await deliverEntry(root, id, client, { retry: FAST });
    assert.deepEqual(outcome.state, "busy");
    assert.deepEqual(platform.requests.length, 0);
  });
});

Deno.test("a live report pings each scenario as it starts and sends its result as it finishes", async () => {
  await world(async ({ home, root, platform, client, target }) => {
    const made = await makeRun(home, { goal: "Deploy" });
    const run = runReportOf(made.record, made.events, {
      runDir: root.layout.run(made.record.id),
    });
    const entry = createReport(root, {
      name: "suite",
      target,
      live: true,
      modality: "text",
      scenarios: [
        { runId: null, scenario: { name: "deploy" }, outcome: null, recordings: [] },
        { runId: null, scenario: { name: "rollback" }, outcome: null, recordings: [] },
      ],
    });
    const begun = await deliverEntry(root, entry.id, client, { retry: FAST });
    assert.deepEqual(begun.state, "open");
    assert.deepEqual(begun.reason, "2 of 2 scenarios have not finished yet");
    assert.deepEqual(route(platform), ["provision 201", "start 201", "batch 201"]);

    await updateReport(root, entry.id, scenarioStarted("deploy", made.record.id));
    assert.deepEqual((await deliverEntry(root, entry.id, client, { retry: FAST })).state, "open");
    await updateReport(root, entry.id, scenarioFinished("deploy", run));
    await deliverEntry(root, entry.id, client, { retry: FAST });
    assert.deepEqual(route(platform).slice(3), ["status 200", "result 200"]);

    await updateReport(root, entry.id, scenarioStarted("rollback", "run-2"));
    await updateReport(root, entry.id, scenarioFinished("rollback", { ...run, runId: "run-2" }));
    const done = await deliverEntry(root, entry.id, client, { retry: FAST });
    assert.deepEqual(done.state, "reported");
    assert.deepEqual(route(platform).slice(5), ["status 200", "result 200"]);
    assert.deepEqual(done.runIds, [made.record.id, "run-2"]);
    const results = [...platform.calls.values()].map((call) => call.results[0]?.call_metadata);
    assert.deepEqual(results.map((m) => m?.harness_scenario), ["deploy", "rollback"]);
    assert.deepEqual(listEntryIds(root), []);
    await assert.rejects(
      () => updateReport(root, entry.id, scenarioStarted("deploy", "x")),
      /not in the outbox/,
    );
  });
});

// regression: docs/platform.md said "retried five times" where the policy makes five tries in all
// (four retries); the count is pinned here with the default policy and the doc's words with it
Deno.test("deliverEntry() tries a failing call five times in all, as docs/platform.md says", async () => {
  await world(async ({ root, platform, client, report }) => {
    platform.failNext("provision", 10, 503, { "Retry-After": "0" });
    const { id } = await report([{}]);
    const outcome = await deliverEntry(root, id, client);
    assert.deepEqual(outcome.state, "pending");
    assert.deepEqual(route(platform), Array(5).fill("provision 503"));
    assert.deepEqual(PLATFORM_RETRY.attempts, 5);
    const doc = await Deno.readTextFile(new URL("../../docs/platform.md", import.meta.url));
    assert.match(
      doc.replaceAll("\n", " "),
      /tried five times in all \(the first try and four retries\)/,
    );
  });
});
