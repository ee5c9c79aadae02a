// 10,000 fuzzed JSON-RPC envelopes against `reins serve` (a subprocess under the binary's
// sandbox): every answer is a JSON-RPC answer with one of the spec's error codes, the server
// never falls over, and its memory stays flat from the first thousands to the last.
import assert from "node:assert/strict";
import fc from "fast-check";
import { RPC_CODES } from "../../lib/serve/jsonrpc.ts";
import { spawnReins, tempDir } from "../support/reins.ts";

const METHODS = [
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "ListTasks",
  "CancelTask",
  "SubscribeToTask",
  "ForgetContext",
  "GetExtendedAgentCard",
  "CreateTaskPushNotificationConfig",
  "message/send",
  "tasks/get",
];

const part = fc.oneof(
  fc.record({ text: fc.string() }),
  fc.record({ data: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record({ raw: fc.base64String(), mediaType: fc.string() }),
  fc.jsonValue({ maxDepth: 2 }),
);
const message = fc.record({
  messageId: fc.oneof(fc.uuid(), fc.string(), fc.jsonValue({ maxDepth: 1 })),
  role: fc.oneof(
    fc.constantFrom("ROLE_USER", "ROLE_AGENT", 1, 2, 7),
    fc.jsonValue({ maxDepth: 1 }),
  ),
  parts: fc.oneof(fc.array(part, { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
  contextId: fc.oneof(fc.string(), fc.constantFrom("../x", "ctx-1")),
  taskId: fc.oneof(fc.uuid(), fc.string()),
}, { requiredKeys: [] });
const params = fc.oneof(
  fc.record({
    message,
    configuration: fc.record({
      returnImmediately: fc.boolean(),
      historyLength: fc.oneof(fc.integer(), fc.string()),
    }, { requiredKeys: [] }),
  }, { requiredKeys: [] }),
  fc.record({
    id: fc.oneof(fc.uuid(), fc.string(), fc.integer()),
    historyLength: fc.oneof(fc.integer(), fc.string()),
    contextId: fc.string(),
    pageSize: fc.oneof(fc.integer(), fc.string()),
    pageToken: fc.string(),
    status: fc.oneof(fc.constantFrom("TASK_STATE_COMPLETED", "nope"), fc.integer()),
  }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 4 }),
);
const envelope = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      jsonrpc: fc.oneof(
        { weight: 5, arbitrary: fc.constant("2.0") },
        fc.jsonValue({ maxDepth: 1 }),
      ),
      id: fc.oneof(
        { weight: 4, arbitrary: fc.oneof(fc.integer(), fc.string()) },
        fc.jsonValue({ maxDepth: 1 }),
      ),
      method: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...METHODS) }, fc.string()),
      params,
    }, { requiredKeys: ["jsonrpc", "id", "method"] }).map((value) => JSON.stringify(value)),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.string() },
);

function rssKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

Deno.test("10,000 fuzzed JSON-RPC envelopes get spec error codes only; the server stays up, its memory flat", async () => {
  await using dir = await tempDir();
  const child = spawnReins(["serve", "--port", "0", "--max-turns", "2"], { home: dir.path });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) out += (await reader.read()).value ?? "";
  reader.releaseLock();
  const stderr = new Response(child.stderr).text();
  const base = new URL("/", out.trim()).href;
  const token = (await Deno.readTextFile(`${dir.path}/serve.token`)).trim();
  const bodies = fc.sample(envelope, { numRuns: 10_000, seed: 13 });
  const codes = new Map<number, number>();
  let next = 0;
  let rssAtWarm = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      if (next === 2_000) rssAtWarm = rssKiB(child.pid);
      const response = await fetch(base, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          "a2a-version": "1.0",
        },
        body,
      });
      assert.equal(response.status, 200, body);
      const type = response.headers.get("content-type") ?? "";
      if (type.startsWith("text/event-stream")) {
        // A fuzzed message that happened to be valid: its stream is read to the end.
        await response.body?.cancel();
        continue;
      }
      const answer = await response.json();
      assert.equal(answer.jsonrpc, "2.0", body);
      if (answer.error) {
        assert.ok(RPC_CODES.includes(answer.error.code), `${answer.error.code} for ${body}`);
        assert.equal(typeof answer.error.message, "string");
        codes.set(answer.error.code, (codes.get(answer.error.code) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const rssAtEnd = rssKiB(child.pid);
  const card = await fetch(`${base}.well-known/agent-card.json`);
  assert.equal(card.status, 200, "still up");
  await card.body?.cancel();
  child.kill("SIGTERM");
  assert.equal((await child.status).code, 0, await stderr);
  await child.stdout.cancel().catch(() => {});
  // Flat: no per-request growth a leak would show (8,000 requests × even 2 KiB would be 16 MiB).
  const grownMiB = (rssAtEnd - rssAtWarm) / 1024;
  assert.ok(grownMiB < 16, `RSS grew ${grownMiB.toFixed(1)} MiB from request 2,000 to 10,000`);
  assert.ok(codes.size >= 5, `the fuzz reached many answers: ${JSON.stringify([...codes])}`);
});
