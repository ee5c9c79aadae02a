// LiveTask: one task's feed of stream items and the subscribers reading it, each at its own pace.
// Real events, stored through the store into a temp data root as a turn stores them.
import assert from "node:assert/strict";
import type { EventInput } from "../../lib/store/contracts.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import type { RunWriter } from "../../lib/store/run_writer.ts";
import {
  LiveTask,
  MAX_CHUNK_TEXT,
  MAX_QUEUED_ITEMS,
  type Subscription,
} from "../../lib/serve/live_task.ts";
import { TaskView } from "../../lib/serve/task_view.ts";
import type { StreamResponse } from "../../lib/serve/a2a/wire.ts";

async function withLiveTask(
  body: (live: LiveTask, store: (event: EventInput) => void) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "reins-live-" });
  try {
    using store: Store = openStore(`${dir}/home`);
    const writer: RunWriter = store.createRun({
      sessionId: "s",
      contextId: "c",
      harness: "command",
      driver: "command",
      trigger: "a2a",
      cwd: dir,
      goal: "the prompt",
    });
    const live = new LiveTask(
      new TaskView(store.loadRun(writer.runId)),
      { stop: new AbortController(), kill: new AbortController() },
      (after, before) =>
        store.readEvents(writer.runId).events.filter((e) =>
          e.sequence > after && e.sequence < before
        ),
    );
    live.publish(writer.started);
    await body(live, (event) => live.publish(writer.append(event)));
    writer.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Everything left for a subscriber once the turn has ended. */
async function drain(subscription: Subscription): Promise<StreamResponse[]> {
  const items: StreamResponse[] = [];
  for (let item = await subscription.next(); item !== null; item = await subscription.next()) {
    items.push(item);
  }
  return items;
}

const delta = (text: string): EventInput => ({
  type: "message.delta",
  payload: { role: "assistant", text },
});
const tool = (n: number): EventInput => ({
  type: "tool.started",
  payload: { callId: `c${n}`, tool: "grep", args: { n } },
});

Deno.test("LiveTask: a reader that keeps up and one that reads only at the end get the same items; a long delta is split the same for both", async () => {
  await withLiveTask(async (live, store) => {
    const eager = live.subscribe((view) => view.snapshot())!;
    const late = live.subscribe((view) => view.snapshot())!;
    const seen: StreamResponse[] = [];
    const now = AbortSignal.abort();
    const long = "y".repeat(MAX_CHUNK_TEXT * 2 + 10);
    const events = [delta("one "), tool(1), delta(long), delta("two"), tool(2), delta(" three")];
    for (const event of events) {
      store(event);
      // The eager one reads all there is after every event (an aborted signal: without waiting);
      // the late one reads nothing yet.
      for (let item = await eager.next(now); item !== null; item = await eager.next(now)) {
        seen.push(item);
      }
    }
    store({
      type: "message.completed",
      payload: { role: "assistant", text: `one ${long}two three` },
    });
    store({ type: "completed", payload: { reason: null, result: null } });
    live.end();
    seen.push(...await drain(eager));
    const behind = await drain(late);
    assert.deepEqual(behind, seen);
    const chunks = seen.flatMap((item) => "artifactUpdate" in item ? [item.artifactUpdate] : []);
    const texts = chunks.map((chunk) => chunk.artifact.parts[0].text ?? "");
    assert.ok(texts.every((text) => text.length <= MAX_CHUNK_TEXT), "no chunk over the cap");
    assert.equal(texts.join(""), `one ${long}two three`);
    assert.deepEqual(
      texts.slice(1, 4).map((text) => text.length),
      [MAX_CHUNK_TEXT, MAX_CHUNK_TEXT, 10],
      "the long delta as three chunks",
    );
    assert.deepEqual(chunks.map((chunk) => chunk.append), chunks.map((_, i) => i > 0));
    assert.deepEqual(
      chunks.map((chunk) => chunk.lastChunk),
      chunks.map((_, i) => i === chunks.length - 1),
    );
    assert.equal(live.subscriberCount, 2, "both read to the end; neither closed itself yet");
  });
});

Deno.test("LiveTask: a subscriber that joins late starts with the task as it stands and reads on from there", async () => {
  await withLiveTask(async (live, store) => {
    const early = live.subscribe((view) => view.snapshot())!;
    store(delta("before "));
    store(tool(1));
    const joined = live.subscribe((view) => view.snapshot())!;
    assert.equal(joined.first.artifacts?.[0].parts[0].text, "before ");
    store(delta("after"));
    store({ type: "completed", payload: { reason: null, result: null } });
    live.end();
    const all = await drain(early);
    const rest = await drain(joined);
    assert.deepEqual(rest, all.slice(all.length - rest.length), "the tail of the early one's");
    const next = rest[0];
    assert.ok("artifactUpdate" in next);
    assert.equal(next.artifactUpdate.artifact.parts[0].text, "after");
    assert.equal(next.artifactUpdate.append, true);
  });
});

Deno.test("LiveTask: a subscriber more than MAX_QUEUED_ITEMS behind is dropped; the one that reads gets every item", async () => {
  await withLiveTask(async (live, store) => {
    const reader = live.subscribe((view) => view.snapshot())!;
    const idle = live.subscribe((view) => view.snapshot())!;
    let read = 0;
    for (let n = 0; n <= MAX_QUEUED_ITEMS; n++) {
      store(tool(n));
      const item = await reader.next();
      assert.ok(item !== null && "statusUpdate" in item);
      read++;
      if (n === MAX_QUEUED_ITEMS - 1) assert.equal(idle.overflowed, false, "at the limit, kept");
    }
    assert.equal(idle.overflowed, true);
    assert.equal(await idle.next(), null, "its stream ends (with STREAM_TOO_FAR_BEHIND)");
    assert.equal(live.subscriberCount, 1);
    store({ type: "completed", payload: { reason: null, result: null } });
    live.end();
    const rest = await drain(reader);
    assert.equal(read, MAX_QUEUED_ITEMS + 1);
    const last = rest.at(-1)!;
    assert.ok("statusUpdate" in last);
    assert.equal(last.statusUpdate.status.state, "TASK_STATE_COMPLETED");
  });
});
