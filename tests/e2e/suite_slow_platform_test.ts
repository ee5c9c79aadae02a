// A suite run against a platform that is slow to answer (the Python stub, holding its answers):
// no scenario waits for it — every scenario ends while the platform still holds the first request
// — and a crash while the deliveries are behind loses no result: --resume sends what the report
// lacks. Skipped, loudly, without python3.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";
import { hasPython, startPythonPlatform, type StubLog } from "../fixtures/python_platform.ts";

const PYTHON = hasPython();
if (!PYTHON) console.error("SKIPPED: the slow platform's tests need python3");

const AGENT = '#!/bin/sh\nprompt=$(cat)\necho "answer to $prompt"\n';
const KEYS = ["a", "b", "c"];

async function suiteIn(dir: string): Promise<string> {
  const agent = `${dir}/agent.sh`;
  await Deno.writeTextFile(agent, AGENT);
  await Deno.chmod(agent, 0o755);
  await Deno.writeTextFile(
    `${dir}/suite.yaml`,
    [
      "suite: slow-platform",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      ...KEYS.map((key) => `  - {key: ${key}, turns: [${key}], checks: [{regex: 'answer to'}]}`),
    ].join("\n"),
  );
  return agent;
}

/** Reads a child's stderr as it comes; `until` waits for a line, up to a minute. */
function follow(stream: ReadableStream<Uint8Array>) {
  let text = "";
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  return {
    get text() {
      return text;
    },
    done,
    async until(what: string, test: (text: string) => boolean): Promise<void> {
      const deadline = Date.now() + 60_000;
      while (!test(text)) {
        if (Date.now() > deadline) throw new Error(`${what} never came; stderr: ${text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

const ended = (text: string) => (text.match(/\] passed {2}/g) ?? []).length;

function resultsOf(log: StubLog): string[] {
  return Object.values(log.calls).flatMap((call) =>
    call.result
      ? [String((call.result.call_metadata as { harness_scenario: string }).harness_scenario)]
      : []
  ).sort();
}

Deno.test({
  name:
    "regression: reins suite run's scenarios never wait for the platform: all end while it holds the provision",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await using platform = await startPythonPlatform();
    const agent = await suiteIn(dir.path);
    await platform.hold("provision");
    const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
      home: `${dir.path}/home`,
      cwd: dir.path,
      allowRun: [agent],
      env: platform.env,
    });
    const stderr = follow(child.stderr);
    // Before, the first scenario started only once provision, start and batch were answered,
    // and each ONGOING ping and result waited for the delivery in progress.
    await stderr.until("the end of every scenario", (text) => ended(text) === KEYS.length);
    const log = await platform.log();
    assert.deepEqual(log.requests.map((r) => [r.route, r.held ?? false]), [["provision", true]]);
    await platform.release();
    const status = await child.status;
    await stderr.done;
    await child.stdout.cancel();
    assert.equal(status.code, 0, stderr.text);
    assert.match(stderr.text, /reported to the platform: /);
    const after = await platform.log();
    assert.deepEqual(after.requests.slice(0, 3).map((r) => r.route), [
      "provision",
      "start",
      "batch",
    ]);
    assert.deepEqual(resultsOf(after), KEYS);
  },
});

Deno.test({
  name:
    "regression: kill -9 while the platform is behind loses no result: --resume sends the results the report lacks",
  ignore: !PYTHON,
  async fn() {
    await using dir = await tempDir();
    await using platform = await startPythonPlatform();
    const agent = await suiteIn(dir.path);
    const home = `${dir.path}/home`;
    // The first ONGOING ping is applied and its answer held: the deliveries stop there.
    await platform.hold("status");
    const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
      home,
      cwd: dir.path,
      allowRun: [agent],
      env: platform.env,
    });
    const stderr = follow(child.stderr);
    await stderr.until("the end of every scenario", (text) => ended(text) === KEYS.length);
    // Killed while the platform holds the ping (not in the middle of the batch, whose answer a
    // kill would lose: the resume then allocates the calls again, as with any report).
    const deadline = Date.now() + 60_000;
    while (!(await platform.log()).requests.some((r) => r.route === "status" && r.held)) {
      if (Date.now() > deadline) throw new Error("the ONGOING ping never came");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGKILL");
    await child.status;
    await stderr.done;
    await child.stdout.cancel();
    await platform.release();
    assert.deepEqual(resultsOf(await platform.log()), [], "no result was sent before the kill");

    // Every scenario finished: the resume plays none, and reports what the outbox lacks.
    const resumed = await reins(["suite", "run", "suite.yaml", "--resume", "--json"], {
      home,
      cwd: dir.path,
      allowRun: [agent],
      env: platform.env,
    });
    assert.equal(resumed.code, 0, resumed.stderr);
    const run = JSON.parse(resumed.stdout);
    assert.equal(run.report.state, "reported", resumed.stderr);
    const log = await platform.log();
    assert.deepEqual(resultsOf(log), KEYS);
    assert.equal(Object.keys(log.executions).length, 1);
    assert.deepEqual(
      Object.values(log.calls).map((call) => call.result_patches),
      KEYS.map(() => 1),
    );
  },
});
