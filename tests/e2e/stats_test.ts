// `reins stats` end to end: a family of loop runs (a parent, its children and a grandchild) made
// with `reins run --parent`, summed per run, per family and over the data root.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

const SCRIPT = [
  {
    toolCalls: [{ id: "c1", name: "list_files", args: {} }],
    usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 40, costUsd: 0.001 },
  },
  { text: "done", usage: { inputTokens: 120, outputTokens: 20, costUsd: 0.002 } },
];

async function loopRun(home: string, parent?: string): Promise<string> {
  const args = ["run", "--model", `mock:${home}/script.json`, "--json", "count"];
  if (parent) args.push("--parent", parent);
  const result = await reins(args, { home, allowRun: ["sh"] });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).runId;
}

Deno.test("reins stats RUN --family sums the run's parent, children and grandchildren", async () => {
  await using home = await tempDir();
  Deno.writeTextFileSync(`${home.path}/script.json`, JSON.stringify(SCRIPT));
  const parent = await loopRun(home.path);
  const child = await loopRun(home.path, parent);
  const grandchild = await loopRun(home.path, child);
  const second = await loopRun(home.path, parent);
  const stranger = await loopRun(home.path);

  const json = await reins(["stats", second, "--family", "--json"], { home: home.path });
  assert.equal(json.code, 0, json.stderr);
  const body = JSON.parse(json.stdout);
  const family = [parent, child, grandchild, second];
  assert.deepEqual(body.runs.map((run: { runId: string }) => run.runId), family);
  const perRun = body.runs[0];
  assert.deepEqual(
    {
      modelCalls: perRun.modelCalls,
      toolCalls: perRun.toolCalls,
      iterations: perRun.iterations,
      inputTokens: perRun.inputTokens,
      outputTokens: perRun.outputTokens,
      cacheReadTokens: perRun.cacheReadTokens,
      costUsd: perRun.costUsd,
    },
    {
      modelCalls: 2,
      toolCalls: 1,
      iterations: 2,
      inputTokens: 220,
      outputTokens: 30,
      cacheReadTokens: 40,
      costUsd: 0.003,
    },
  );
  const events = body.runs.reduce((sum: number, run: { events: number }) => sum + run.events, 0);
  const duration = body.runs.reduce(
    (sum: number, run: { durationMs: number }) => sum + run.durationMs,
    0,
  );
  const expectedTotal = {
    runs: 4,
    events,
    modelCalls: 8,
    toolCalls: 4,
    failedToolCalls: 0,
    iterations: 8,
    inputTokens: 880,
    outputTokens: 120,
    cacheReadTokens: 160,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    costUsd: 0.012,
    durationMs: duration,
  };
  assert.deepEqual(body.total, expectedTotal);
  assert.deepEqual(body.families, [{ rootRunId: parent, runIds: family, total: expectedTotal }]);

  const table = await reins(["stats", grandchild, "--family"], { home: home.path });
  assert.equal(table.code, 0, table.stderr);
  const labels = table.stdout.trimEnd().split("\n").map((line) =>
    /^\s*\S+(?: \S+)*/.exec(line)![0]
  );
  assert.deepEqual(labels, [
    "run",
    parent,
    `  ${child}`,
    `    ${grandchild}`,
    `  ${second}`,
    labels[5],
    `family of ${parent} (4 runs)`,
  ]);
  assert.match(labels[5], /^─+$/);
  assert.match(table.stdout, /\(4 runs\)\s+\S+\s+8\s+4\s+8\s+880\s+120\s+160\s+0\s+\$0\.0120\s/);

  const all = await reins(["stats", "--json"], { home: home.path });
  const everything = JSON.parse(all.stdout);
  assert.equal(everything.total.runs, 5);
  assert.equal(everything.total.inputTokens, 1100);
  assert.equal(everything.runs[0].runId, stranger, "newest first");

  // regression: --family without RUN counted only the last run's family, though the help says
  // every run: now every family, each once, newest first.
  const families = await reins(["stats", "--family", "--json"], { home: home.path });
  assert.equal(families.code, 0, families.stderr);
  const byFamily = JSON.parse(families.stdout);
  assert.deepEqual(
    byFamily.families.map((f: { rootRunId: string; runIds: string[] }) => [f.rootRunId, f.runIds]),
    [[stranger, [stranger]], [parent, family]],
  );
  assert.equal(byFamily.total.runs, 5);
  assert.equal(byFamily.total.inputTokens, 1100);
});

Deno.test("reins stats RUN RUN counts each run once and prints a total", async () => {
  await using home = await tempDir();
  Deno.writeTextFileSync(`${home.path}/script.json`, JSON.stringify(SCRIPT));
  const first = await loopRun(home.path);
  const second = await loopRun(home.path);
  const result = await reins(["stats", first, second, first.slice(0, 20)], { home: home.path });
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 5);
  assert.ok(lines[1].startsWith(`${first}  completed`), lines[1]);
  assert.ok(lines[2].startsWith(`${second}  completed`), lines[2]);
  assert.match(lines[4], /^total \(2 runs\)\s+\d+\s+4\s+2\s+4\s+440\s+60\s+80\s+0\s+\$0\.0060\s/);
});

Deno.test("reins stats --context ID sums a context's turns, oldest first, and no other run", async () => {
  await using home = await tempDir();
  Deno.writeTextFileSync(`${home.path}/script.json`, JSON.stringify(SCRIPT));
  const turn = async (context: string) => {
    const args = ["run", "--model", `mock:${home.path}/script.json`, "--json", "--context"];
    const result = await reins([...args, context, "count"], { home: home.path, allowRun: ["sh"] });
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout).runId as string;
  };
  const first = await turn("talk");
  await loopRun(home.path);
  const second = await turn("talk");
  await turn("other");
  const third = await turn("talk");

  const json = await reins(["stats", "--context", "talk", "--json"], { home: home.path });
  assert.equal(json.code, 0, json.stderr);
  const body = JSON.parse(json.stdout);
  assert.deepEqual(body.runs.map((run: { runId: string }) => run.runId), [first, second, third]);
  assert.deepEqual(body.context.runIds, [first, second, third]);
  assert.deepEqual(
    [body.total.runs, body.total.modelCalls, body.total.toolCalls, body.total.inputTokens],
    [3, 6, 3, 660],
  );
  assert.equal(body.total.costUsd, 0.009);
  const durations = body.runs.reduce((s: number, r: { durationMs: number }) => s + r.durationMs, 0);
  assert.equal(body.total.durationMs, durations);
  assert.deepEqual(body.context.total, body.total);

  const table = await reins(["stats", "--context", "talk"], { home: home.path });
  assert.equal(table.code, 0, table.stderr);
  assert.match(
    table.stdout.trimEnd().split("\n").at(-1)!,
    /^context talk \(3 turns\)\s+\d+\s+6\s+3\s+6\s+660\s+90\s+120\s+0\s+\$0\.0090\s/,
  );

  const none = await reins(["stats", "--context", "nobody"], { home: home.path });
  assert.equal(none.code, 3);
  assert.match(none.stderr, /No runs on context "nobody"/);
  const mixed = await reins(["stats", first, "--context", "talk"], { home: home.path });
  assert.equal(mixed.code, 2);
  assert.match(mixed.stderr, /--context takes no RUN and does not go with --family/);
});
