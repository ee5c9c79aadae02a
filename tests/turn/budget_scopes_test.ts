// A budget over a context's turns (the sum, this one included), held by the turn engine for the
// built-in loop as for every driver: real runs of the loop's mock model in a temp store.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn, type TurnRequest } from "../../lib/turn/mod.ts";
import { spentIn } from "../../lib/turn/gateway_use.ts";

Deno.test("runTurn() with a context budget counts the context's earlier turns and refuses past it", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-scopes-" }));
  try {
    const script = `${dir}/script.json`;
    // Each turn: a tool call, then an answer (two model calls).
    await Deno.writeTextFile(
      script,
      JSON.stringify([
        { toolCalls: [{ id: "a", name: "list_files" }] },
        { text: "first done" },
        { toolCalls: [{ id: "b", name: "list_files" }] },
        { text: "second done" },
      ]),
    );
    using store = openStore(`${dir}/home`);
    const settings = loadSettings({
      REINS_HOME: `${dir}/home`,
      HOME: dir,
      REINS_CONFIG: `${dir}/none.json`,
    });
    const request = (prompt: string): TurnRequest => ({
      agent: { kind: "loop", model: `mock:${script}`, baseUrl: null },
      prompt,
      cwd: dir,
      contextId: "ticket-1",
      approval: "auto",
      budget: {},
      contextBudget: { maxTurns: 3 },
      timeoutSeconds: null,
      parentRunId: null,
      trigger: "api",
    });
    const signals = { stop: new AbortController().signal, kill: new AbortController().signal };
    const first = await runTurn(store, settings, request("one"), signals);
    assert.equal(first.summary.status, "completed", first.summary.reason ?? "");
    const second = await runTurn(store, settings, request("two"), signals);
    assert.deepEqual([second.summary.status, second.summary.reason], [
      "failed",
      "budget exhausted: the context's --max-turns 3 (3 of 3 model calls)",
    ]);
    const events = store.readEvents(second.summary.runId).events;
    assert.equal(events.filter((e) => e.type === "model.requested").length, 1);
    assert.deepEqual(events.at(-1)!.payload, {
      reason: "budget exhausted: the context's --max-turns 3 (3 of 3 model calls)",
      result: null,
      code: "budget_exhausted",
    });
    assert.deepEqual(
      spentIn([...store.readEvents(first.summary.runId).events, ...events]).calls,
      3,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
