import assert from "node:assert/strict";
import { nowIso, sleep } from "../../lib/core/clock.ts";

Deno.test("nowIso() is the time now as an ISO string", () => {
  const before = Date.now();
  const stamp = Date.parse(nowIso());
  assert.ok(stamp >= before && stamp <= Date.now());
  assert.match(nowIso(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

Deno.test("sleep() waits, and rejects with the signal's reason as soon as it aborts", async () => {
  const started = performance.now();
  await sleep(30);
  assert.ok(performance.now() - started >= 25);
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("stop")), 20);
  const cut = performance.now();
  await assert.rejects(() => sleep(10_000, controller.signal), /stop/);
  assert.ok(performance.now() - cut < 2000);
  await assert.rejects(() => sleep(10, AbortSignal.abort(new Error("already"))), /already/);
});
