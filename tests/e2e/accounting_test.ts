// What reins says of a run's model calls and cost when it does not know them: a count nothing
// recorded is unknown (not 0), and a cost nothing priced is unknown, and said why, once.
import assert from "node:assert/strict";
import { startFakeChat } from "../fixtures/fake_chat.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { openStore } from "../../lib/store/store.ts";
import { reins, tempDir } from "../support/reins.ts";

/** A run as the codex driver records one: tokens, no cost, no count of model calls. */
function codexShapedRun(home: string, cwd: string): string {
  using store = openStore(home);
  const writer = store.createRun({
    sessionId: crypto.randomUUID(),
    contextId: null,
    nativeSessionId: null,
    parentRunId: null,
    resumedFromRunId: null,
    relation: null,
    harness: "codex",
    driver: "codex",
    trigger: "cli",
    cwd,
    goal: "fix it",
    resumeOf: null,
    agent: { provider: "openai", model: "gpt-5.5", inputExcludesCache: false },
  });
  try {
    writer.append({ type: "session.linked", payload: { nativeSessionId: "thread-1" } });
    writer.append({ type: "message.completed", payload: { role: "assistant", text: "done" } });
    writer.append({
      type: "usage.updated",
      payload: {
        inputTokens: 1200,
        outputTokens: 80,
        cacheReadTokens: null,
        cacheWriteTokens: null,
        reasoningTokens: null,
        costUsd: null,
        requests: null,
      },
    });
    writer.append({ type: "completed", payload: { reason: null, result: "done" } });
    return writer.runId;
  } finally {
    writer.close();
  }
}

// regression: Codex and Gemini CLI runs showed "0 model calls", and a model with no price a null
// cost that nothing explained.
Deno.test("reins show and stats say a Codex run's model calls are unknown, and why its cost is", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const runId = codexShapedRun(home, dir.path);
  const shown = await reins(["show", runId], { home, cwd: dir.path });
  assert.equal(shown.code, 0, shown.stderr);
  const footer = shown.stdout.trimEnd().split("\n").at(-1)!;
  assert.match(footer, /model calls unknown · 0 tool calls · 1,200 in \/ 80 out tokens/);
  assert.doesNotMatch(footer, /0 model calls/);
  assert.match(footer, /cost unknown \(no price for gpt-5\.5: add it under "prices"/);

  const json = await reins(["stats", runId, "--json"], { home, cwd: dir.path });
  const [stats] = JSON.parse(json.stdout).runs;
  assert.equal(stats.modelCalls, null);
  assert.equal(stats.modelCallsSource, null);
  assert.equal(stats.unpricedModel, "gpt-5.5");
  assert.equal(JSON.parse(json.stdout).total.modelCalls, null);

  const table = await reins(["stats", runId, runId], { home, cwd: dir.path });
  assert.match(table.stdout, new RegExp(`${runId}\\s+completed\\s+\\d+\\s+-\\s+0`));
  const notes = table.stderr.split("\n").filter((line) => line.includes("no price"));
  assert.deepEqual(notes, [
    'reins: the cost of 1 run is unknown: no price for gpt-5.5: add it under "prices" in the config file',
  ]);
});

Deno.test("a loop run on an unpriced OpenAI-compatible model counts its calls from its events and says its cost is unknown", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await using server = startFakeChat(inOrder(text("hello")));
  const run = await reins(
    ["run", "--model", "openai:house-model", "--base-url", `${server.url}/v1`, "--json", "hi"],
    { home, cwd: dir.path },
  );
  assert.equal(run.code, 0, run.stderr);
  const { runId } = JSON.parse(run.stdout);
  const json = await reins(["stats", runId, "--json"], { home, cwd: dir.path });
  const [stats] = JSON.parse(json.stdout).runs;
  assert.deepEqual(
    [stats.modelCalls, stats.modelCallsSource, stats.costUsd, stats.unpricedModel],
    [1, "events", null, "house-model"],
  );
  const shown = await reins(["show", runId], { home, cwd: dir.path });
  assert.match(shown.stdout, /1 model call · 0 tool calls · 40 in \/ 6 out tokens · cost unknown/);
});

Deno.test("a run of the mock model, which answers inside reins, has no cost to explain", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(
    `${dir.path}/script.json`,
    JSON.stringify([{ text: "hi", usage: { inputTokens: 3, outputTokens: 1 } }]),
  );
  const run = await reins(["run", "--model", "mock:script.json", "--json", "hi"], {
    home,
    cwd: dir.path,
  });
  const { runId } = JSON.parse(run.stdout);
  const shown = await reins(["show", runId], { home, cwd: dir.path });
  assert.doesNotMatch(shown.stdout, /cost unknown/);
  assert.match(shown.stdout, /1 model call · 0 tool calls · 3 in \/ 1 out tokens/);
});
