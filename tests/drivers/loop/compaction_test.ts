import assert from "node:assert/strict";
import { createLoopDriver } from "../../../lib/drivers/loop/loop_driver.ts";
import { COMPACTION_STAGES, trimToolResults } from "../../../lib/drivers/loop/compaction.ts";
import { SUMMARY_PREFIX } from "../../../lib/model/model.ts";
import type { ModelCall } from "../../../lib/drivers/loop/hooks.ts";
import type { Message } from "../../../lib/model/model.ts";
import { driverInput, MemorySink, withTempDir, writeScript } from "./_helpers.ts";

const signal = new AbortController().signal;

/** Two big reads, the summary compaction asks for, and the final answer. */
async function bigReadsSetup(dir: string): Promise<string> {
  await Deno.writeTextFile(`${dir}/a.txt`, "a".repeat(3_000));
  await Deno.writeTextFile(`${dir}/b.txt`, "b".repeat(3_000));
  return await writeScript(dir, [
    { toolCalls: [{ id: "ra", name: "read_file", args: { path: "a.txt" } }] },
    { toolCalls: [{ id: "rb", name: "read_file", args: { path: "b.txt" } }] },
    { text: "The user asked to do the thing; a.txt was all a's.", usage: { outputTokens: 12 } },
    { text: "done" },
  ]);
}

Deno.test("createLoopDriver() compacts in stages when the history passes the threshold", async () => {
  await withTempDir(async (dir) => {
    const script = await bigReadsSetup(dir);
    const calls: ModelCall[] = [];
    const sink = new MemorySink();
    const result = await createLoopDriver({
      hooks: [{ beforeModel: (call) => void calls.push(call) }],
      compaction: { thresholdTokens: 500 },
      systemPrompt: "sys",
    }).start(driverInput(dir, { model: `mock:${script}` }), sink, signal);
    assert.equal(result.status, "completed");
    assert.equal(result.result, "done");

    const compactionTypes = sink.types().filter((type) =>
      type.startsWith("compaction.") || type === "model.requested"
    );
    assert.deepEqual(compactionTypes, [
      "model.requested",
      "model.requested",
      "compaction.started",
      "compaction.completed",
      "compaction.started",
      "model.requested",
      "compaction.completed",
      "model.requested",
    ]);
    const [trimStart, summaryStart] = sink.ofType("compaction.started").map((e) => e.payload);
    assert.deepEqual([trimStart.stage, summaryStart.stage], ["trim_tool_results", "summarize"]);
    const [trim, summary] = sink.ofType("compaction.completed").map((e) => e.payload);
    assert.equal(trim.stage, "trim_tool_results");
    assert.ok(trim.before > 500 && trim.after < trim.before - 600, JSON.stringify(trim));
    assert.equal(summary.stage, "summarize");
    assert.equal(summary.before, trim.after);
    assert.ok(summary.after < summary.before, JSON.stringify(summary));

    // the summary call: no tools, told what it is for, given the oldest turns as a transcript
    const summaryCall = calls[2];
    assert.equal(summaryCall.purpose, "summary");
    assert.equal(summaryCall.tools.length, 0);
    const transcript = (summaryCall.history[1] as { text: string }).text;
    assert.match(
      transcript,
      /^User: do the thing\nAssistant called read_file \{"path":"a.txt"\}\n/,
    );
    assert.match(transcript, /\[… earlier result trimmed: 2800 of 3000 characters removed\]/);
    assert.deepEqual(sink.ofType("model.requested")[2].payload, {
      historyLength: 2,
      toolCount: 0,
      purpose: "summary",
      model: `mock:${script}`,
    });

    // what the model is sent next: the summary in place of the oldest turns, the newest kept
    const next = calls[3].history;
    assert.deepEqual(next.map((m: Message) => m.role), ["system", "user", "assistant", "tool"]);
    assert.equal(
      (next[1] as { text: string }).text,
      `${SUMMARY_PREFIX}\nThe user asked to do the thing; a.txt was all a's.`,
    );
    assert.equal((next[3] as { content: string }).content, "b".repeat(3_000));
    // the summary's usage counts like any other call's
    assert.equal(sink.ofType("usage.updated").at(-1)!.payload.requests, 4);
  });
});

Deno.test("createLoopDriver() does not compact below the threshold or when compaction is off", async () => {
  await withTempDir(async (dir) => {
    for (const compaction of [{ thresholdTokens: 100_000 }, false as const]) {
      const script = await bigReadsSetup(dir);
      const sink = new MemorySink();
      // without compaction the summary response is the final answer
      const result = await createLoopDriver({ compaction }).start(
        driverInput(dir, { model: `mock:${script}` }),
        sink,
        signal,
      );
      assert.equal(result.result, "The user asked to do the thing; a.txt was all a's.");
      assert.equal(sink.types().filter((type) => type.startsWith("compaction.")).length, 0);
    }
  });
});

Deno.test("trimToolResults() keeps the latest call's results and returns null when nothing is cut", () => {
  const options = { thresholdTokens: 10, keptResultChars: 5, summaryResultChars: 100 };
  const long = "x".repeat(500);
  const history: Message[] = [
    { role: "user", text: "go" },
    { role: "assistant", text: null, toolCalls: [{ id: "1", name: "read_file", args: {} }] },
    { role: "tool", callId: "1", name: "read_file", ok: true, content: long },
    { role: "assistant", text: null, toolCalls: [{ id: "2", name: "read_file", args: {} }] },
    { role: "tool", callId: "2", name: "read_file", ok: true, content: long },
  ];
  const trimmed = trimToolResults(history, options)!;
  assert.equal(
    (trimmed[2] as { content: string }).content,
    "xxxxx\n[… earlier result trimmed: 495 of 500 characters removed]",
  );
  assert.equal((trimmed[4] as { content: string }).content, long);
  assert.equal(trimToolResults(trimmed, options), null);
});

// regression: docs/events.md named the first stage "tool-results"; the loop records
// "trim_tool_results".
Deno.test("the docs name the compaction stages as the loop records them", () => {
  const events = Deno.readTextFileSync(new URL("../../../docs/events.md", import.meta.url));
  const stages = [...events.matchAll(/"type":"compaction\.\w+","payload":\{"stage":"([^"]+)"/g)]
    .map((match) => match[1]);
  assert.ok(stages.length >= 2, "docs/events.md shows compaction events");
  for (const stage of stages) {
    assert.ok((COMPACTION_STAGES as readonly string[]).includes(stage), stage);
  }
  const loop = Deno.readTextFileSync(new URL("../../../docs/loop.md", import.meta.url));
  for (const stage of COMPACTION_STAGES) assert.match(loop, new RegExp(`\`${stage}\``));
});
