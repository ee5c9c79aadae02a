import assert from "node:assert/strict";
import { Countdown, nowIso, sleep } from "../../lib/core/clock.ts";

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

Deno.test("Countdown fires once its time has passed since the last restart, not before", async () => {
  const fired: number[] = [];
  const started = performance.now();
  const countdown = new Countdown(150, () => fired.push(performance.now() - started));
  countdown.restart();
  // Restarted every 50 ms for 400 ms: it must not fire meanwhile.
  for (let i = 0; i < 8; i++) {
    await sleep(50);
    countdown.restart();
  }
  assert.deepEqual(fired, []);
  await sleep(400);
  assert.equal(fired.length, 1, "it fires once");
  assert.ok(fired[0] >= 400 + 150 - 5, `fired after ${fired[0]} ms`);
});

Deno.test("Countdown does not fire once cancelled or disposed, and fires again once restarted", async () => {
  let fired = 0;
  const countdown = new Countdown(40, () => fired++);
  countdown.restart();
  countdown.cancel();
  await sleep(120);
  assert.equal(fired, 0);
  countdown.restart();
  await sleep(120);
  assert.equal(fired, 1);
  countdown.restart();
  countdown.dispose();
  countdown.restart();
  await sleep(120);
  assert.equal(fired, 1);
});

// A timer asked for more than 2^31 - 1 ms fires at once (see the regression test in
// tests/drivers/process_test.ts): a month-long countdown is waited out in steps.
Deno.test("Countdown longer than a timer can wait does not fire at once", async () => {
  let fired = 0;
  const countdown = new Countdown(2_600_000_000, () => fired++);
  countdown.restart();
  await sleep(100);
  assert.equal(fired, 0);
  countdown.dispose();
});

Deno.test("onceAfter, cancelled, lets go of what its callback holds before its timer is due", async () => {
  // In a child with the collector exposed: what a cancelled callback held (a turn's child process
  // and its pipes' buffers) must be collectable while the timer is still out.
  const clock = new URL("../../lib/core/clock.ts", import.meta.url).href;
  const script = `
    import { onceAfter } from ${JSON.stringify(clock)};
    let held = { bytes: new Uint8Array(1 << 20) };
    const ref = new WeakRef(held);
    const fired = [];
    const keeping = (what) => () => fired.push(what.bytes.length);
    const timer = onceAfter(60_000, keeping(held));
    onceAfter(10, () => fired.push("due"));
    timer.cancel();
    held = null;
    await new Promise((resolve) => setTimeout(resolve, 50));
    globalThis.gc();
    console.log(JSON.stringify({ kept: ref.deref() !== undefined, fired }));
    Deno.exit(0);
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const told = JSON.parse(new TextDecoder().decode(output.stdout));
  assert.deepEqual(told, { kept: false, fired: ["due"] });
});
