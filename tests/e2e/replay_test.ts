// `reins replay` end to end: a loop run recorded with a mock model and real tools in a temp
// working directory, replayed — reproducing it exactly, diverging when a file its tools read
// differs (replayed without its snapshot, in a changed copy), and running out of script when its
// recording was cut short. tests/e2e/replay_snapshot_test.ts has the snapshot's side.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

const SCRIPT = [
  { toolCalls: [{ id: "c1", name: "read_file", args: { path: "input.txt" } }] },
  {
    toolCalls: [
      { id: "c2", name: "run_command", args: { command: "wc -l < input.txt" } },
      { id: "c3", name: "write_file", args: { path: "out.txt", content: "counted\n" } },
    ],
    usage: { inputTokens: 50, outputTokens: 5 },
  },
  { toolCalls: [{ id: "c4", name: "read_file", args: { path: "out.txt" } }] },
  { text: "Counted the lines.", usage: { inputTokens: 80, outputTokens: 9 } },
];

interface Recording {
  home: string;
  cwd: string;
  runId: string;
}

/** Records a loop run of SCRIPT in a fresh working directory; disposed with its temp dirs. */
async function recordRun(): Promise<Recording & AsyncDisposable> {
  const home = await tempDir();
  const work = await tempDir("reins-replay-cwd-");
  const cwd = await Deno.realPath(work.path);
  Deno.writeTextFileSync(`${cwd}/input.txt`, "alpha\nbeta\n");
  Deno.writeTextFileSync(`${home.path}/script.json`, JSON.stringify(SCRIPT));
  const result = await reins(
    ["run", "--model", `mock:${home.path}/script.json`, "--json", "count the lines"],
    { home: home.path, cwd, allowRun: ["sh"] },
  );
  assert.equal(result.code, 0, result.stderr);
  return {
    home: home.path,
    cwd,
    runId: JSON.parse(result.stdout).runId,
    async [Symbol.asyncDispose]() {
      await home[Symbol.asyncDispose]();
      await work[Symbol.asyncDispose]();
    },
  };
}

async function show(home: string, runId: string) {
  const shown = await reins(["show", runId, "--json"], { home });
  assert.equal(shown.code, 0, shown.stderr);
  return JSON.parse(shown.stdout);
}

/** A replay's temp copy is kept for people to look at; the tests remove theirs. */
async function removeCopy(path: string) {
  if (path.includes("reins-replay-")) await Deno.remove(path, { recursive: true });
}

type Event = { type: string; payload: Record<string, unknown> };
const toolOutcomes = (events: Event[]) =>
  events.filter((event) => event.type === "tool.completed").map(({ payload }) => ({
    callId: payload.callId,
    ok: payload.ok,
    result: payload.result,
    error: payload.error,
  }));

Deno.test("reins replay RUN reproduces a recorded loop run exactly in its restored directory", async () => {
  await using recording = await recordRun();
  const { home, cwd, runId } = recording;
  const replay = await reins(["replay", runId, "--json"], { home, cwd, allowRun: ["sh"] });
  assert.equal(replay.code, 0, replay.stderr);
  const verdict = JSON.parse(replay.stdout);
  try {
    assert.deepEqual(verdict, {
      runId: verdict.runId,
      replayOf: runId,
      cwd: verdict.cwd,
      status: "completed",
      reason: null,
      diverged: false,
      divergences: [],
      modelOutputs: { recorded: 4, served: 4 },
      toolResults: { recorded: 4, replayed: 4, differing: 0 },
      interruptedCall: null,
    });
    assert.notEqual(verdict.cwd, cwd);
    // regression: the copy was made in /tmp, which the sandbox then had to grant whole.
    assert.ok(verdict.cwd.startsWith(`${Deno.realPathSync(home)}/tmp/replay-`), verdict.cwd);
    assert.equal(Deno.readTextFileSync(`${verdict.cwd}/out.txt`), "counted\n");
    assert.match(replay.stderr, new RegExp(`replaying run ${runId} \\(4 model outputs\\) in `));

    const original = await show(home, runId);
    const replayed = await show(home, verdict.runId);
    assert.deepEqual(
      {
        trigger: replayed.record.trigger,
        relation: replayed.record.relation,
        resumedFromRunId: replayed.record.resumedFromRunId,
        status: replayed.record.status,
        goal: replayed.record.goal,
        cwd: replayed.record.cwd,
      },
      {
        trigger: "replay",
        relation: "replay",
        resumedFromRunId: runId,
        status: "completed",
        goal: "count the lines",
        cwd: verdict.cwd,
      },
    );
    const types = (shown: { events: Event[] }) => shown.events.map((event) => event.type);
    assert.deepEqual(types(replayed), types(original));
    assert.deepEqual(toolOutcomes(replayed.events), toolOutcomes(original.events));
    const modelOutputs = (shown: { events: Event[] }) =>
      shown.events.filter((event) => event.type === "model.completed").map((e) => e.payload);
    assert.deepEqual(modelOutputs(replayed), modelOutputs(original));
    assert.deepEqual(replayed.events.at(-1).payload, original.events.at(-1).payload);
  } finally {
    await removeCopy(verdict.cwd);
  }
});

