// settle(): how a turn ends, from what its driver returned or threw and what stopped it — no
// process, no files.
import assert from "node:assert/strict";
import type { DriverResult } from "../../lib/drivers/driver.ts";
import { settle, stopReasonOf, summarize } from "../../lib/turn/settle.ts";

const done = (overrides: Partial<DriverResult> = {}): { result: DriverResult } => ({
  result: { status: "completed", reason: null, result: "the answer", exitCode: 0, ...overrides },
});
const quiet = { timedOutAfterSeconds: null, stopReason: null };

Deno.test("settle() completes a run whose driver completed, with its answer and exit code", () => {
  assert.deepEqual(settle({ ended: done({ attachments: ["/w/out.txt"] }), ...quiet }), {
    status: "completed",
    reason: null,
    result: "the answer",
    exitCode: 0,
    attachments: ["/w/out.txt"],
    terminal: { type: "completed", payload: { reason: null, result: "the answer", exitCode: 0 } },
    error: null,
  });
});

Deno.test("settle() fails a run whose driver failed, keeping its reason", () => {
  const settled = settle({
    ended: done({ status: "failed", reason: "exit 3: boom", result: null, exitCode: 3 }),
    ...quiet,
  });
  assert.deepEqual(
    [settled.status, settled.reason, settled.exitCode, settled.terminal],
    ["failed", "exit 3: boom", 3, {
      type: "failed",
      payload: { reason: "exit 3: boom", result: null, exitCode: 3 },
    }],
  );
});

Deno.test("settle() fails a run whose driver threw, with the first line of its message", () => {
  const error = new Error("the model endpoint refused\nstack and more");
  const settled = settle({ ended: { error }, ...quiet });
  assert.equal(settled.status, "failed");
  assert.equal(settled.reason, "the model endpoint refused");
  assert.equal(settled.error, error);
  assert.equal(settled.exitCode, null);
  assert.deepEqual(settled.attachments, []);
});

Deno.test("settle() fails a timed-out run, keeping how the driver said it stopped", () => {
  const settled = settle({
    ended: done({ status: "interrupted", reason: "stopped by a signal; sleep exited 143" }),
    timedOutAfterSeconds: 2,
    stopReason: null,
  });
  assert.equal(settled.status, "failed");
  assert.equal(settled.reason, "timed out after 2 s: stopped by a signal; sleep exited 143");
  const bare = settle({
    ended: done({ reason: null }),
    timedOutAfterSeconds: 0.5,
    stopReason: null,
  });
  assert.equal(bare.reason, "timed out after 0.5 s");
});

Deno.test("settle() interrupts a stopped run, preferring the driver's own reason", () => {
  const own = settle({
    ended: done({ status: "interrupted", reason: "claude was stopped" }),
    timedOutAfterSeconds: null,
    stopReason: "stopped by SIGINT",
  });
  assert.deepEqual([own.status, own.reason], ["interrupted", "claude was stopped"]);
  assert.deepEqual(own.terminal, {
    type: "status.changed",
    payload: { status: "interrupted", reason: "claude was stopped", exitCode: 0 },
  });
  // No process, no exit code: the event carries none.
  const bare = settle({ ended: { error: new Error("x") }, ...quiet });
  assert.deepEqual(bare.terminal, { type: "failed", payload: { reason: "x", result: null } });
  // A driver that finished its answer as the stop came is still interrupted: it was stopped.
  const late = settle({
    ended: done(),
    timedOutAfterSeconds: null,
    stopReason: "stopped by SIGTERM",
  });
  assert.deepEqual([late.status, late.reason], ["interrupted", "stopped by SIGTERM"]);
});

Deno.test("settle() keeps a failure that came with a stop: the failure says more", () => {
  const settled = settle({
    ended: done({ status: "failed", reason: "exit 1: no such file" }),
    timedOutAfterSeconds: null,
    stopReason: "stopped by SIGINT",
  });
  assert.deepEqual([settled.status, settled.reason], ["failed", "exit 1: no such file"]);
});

Deno.test("summarize() builds the summary from the settlement and the run's last usage", () => {
  const usage = {
    inputTokens: 10,
    outputTokens: 2,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    costUsd: 0.25,
    requests: 1,
  };
  const ids = { runId: "r-1", sessionId: "s-1", contextId: "c-1" };
  assert.deepEqual(summarize(settle({ ended: done(), ...quiet }), ids, usage), {
    ...ids,
    status: "completed",
    result: "the answer",
    reason: null,
    usage,
    costUsd: 0.25,
  });
  assert.equal(summarize(settle({ ended: done(), ...quiet }), ids, null).costUsd, null);
});

Deno.test("stopReasonOf() says why a signal was aborted in words", () => {
  const given = new AbortController();
  given.abort("stopped by SIGINT");
  assert.equal(stopReasonOf(given.signal), "stopped by SIGINT");
  const plain = new AbortController();
  plain.abort();
  assert.equal(stopReasonOf(plain.signal), "stopped");
  const error = new AbortController();
  error.abort(new Error("the server is shutting down"));
  assert.equal(stopReasonOf(error.signal), "the server is shutting down");
});
