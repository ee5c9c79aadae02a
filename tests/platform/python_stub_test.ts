// `reins report` against the ingestion API served by Python's own http.server (what Django's
// development server builds on): the wire as the seed's client sends it, the mapping of run
// outcomes, and reports that are never duplicated — report twice, --again, a cut-short report
// under another name, and real SIGKILLs of a real reins between the platform accepting a step
// and the outbox letting go of it.
import assert from "node:assert/strict";
import { listEntryIds } from "../../lib/platform/outbox.ts";
import {
  hasPython,
  type PythonPlatform,
  startPythonPlatform,
  type StubLog,
} from "../fixtures/python_platform.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const PYTHON = hasPython();
if (!PYTHON) {
  console.warn(
    "SKIPPED tests/platform/python_stub_test.ts: python3 is not on PATH, so the platform's wire " +
      "cannot be checked against Python's http.server",
  );
}

const PREFIX = "/simulate/api/alk-simulate/";

interface World {
  home: string;
  root: DataRoot;
  work: string;
  dir: string;
  platform: PythonPlatform;
  /** `reins ARGS` with the platform's settings (and `env`). */
  reins(args: string[], env?: Record<string, string>): ReturnType<typeof reins>;
  /** A settled run made by `reins run` in the work directory; its id. */
  run(args: string[]): Promise<string>;
}

function stubTest(name: string, fn: (w: World) => Promise<void>) {
  Deno.test({
    name,
    ignore: !PYTHON,
    async fn() {
      await using dir = await tempDir();
      const home = `${dir.path}/home`;
      using root = new DataRoot(home);
      const work = `${dir.path}/work`;
      await Deno.mkdir(work);
      await Deno.writeTextFile(`${work}/notes.txt`, "Buy milk.\nCall the plumber.\n");
      await using platform = await startPythonPlatform();
      const run = (args: string[], env: Record<string, string> = {}) =>
        // Attachments lie beside the working directory; command agents run through sh.
        reins(args, {
          home,
          cwd: work,
          env: { ...platform.env, ...env },
          allowPaths: [dir.path],
          allowRun: ["sh"],
        });
      await fn({
        home,
        root,
        work,
        dir: dir.path,
        platform,
        reins: run,
        async run(args) {
          const result = await run(["run", "--json", ...args]);
          const parsed = JSON.parse(result.stdout || "{}");
          assert.ok(parsed.runId, `reins run ${args.join(" ")}: ${result.stderr}`);
          return parsed.runId;
        },
      });
    },
  });
}

/** The calls that hold a result, with the run each is for. */
function resultsOf(log: StubLog) {
  return Object.values(log.calls).filter((call) => call.result !== null).map((call) => ({
    call: call.id,
    runId: (call.result!.call_metadata as Record<string, unknown>).reins_run_id,
    patches: call.result_patches,
  }));
}

function routes(log: StubLog, from = 0): string[] {
  return log.requests.slice(from).map((request) => `${request.route} ${request.status}`);
}

