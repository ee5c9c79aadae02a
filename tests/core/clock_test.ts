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

/** Runs `script` (which prints one JSON line) in a child Deno with the collector exposed. */
async function inChild(script: string) {
  const clock = new URL("../../lib/core/clock.ts", import.meta.url).href;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--v8-flags=--expose-gc",
      `import * as clock from ${JSON.stringify(clock)};\n${script}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: output.code,
    told: new TextDecoder().decode(output.stdout).trim(),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

// regression: each call's AbortSignal.timeout stayed out until due, cancelled or not, with its
// signal, listener and timer (~0.5 KiB): a suite's heap after the run held its last 2 s of turns'
// pipe graces, a long-lived process every turn's 600 s idle timeout of the last 10 minutes
Deno.test("onceAfter and Countdown, cancelled or disposed, keep nothing of themselves once they are", async () => {
  const { code, told, stderr } = await inChild(`
    const heap = () => { globalThis.gc(); globalThis.gc(); return Deno.memoryUsage().heapUsed; };
    // What the first calls load or compile is not what is measured.
    for (let i = 0; i < 1000; i++) clock.onceAfter(600_000, () => {}).cancel();
    const before = heap();
    for (let i = 0; i < 20_000; i++) clock.onceAfter(600_000 + i, () => {}).cancel();
    for (let i = 0; i < 20_000; i++) {
      const countdown = new clock.Countdown(600_000, () => {});
      countdown.restart();
      countdown.dispose();
    }
    console.log(JSON.stringify({ grownKiB: Math.round((heap() - before) / 1024) }));
    Deno.exit(0);
  `);
  assert.equal(code, 0, stderr);
  const { grownKiB } = JSON.parse(told);
  assert.ok(grownKiB < 1024, `40,000 cancelled deadlines kept ${grownKiB} KiB`);
});

Deno.test("onceAfter fires each deadline on time and in order, however the timers out were armed", async () => {
  const { code, told, stderr } = await inChild(`
    const started = performance.now();
    const fired = [];
    const at = (name) => () => fired.push([name, Math.round(performance.now() - started)]);
    clock.onceAfter(400, at("late"));
    // Earlier than the timer out: a timer of its own, not a wait for the late one.
    clock.onceAfter(40, at("early"));
    clock.onceAfter(40, () => {
      at("same time, called second")();
      // Armed while deadlines fire: a later task, after what was due with it.
      clock.onceAfter(0, at("armed when due"));
    });
    clock.onceAfter(40, at("same time, called third"));
    clock.onceAfter(60, at("cancelled")).cancel();
    clock.onceAfter(450, () => { console.log(JSON.stringify(fired)); Deno.exit(0); });
  `);
  assert.equal(code, 0, stderr);
  const fired: [string, number][] = JSON.parse(told);
  assert.deepEqual(fired.map(([name]) => name), [
    "early",
    "same time, called second",
    "same time, called third",
    "armed when due",
    "late",
  ]);
  const when = Object.fromEntries(fired);
  assert.ok(when.early >= 39 && when.early < 300, `the 40 ms deadline fired at ${when.early} ms`);
  assert.ok(when.late >= 399, `the 400 ms deadline fired at ${when.late} ms`);
});

Deno.test("onceAfter: a deadline that throws is an uncaught error once those due with it have run", async () => {
  const { code, told, stderr } = await inChild(`
    clock.onceAfter(20, () => { throw new Error("thrown by a deadline"); });
    clock.onceAfter(20, () => console.log("ran"));
    clock.onceAfter(5_000, () => Deno.exit(0));
  `);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /thrown by a deadline/);
  assert.equal(told, "ran");
});
