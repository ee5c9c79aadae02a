// `reins report` as a person runs it: main.ts in a subprocess under the binary's sandbox, against
// the fake platform on loopback.
import assert from "node:assert/strict";
import { pendingReports } from "../../lib/platform/pending.ts";
import { readReported } from "../../lib/platform/reported.ts";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { reins, tempDir } from "../support/reins.ts";
import { makeRun } from "./_runs.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

function envFor(
  platform: ReturnType<typeof startFakePlatform>,
  extra: Record<string, string> = {},
) {
  return {
    HARNESS_PLATFORM_URL: platform.url,
    HARNESS_PLATFORM_API_KEY: platform.apiKey,
    HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
    ...extra,
  };
}

function deadPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("reins report RUN prints the dashboard path and remembers where it went", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const platform = startFakePlatform();
  try {
    const { record } = await makeRun(dir.path);
    const result = await reins(["report", record.id.slice(0, 13)], {
      home: dir.path,
      env: envFor(platform),
    });
    const [test] = platform.tests.values();
    const [execution] = platform.executions.values();
    assert.deepEqual(result, {
      code: 0,
      stdout: `reported to the platform: /dashboard/simulate/test/${test.id}/${execution.id}\n`,
      stderr: "",
    });
    assert.deepEqual(
      test.body.name,
      "Claude Code · " + new Date(record.startedAt).toUTCString()
        .replace(/^\w+, (\d+) (\w+) (\d+) (\d+:\d+):\d+ GMT$/, "$1 $2 $3 $4 UTC"),
    );
    const remembered = readReported(root);
    assert.deepEqual(remembered.runs[record.id].map((c) => c.call_execution_id), execution.callIds);
    assert.deepEqual((await Deno.stat(`${dir.path}/platform.json`)).mode! & 0o777, 0o600);
  } finally {
    await platform.close();
  }
});

Deno.test("reins report --name NAME --json prints the ids and joins the same test the next time", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform();
  try {
    const first = await makeRun(dir.path);
    const second = await makeRun(dir.path);
    const env = envFor(platform);
    const one = await reins(["report", first.record.id, "--name", "nightly", "--json"], {
      home: dir.path,
      env,
    });
    const two = await reins(["report", second.record.id, "--name", "nightly", "--json"], {
      home: dir.path,
      env,
    });
    assert.deepEqual([one.code, two.code], [0, 0]);
    const a = JSON.parse(one.stdout).reports[0];
    const b = JSON.parse(two.stdout).reports[0];
    assert.deepEqual([a.state, a.name, b.state, b.name], [
      "reported",
      "nightly",
      "reported",
      "nightly",
    ]);
    assert.deepEqual(b.runTestId, a.runTestId);
    assert.notDeepEqual(b.testExecutionId, a.testExecutionId);
    assert.deepEqual(Object.keys(a.calls), [first.record.id]);
    assert.deepEqual(platform.tests.size, 1);
  } finally {
    await platform.close();
  }
});

Deno.test("reins report answered 401 says so, leaves the run untouched and retries nothing", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const platform = startFakePlatform();
  try {
    const { record } = await makeRun(dir.path);
    const runFiles = `${dir.path}/runs/${record.id}`;
    const before = [
      await Deno.readTextFile(`${runFiles}/run.json`),
      await Deno.readTextFile(`${runFiles}/events.jsonl`),
    ];
    const env = envFor(platform, { HARNESS_PLATFORM_SECRET_KEY: "wrong" });
    const result = await reins(["report", record.id], { home: dir.path, env });
    assert.deepEqual(result.code, 5);
    assert.deepEqual(result.stdout, "");
    assert.match(
      result.stderr,
      /^the platform refused the report \(1 run\): POST \/run-tests\/provision\/ failed \(401\): \{"detail":"Invalid API key or secret\."\}\nhint: check HARNESS_PLATFORM_API_KEY/,
    );
    assert.deepEqual(platform.requests.length, 1);
    const pending = await reins(["report", "--pending"], { home: dir.path, env });
    assert.deepEqual(pending.code, 5);
    assert.deepEqual(platform.requests.length, 1, "--pending does not retry a refused report");
    assert.deepEqual([
      await Deno.readTextFile(`${runFiles}/run.json`),
      await Deno.readTextFile(`${runFiles}/events.jsonl`),
    ], before);
    assert.deepEqual(pendingReports(root).refused.map((r) => r.runIds), [[record.id]]);

    // Once the keys are right, reporting the run again sends that same report.
    const fixed = await reins(["report", record.id], { home: dir.path, env: envFor(platform) });
    assert.deepEqual(fixed.code, 0);
    assert.match(fixed.stderr, /^resuming the report as "Claude Code · .*" in outbox\//);
    assert.deepEqual(platform.resultsByRun().get(record.id)!.length, 1);
    assert.deepEqual(pendingReports(root), { pending: [], refused: [], unreadable: [] });
  } finally {
    await platform.close();
  }
});