async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const value = await fn();
    if (value !== null && value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// regression: to a loopback platform reins wrote `POST http://127.0.0.1:PORT/simulate/… HTTP/1.1`
// (the "tcp" transport's absolute form), which this server routes to 404, and then reins
// blamed HARNESS_PLATFORM_URL
stubTest(
  "reins report sends the seed's request sequence in origin form to Python's http.server",
  async (w) => {
    const wav = `${w.dir}/call.wav`;
    await Deno.writeFile(wav, new Uint8Array(6000).fill(3));
    const runId = await w.run(["--attach", wav, "summarise the notes"]);
    const result = await w.reins(["report", runId]);
    assert.equal(result.code, 0, result.stderr);
    const log = await w.platform.log();
    // The seed's report() of one finished scenario with audio: provision, start, batch, result,
    // recording — no ONGOING ping, which it sends only when a scenario starts.
    assert.deepEqual(routes(log), [
      "provision 201",
      "start 201",
      "batch 201",
      "result 200",
      "recording 201",
    ]);
    for (const request of log.requests) {
      assert.ok(request.target.startsWith(PREFIX), request.request_line);
      assert.match(
        request.request_line,
        /^(POST|PATCH) \/simulate\/api\/alk-simulate\/.+\/ HTTP\/1\.1$/,
      );
      assert.equal(request.headers["x-api-key"], "stub-key");
      assert.equal(request.headers["x-secret-key"], "stub-secret");
      assert.ok(request.headers["content-length"], `${request.route} carries a Content-Length`);
      assert.equal(request.headers["transfer-encoding"], undefined);
    }
    const [provision, , , patch] = log.requests;
    assert.equal(provision.body!.modality, "voice", "a run with audio is a voice call");
    // The digest was recomputed by Python's json.dumps and accepted (200 above).
    const body = patch.body!;
    assert.equal(body.status, "completed");
    assert.match(String(body.call_summary), /^summarise-the-notes-[0-9a-f]{8}: passed \(0\/0\)$/);
    const [call] = Object.values(log.calls);
    assert.deepEqual(call.recordings.map((r) => [r.filename, r.bytes]), [["call.wav", 6000]]);
    assert.match(
      result.stdout,
      /^reported to the platform: \/dashboard\/simulate\/test\/[^/]+\/[^/]+\n$/,
    );
  },
);

stubTest(
  "reins report reaches Python's http.server on loopback directly while a proxy is set",
  async (w) => {
    const runId = await w.run(["summarise the notes"]);
    const proxy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    // What it was asked (other tests running in parallel may stumble on its port).
    const asked: string[] = [];
    (async () => {
      for await (const conn of proxy) {
        const buffer = new Uint8Array(4096);
        const got = await conn.read(buffer).catch(() => null);
        asked.push(new TextDecoder().decode(buffer.subarray(0, got ?? 0)).split("\r\n")[0]);
        conn.close();
      }
    })().catch(() => {});
    try {
      const url = `http://127.0.0.1:${(proxy.addr as Deno.NetAddr).port}`;
      const result = await w.reins(["report", runId, "--modality", "text"], {
        HTTP_PROXY: url,
        http_proxy: url,
        ALL_PROXY: url,
      });
      assert.equal(result.code, 0, result.stderr);
      const log = await w.platform.log();
      assert.deepEqual(routes(log), ["provision 201", "start 201", "batch 201", "result 200"]);
      assert.ok(log.requests.every((request) => request.target.startsWith(PREFIX)));
      assert.equal(log.requests[0].body!.modality, "text");
      const host = new URL(w.platform.url).host;
      assert.deepEqual(asked.filter((line) => line.includes(host)), []);
    } finally {
      proxy.close();
    }
  },
);

// regression: a run whose harness failed arrived as `completed`, its reason only in ended_reason
stubTest(
  "reins report sends a run that failed as status failed with its error_message",
  async (w) => {
    const runId = await w.run([
      "--driver",
      "command",
      "--exec",
      "sh -c 'echo trying; exit 3'",
      "go",
    ]);
    const result = await w.reins(["report", runId, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const [call] = Object.values((await w.platform.log()).calls);
    const body = call.result!;
    assert.equal(body.status, "failed");
    assert.match(String(body.error_message), /^the run failed: .*3/);
    assert.match(String(body.call_summary), /: error \(0\/0\)$/);
    assert.equal((body.call_metadata as Record<string, unknown>).harness_passed, false);
  },
);

// regression: reporting a run again provisioned, started and sent it a second time
stubTest(
  "reins report of a run already reported says where it went and sends nothing",
  async (w) => {
    const runId = await w.run(["summarise the notes"]);
    const first = await w.reins(["report", runId]);
    assert.equal(first.code, 0, first.stderr);
    const url = /reported to the platform: (\S+)/.exec(first.stdout)![1];
    const sent = (await w.platform.log()).requests.length;

    const second = await w.reins(["report", runId]);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, `already reported to the platform: ${url}\n`);
    assert.match(second.stderr, /--again reports it as a new execution/);
    const log = await w.platform.log();
    assert.equal(log.requests.length, sent, "nothing was sent the second time");
    assert.deepEqual(resultsOf(log).map((r) => r.runId), [runId]);

    const json = JSON.parse((await w.reins(["report", runId, "--json"])).stdout);
    assert.deepEqual(json.reports, []);
    assert.deepEqual(
      json.alreadyReported.map((a: { runId: string; url: string }) => [a.runId, a.url]),
      [
        [runId, url],
      ],
    );
  },
);

stubTest(
  "reins report --again reports a run as a new execution of the test it went to",
  async (w) => {
    const runId = await w.run(["summarise the notes"]);
    assert.equal((await w.reins(["report", runId, "--name", "nightly"])).code, 0);
    const again = await w.reins(["report", runId, "--again"]);
    assert.equal(again.code, 0, again.stderr);
    const log = await w.platform.log();
    assert.deepEqual(routes(log), [
      "provision 201",
      "start 201",
      "batch 201",
      "result 200",
      "start 201",
      "batch 201",
      "result 200",
    ]);
    assert.equal(Object.keys(log.tests).length, 1);
    assert.equal(Object.keys(log.executions).length, 2);
    assert.deepEqual(resultsOf(log).map((r) => r.runId), [runId, runId]);
  },
);

stubTest(
  "reins report --name B refuses a run whose report as A was cut short, and finishes A without it",
  async (w) => {
    const runId = await w.run(["summarise the notes"]);
    await w.platform.hold("provision");
    const child = spawnReins(["report", runId, "--name", "A"], {
      home: w.home,
      cwd: w.work,
      env: w.platform.env,
    });
    await waitFor(
      "the held provision",
      async () => (await w.platform.log()).requests.find((r) => r.held),
    );
    child.kill("SIGKILL");
    await child.status;
    await w.platform.release();

    const renamed = await w.reins(["report", runId, "--name", "B"]);
    assert.equal(renamed.code, 2);
    assert.match(
      renamed.stderr,
      new RegExp(`^reins: Cannot report run ${runId} as "B": its report as "A" is not finished`),
    );
    assert.match(renamed.stderr, /hint: reins report .* finishes it as "A"/);
    const sent = (await w.platform.log()).requests.length;
    assert.equal(sent, 1, "nothing was sent for B");

    const resumed = await w.reins(["report", runId]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /^resuming the report as "A" in outbox\//);
    const log = await w.platform.log();
    // The held provision was applied before the kill, and its answer never arrived: a platform
    // that ignores Idempotency-Key has the orphan test, and no duplicate result anywhere.
    assert.deepEqual(Object.values(log.tests).map((t) => t.body.name), ["A", "A"]);
    assert.deepEqual(resultsOf(log).map((r) => r.runId), [runId]);
    assert.deepEqual(listEntryIds(w.root), []);
  },
);

for (const held of ["result", "recording"] as const) {
  stubTest(
    `SIGKILL of reins report while the platform holds its accepted ${held} leaves one result`,
    async (w) => {
      const wav = `${w.dir}/call.wav`;
      await Deno.writeFile(wav, new Uint8Array(4000).fill(1));
      const runId = await w.run(["--attach", wav, "summarise the notes"]);
      await w.platform.hold(held);
      const child = spawnReins(["report", runId], {
        home: w.home,
        cwd: w.work,
        env: w.platform.env,
      });
      await waitFor(
        `the held ${held}`,
        async () => (await w.platform.log()).requests.find((r) => r.held && r.route === held),
      );
      child.kill("SIGKILL");
      assert.equal((await child.status).signal, "SIGKILL");
      await w.platform.release();
      assert.equal(listEntryIds(w.root).length, 1, "the report is still in the outbox");

      const resumed = await w.reins(["report", runId]);
      assert.equal(resumed.code, 0, resumed.stderr);
      const log = await w.platform.log();
      assert.equal(Object.keys(log.tests).length, 1);
      assert.equal(Object.keys(log.executions).length, 1);
      const results = resultsOf(log);
      assert.deepEqual(results.map((r) => r.runId), [runId]);
      // The result held unanswered is sent again, to the same call; one saved is not.
      assert.equal(results[0].patches, held === "result" ? 2 : 1);
      assert.deepEqual(log.calls[results[0].call].recordings.map((r) => r.bytes), [4000]);
      assert.deepEqual(listEntryIds(w.root), []);

      const third = await w.reins(["report", runId]);
      assert.equal(third.code, 0, third.stderr);
      assert.match(third.stdout, /^already reported to the platform: /);
      assert.equal((await w.platform.log()).requests.length, log.requests.length);
    },
  );
}

// regression: a report whose recording the platform refused printed "reported to the platform:
// URL" on stdout (and exited 5), as if all of it had arrived
stubTest(
  "reins report whose recording is refused says partly reported, keeps the result, exits 5",
  async (w) => {
    const wav = `${w.dir}/call.wav`;
    await Deno.writeFile(wav, new Uint8Array(3000).fill(7));
    const runId = await w.run(["--attach", wav, "summarise the notes"]);
    await w.platform.fail("recording", 400, 1);
    const result = await w.reins(["report", runId]);
    assert.equal(result.code, 5, result.stderr);
    assert.match(result.stdout, /^partly reported: \/dashboard\/simulate\/test\/[^/]+\/[^/]+\n$/);
    assert.doesNotMatch(result.stdout + result.stderr, /reported to the platform/);
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.match(
      lines[0],
      new RegExp(`^partly reported: recording call\\.wav of run ${runId} not sent: .*400`),
    );
    const log = await w.platform.log();
    assert.deepEqual(routes(log).slice(-2), ["result 200", "recording 400"]);
    assert.deepEqual(resultsOf(log).map((r) => r.runId), [runId], "the result was accepted");
  },
);