Deno.test("reins replay RUN says where it diverged when a file the tools read differs", async () => {
  await using recording = await recordRun();
  const { home, cwd, runId } = recording;
  // Without its snapshot the replay runs in a copy of the directory as it is now, which differs.
  Deno.removeSync(`${home}/snapshots/manifests/${runId}.json`);
  Deno.writeTextFileSync(`${cwd}/input.txt`, "alpha\nbeta\ngamma\n");
  const replay = await reins(["replay", runId], { home, cwd, allowRun: ["sh"] });
  const copy = /in (\S+), a copy of/.exec(replay.stderr)?.[1] ?? "";
  try {
    assert.equal(replay.code, 1, replay.stderr);
    const lines = replay.stdout.trimEnd().split("\n");
    assert.match(lines[0], new RegExp(`^replay \\S+ of ${runId}: completed$`));
    assert.deepEqual(lines.slice(1, 5), [
      "diverged at event 7: tool call c1 (read_file) returned another result than the recording's (event 7)",
      `  recorded: ok "alpha⏎beta⏎"`,
      `  replayed: ok "alpha⏎beta⏎gamma⏎"`,
      "4 of 4 model outputs served, 2 of 4 tool results matching; 1 more difference",
    ]);
    assert.match(lines[5], /^see: reins show \S+ --verbose$/);
  } finally {
    await removeCopy(copy);
  }
});

Deno.test("reins replay RUN says the script ran out when the recording was cut short", async () => {
  await using recording = await recordRun();
  const { home, cwd, runId } = recording;
  // Cut the log just before the last model answer: as if the recorder died there.
  const log = `${home}/runs/${runId}/events.jsonl`;
  const lines = Deno.readTextFileSync(log).split("\n").filter(Boolean);
  const last = lines.findLastIndex((line) => line.includes('"type":"model.completed"'));
  Deno.writeTextFileSync(log, lines.slice(0, last).map((line) => `${line}\n`).join(""));
  const replay = await reins(["replay", runId, "--json"], { home, cwd, allowRun: ["sh"] });
  const verdict = JSON.parse(replay.stdout);
  try {
    assert.equal(replay.code, 1, replay.stderr);
    assert.equal(verdict.status, "failed");
    assert.match(verdict.reason, /Cannot replay model call 4: run \S+ has only 3 recorded/);
    assert.deepEqual(verdict.divergences[0], {
      kind: "script-ran-out",
      sequence: verdict.divergences[0].sequence,
      modelCall: 4,
      recordedOutputs: 3,
    });
    const replayed = await show(home, verdict.runId);
    const asked = replayed.events.filter((event: Event) => event.type === "model.requested");
    assert.equal(verdict.divergences[0].sequence, asked[3].sequence);
  } finally {
    await removeCopy(verdict.cwd);
  }
});

