import assert from "node:assert/strict";
import { createLoopDriver } from "../../lib/drivers/loop/loop_driver.ts";
import { demoModel } from "../../lib/model/demo_model.ts";
import { driverInput, MemorySink, withTempDir } from "../drivers/loop/_helpers.ts";

const DEMO = new URL("../../examples/demo/", import.meta.url).pathname;

async function copyDemo(dir: string): Promise<void> {
  for await (const entry of Deno.readDir(DEMO)) {
    if (entry.isFile) await Deno.copyFile(`${DEMO}${entry.name}`, `${dir}/${entry.name}`);
  }
}

const signal = new AbortController().signal;

Deno.test("demoModel() lists, reads, writes NOTES.md and answers, through the loop's tools", async () => {
  await withTempDir(async (dir) => {
    await copyDemo(dir);
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { prompt: "Have a look around" }),
      sink,
      signal,
    );
    assert.deepEqual(result, {
      status: "completed",
      reason: null,
      result: "You asked: “Have a look around”. I listed the working directory (3 entries), " +
        "read README.md (5 non-empty lines) and wrote NOTES.md with a summary of what I found.",
      exitCode: null,
    });
    assert.deepEqual(
      sink.ofType("tool.started").map((
        e,
      ) => [e.payload.tool, (e.payload.args as { path: string }).path]),
      [["list_files", "."], ["read_file", "README.md"], ["write_file", "NOTES.md"]],
    );
    assert.ok(sink.ofType("tool.completed").every((e) => e.payload.ok));
    const notes = await Deno.readTextFile(`${dir}/NOTES.md`);
    assert.match(notes, /^# Notes\n/);
    assert.match(notes, /\n- README\.md\n- greet\.sh\n- todo\.txt\n/);
    assert.match(notes, /\n> # greet\n/);
    const usage = sink.ofType("usage.updated").at(-1)!.payload;
    assert.equal(usage.requests, 4);
    assert.ok(usage.inputTokens! > 0);
  });
});

Deno.test("demoModel() shows on a later turn that it sees the earlier conversation", async () => {
  await withTempDir(async (dir) => {
    await copyDemo(dir);
    const first = new MemorySink();
    await createLoopDriver().start(
      driverInput(dir, { prompt: "Have a look around" }),
      first,
      signal,
    );
    const second = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { prompt: "What do you remember?", history: first.events }),
      second,
      signal,
    );
    assert.equal(
      result.result,
      "Last time you asked “Have a look around”. This time you asked: “What do you remember?”. " +
        "I listed the working directory (4 entries), re-read the NOTES.md I wrote last time " +
        "(13 non-empty lines) and updated NOTES.md with what I found and your earlier requests.",
    );
    const notes = await Deno.readTextFile(`${dir}/NOTES.md`);
    assert.match(notes, /## Earlier requests\n\n- “Have a look around”\n$/);
    // call ids stay unique across the turns of one conversation
    const ids = [...first.events, ...second.events].flatMap((e) =>
      e.type === "tool.started" ? [e.payload.callId] : []
    );
    assert.equal(new Set(ids).size, ids.length);
  });
});

Deno.test("demoModel() tells what it could not do when a tool is denied", async () => {
  await withTempDir(async (dir) => {
    await copyDemo(dir);
    const result = await createLoopDriver().start(
      driverInput(dir, { prompt: "tidy", approval: "deny" }),
      new MemorySink(),
      signal,
    );
    assert.equal(
      result.result,
      "I could not finish: list_files failed (denied by policy). You asked: “tidy”.",
    );
    await assert.rejects(Deno.stat(`${dir}/NOTES.md`), Deno.errors.NotFound);
  });
});

Deno.test("demoModel() under a budget it reaches ends failed, with no call past the budget", async () => {
  await withTempDir(async (dir) => {
    await copyDemo(dir);
    const sink = new MemorySink();
    const result = await createLoopDriver().start(
      driverInput(dir, { prompt: "tidy", budget: { maxTurns: 1 } }),
      sink,
      signal,
    );
    assert.deepEqual([result.status, result.reason, result.code], [
      "failed",
      "budget exhausted: --max-turns 1 (1 of 1 model calls)",
      "budget_exhausted",
    ]);
    assert.equal(sink.ofType("model.requested").length, 1);
  });
});

Deno.test("demoModel() answers the same way to the same conversation", async () => {
  const model = demoModel();
  const request = {
    history: [{ role: "user" as const, text: "hello" }],
    tools: [],
    purpose: "turn" as const,
    signal,
  };
  assert.deepEqual(await model.complete(request), await model.complete(request));
});
