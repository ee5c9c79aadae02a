// The replay of a harness run (issue 23): a 50-call Claude Code run (49 shell tool calls, then an
// answer) recorded through the gateway against the fake Anthropic server, then replayed from the
// recording with the server stopped (lib/turn/harness_replay.ts). The replay's time is held
// against the recorded run's own model-free parts — its wall time less the time its model calls
// took, as the gateway recorded them (durationMs) — so the goal says the replay waits on nothing
// but the harness. Each measured twice, alternately; the medians compared.
import { compare, figure } from "./_lib.ts";
import { inOrder, type Reply, text, toolCall } from "../../tests/fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../../tests/fixtures/fake_anthropic.ts";
import { ensureCli } from "../../tests/interop/_install.ts";
import { makeScratch } from "../../tests/interop/_scratch.ts";
import { testSettings } from "../../tests/drivers/_helpers.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/mod.ts";
import { replayHarnessRun } from "../../lib/turn/harness_replay.ts";
import { replayDirectory } from "../../lib/session/replay.ts";

const CALLS = 50;
const ROUNDS = 2;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

export default async function (): Promise<void> {
  const installed = await ensureCli("claude");
  if (installed.program === null) {
    figure("replay of a 50-call Claude Code run", `skipped: ${installed.skip}`);
    return;
  }
  const program = installed.program;
  const replies: Reply[] = [];
  for (let i = 1; i < CALLS; i++) {
    replies.push(toolCall("Bash", { command: `echo ${i} >> log.txt`, description: "log" }));
  }
  replies.push(text("Logged."));
  const never = new AbortController().signal;
  const recordedMs: number[] = [];
  const modelFreeMs: number[] = [];
  const replayMs: number[] = [];
  let calls = 0;
  for (let round = 0; round < ROUNDS; round++) {
    await using server = startFakeAnthropic(inOrder(...replies));
    await using scratch = await makeScratch("claude", server.url);
    const settings = {
      ...testSettings(scratch.root, {
        claude: { program, args: scratch.args, idleTimeoutSeconds: 120 },
      }),
      home: scratch.reinsHome,
    };
    using store = openStore(scratch.reinsHome);
    const start = performance.now();
    const outcome = await runTurn(store, settings, {
      agent: { kind: "harness", driver: "claude", idleTimeoutSeconds: null },
      prompt: "log the numbers",
      cwd: scratch.cwd,
      contextId: null,
      approval: "auto",
      budget: {},
      timeoutSeconds: 600,
      parentRunId: null,
      trigger: "api",
      env: scratch.env,
    }, { stop: never, kill: never });
    const wall = performance.now() - start;
    if (outcome.summary.status !== "completed") {
      throw new Error(`the recorded run ${outcome.summary.status}: ${outcome.summary.reason}`);
    }
    const events = store.readEvents(outcome.summary.runId).events;
    let modelMs = 0;
    calls = 0;
    for (const event of events) {
      if (event.type === "model.call.completed") modelMs += event.payload.durationMs;
      if (event.type === "model.call.started" && event.payload.generates) calls++;
    }
    recordedMs.push(wall);
    modelFreeMs.push(wall - modelMs);
    await server[Symbol.asyncDispose]();

    const record = store.resolveRun(outcome.summary.runId);
    const where = await replayDirectory(store, record);
    const replayStart = performance.now();
    const replayed = await replayHarnessRun(store, settings, record, {
      cwd: where.cwd,
      env: scratch.env,
      timeoutSeconds: 600,
      signals: { stop: never, kill: never },
      hooks: {},
    });
    replayMs.push(performance.now() - replayStart);
    if (replayed.verdict.diverged || replayed.summary.status !== "completed") {
      throw new Error(`the replay diverged: ${JSON.stringify(replayed.verdict.divergences[0])}`);
    }
  }
  figure(
    "the recorded Claude Code run",
    `${calls} model calls; ${median(recordedMs).toFixed(0)} ms in all, ${
      median(modelFreeMs).toFixed(0)
    } ms of it not in a model call (median of ${ROUNDS})`,
  );
  compare({
    name: `reins replay of a recorded ${calls}-call Claude Code run, offline`,
    ours: median(replayMs),
    baseline: median(modelFreeMs),
    unit: "ms",
    better: "lower",
    goal: "<= 1.2",
    baselineName: "the recorded run's model-free parts",
  });
}