Deno.test("reins replay RUN --cwd DIR replays in DIR itself", async () => {
  await using recording = await recordRun();
  const { home, cwd, runId } = recording;
  await using other = await tempDir("reins-replay-other-");
  const dir = await Deno.realPath(other.path);
  Deno.copyFileSync(`${cwd}/input.txt`, `${dir}/input.txt`);
  const replay = await reins(["replay", runId, "--cwd", dir], {
    home,
    cwd,
    allowRun: ["sh"],
    allowPaths: [dir],
  });
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(
    replay.stdout,
    /\nreproduced the recording: 4 of 4 model outputs served, 4 of 4 tool/,
  );
  assert.equal(Deno.readTextFileSync(`${dir}/out.txt`), "counted\n");
  assert.ok(!replay.stderr.includes("a copy of"), replay.stderr);
});

Deno.test("reins replay refuses a run of another driver than the loop", async () => {
  await using home = await tempDir();
  const result = await reins(
    ["run", "--driver", "command", "--exec", "sh -c 'echo hi'", "--json", "say hi"],
    { home: home.path, allowRun: ["sh"] },
  );
  const { runId } = JSON.parse(result.stdout);
  const replay = await reins(["replay", runId], { home: home.path });
  assert.equal(replay.code, 2);
  assert.match(
    replay.stderr,
    /Cannot replay run \S+: it ran the command driver, not the built-in loop/,
  );
});

Deno.test("reins replay of a resumed turn gives the model the turns before it, as recorded", async () => {
  await using home = await tempDir();
  await using work = await tempDir("reins-replay-cwd-");
  Deno.writeTextFileSync(`${work.path}/a.txt`, "alpha\n");
  Deno.writeTextFileSync(`${home.path}/one.json`, JSON.stringify([{ text: "hello" }]));
  Deno.writeTextFileSync(
    `${home.path}/two.json`,
    JSON.stringify([{ toolCalls: [{ id: "l1", name: "list_files", args: {} }] }, { text: "done" }]),
  );
  const turn = async (prompt: string, script: string) => {
    const result = await reins(
      ["run", "--context", "c", "--model", `mock:${home.path}/${script}`, "--json", prompt],
      { home: home.path, cwd: work.path },
    );
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout).runId as string;
  };
  await turn("say hello", "one.json");
  const second = await turn("list the files", "two.json");
  const replayed = await reins(["replay", second, "--json"], { home: home.path, cwd: work.path });
  assert.equal(replayed.code, 0, replayed.stderr);
  const verdict = JSON.parse(replayed.stdout);
  assert.equal(verdict.diverged, false);
  const lengths = async (run: string) => {
    const shown = JSON.parse((await reins(["show", run, "--json"], { home: home.path })).stdout);
    return shown.events.filter((e: { type: string }) => e.type === "model.requested")
      .map((e: { payload: { historyLength: number } }) => e.payload.historyLength);
  };
  assert.deepEqual(await lengths(verdict.runId), await lengths(second));
});

// regression: a loop run its budget ended was replayed without the budget, so the replay asked
// the model past the limit and diverged there ("the script ran out").
Deno.test("reins replay of a run its --max-turns ended applies the same budget and reproduces it", async () => {
  await using home = await tempDir();
  await using work = await tempDir("reins-replay-cwd-");
  const cwd = await Deno.realPath(work.path);
  Deno.writeTextFileSync(`${cwd}/input.txt`, "alpha\nbeta\n");
  Deno.writeTextFileSync(`${home.path}/script.json`, JSON.stringify(SCRIPT));
  const recorded = await reins(
    ["run", "--model", `mock:${home.path}/script.json`, "--max-turns", "2", "--json", "count"],
    { home: home.path, cwd, allowRun: ["sh"] },
  );
  assert.equal(recorded.code, 1, recorded.stderr);
  const summary = JSON.parse(recorded.stdout);
  assert.equal(summary.reason, "budget exhausted: --max-turns 2 (2 of 2 model calls)");
  const replayed = await reins(["replay", summary.runId, "--json"], {
    home: home.path,
    cwd,
    allowRun: ["sh"],
  });
  assert.equal(replayed.code, 0, replayed.stdout + replayed.stderr);
  const verdict = JSON.parse(replayed.stdout);
  assert.deepEqual(
    [verdict.status, verdict.reason, verdict.diverged, verdict.modelOutputs],
    ["failed", summary.reason, false, { recorded: 2, served: 2 }],
  );
  await removeCopy(verdict.cwd);
});
