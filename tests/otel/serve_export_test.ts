// `reins serve` exports each A2A task's run as it settles: a task is a run, so its id is the
// trace's (without dashes), and the A2A contextId is the trace's gen_ai.conversation.id.
import assert from "node:assert/strict";
import { SendMessageRequest, type Task, TaskState } from "@a2a-js/sdk";
import { officialClient } from "../serve/_server.ts";
import { spawnReins, tempDir } from "../support/reins.ts";
import { attributeOf, startFakeCollector } from "../fixtures/fake_otlp.ts";

Deno.test("reins serve exports each task's run to the collector, its contextId the conversation", async () => {
  await using dir = await tempDir();
  await using collector = startFakeCollector();
  const child = spawnReins(["serve", "--port", "0"], {
    home: dir.path,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
  });
  const stderr = new Response(child.stderr).text();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    reader.releaseLock();
    const base = new URL("/", out.trim()).href;
    const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
    const client = await officialClient(base, token);
    const task = await client.sendMessage(SendMessageRequest.fromJSON({
      message: {
        messageId: crypto.randomUUID(),
        role: "ROLE_USER",
        contextId: "thread-77",
        parts: [{ text: "list the files" }],
      },
    })) as Task;
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    // The task is answered once its run settled, and the export comes right after.
    const deadline = Date.now() + 10_000;
    while (collector.spans().length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [root] = collector.spans();
    assert.ok(root, "the task's trace arrived");
    assert.equal(root.traceId, task.id.replaceAll("-", ""));
    assert.deepEqual(attributeOf(root.attributes, "reins.trigger"), { stringValue: "a2a" });
    assert.deepEqual(attributeOf(root.attributes, "gen_ai.conversation.id"), {
      stringValue: "thread-77",
    });
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
  assert.doesNotMatch(await stderr, /trace of run/, "no export warning");
});