Deno.test("reins report keeps a report for an unreachable platform and --pending sends it later", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const { record } = await makeRun(dir.path);
  const port = deadPort();
  const down = await reins(["report", record.id], {
    home: dir.path,
    env: {
      HARNESS_PLATFORM_URL: `http://127.0.0.1:${port}`,
      HARNESS_PLATFORM_API_KEY: "test-key",
      HARNESS_PLATFORM_SECRET_KEY: "test-secret",
    },
  });
  assert.deepEqual(down.code, 5);
  assert.match(
    down.stderr,
    /not reported yet \(1 run\): POST \/run-tests\/provision\/ could not be sent/,
  );
  assert.match(down.stderr, /reins report --pending sends it/);
  const [waiting] = pendingReports(root).pending;
  assert.deepEqual(waiting.runIds, [record.id]);

  // The platform comes up on the same address.
  const platform = startFakePlatform({ port });
  try {
    const later = await reins(["report", "--pending", "--json"], {
      home: dir.path,
      env: envFor(platform),
    });
    assert.deepEqual(later.code, 0, later.stderr);
    assert.deepEqual(JSON.parse(later.stdout).reports.map((r: { state: string }) => r.state), [
      "reported",
    ]);
    assert.deepEqual(platform.resultsByRun().get(record.id)!.length, 1);
  } finally {
    await platform.close();
  }
});

Deno.test("reins report reaches a loopback platform whatever HTTP_PROXY says", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform();
  try {
    const wav = `${dir.path}/call.wav`;
    await Deno.writeFile(wav, new Uint8Array(10_000).fill(4));
    const { record } = await makeRun(`${dir.path}/home`, { attach: [wav] });
    const proxy = `http://127.0.0.1:${deadPort()}`;
    const result = await reins(["report", record.id], {
      home: `${dir.path}/home`,
      env: envFor(platform, {
        HTTP_PROXY: proxy,
        http_proxy: proxy,
        HTTPS_PROXY: proxy,
        ALL_PROXY: proxy,
      }),
    });
    assert.deepEqual(result.code, 0, result.stderr);
    const [call] = platform.calls.values();
    assert.deepEqual(call.recordings.map((r) => r.bytes), [10_000]);
  } finally {
    await platform.close();
  }
});

Deno.test("reins report refuses what it cannot send before touching anything", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const { record } = await makeRun(dir.path);
  const running = await makeRun(dir.path, { outcome: "running" });
  const keys = { HARNESS_PLATFORM_API_KEY: "k", HARNESS_PLATFORM_SECRET_KEY: "s" };
  // A run still going is refused as such (reconciliation settles one whose owner is gone, so
  // this one is kept alive by holding its ownership, its directory's lock, before any other reins
  // command runs).
  const owner = Deno.openSync(`${dir.path}/runs/${running.record.id}`, { read: true });
  owner.lockSync(true);
  try {
    const result = await reins(["report", running.record.id], {
      home: dir.path,
      env: { ...keys, HARNESS_PLATFORM_URL: "http://127.0.0.1:9" },
    });
    assert.deepEqual(result.code, 1);
    assert.match(result.stderr, /Cannot report run .+ yet: it is running/);
  } finally {
    owner.close();
  }
  const cases: [string[], Record<string, string>, number, RegExp][] = [
    [["report"], keys, 2, /^reins: reins report needs a run/],
    [
      ["report", record.id],
      {},
      2,
      /^reins: Cannot report to the platform: HARNESS_PLATFORM_URL, HARNESS_PLATFORM_API_KEY, HARNESS_PLATFORM_SECRET_KEY not set\nhint: /,
    ],
    [
      ["report", record.id],
      { ...keys, HARNESS_PLATFORM_URL: "http://platform.example.com" },
      2,
      /^reins: Refusing to send the platform keys in clear text to platform\.example\.com/,
    ],
    [
      ["report", "nope"],
      { ...keys, HARNESS_PLATFORM_URL: "http://127.0.0.1:9" },
      3,
      /^reins: No run matches "nope"/,
    ],
    [
      ["--json", "report", "--pending", "--name", "x"],
      keys,
      2,
      /--name is about the runs given, and no run was given/,
    ],
    [["report", record.id, "--modality", "video"], keys, 2, /--modality takes text or voice/],
    [["report", "--pending", "--again"], keys, 2, /--again is about the runs given/],
  ];
  for (const [args, env, code, message] of cases) {
    const result = await reins(args, { home: dir.path, env });
    assert.deepEqual(result.code, code, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message, args.join(" "));
  }
  assert.deepEqual(pendingReports(root), { pending: [], refused: [], unreadable: [] });
});
