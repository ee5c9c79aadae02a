// HarnessProcess against real children (sh scripts): lines, the stderr tail, the idle timeout,
// stopping on reins's signals, and holding the idle timer while reins itself waits.
import assert from "node:assert/strict";
import {
  describeExit,
  HarnessProcess,
  type HarnessSpawn,
  HarnessStartError,
  stderrSummary,
} from "../../lib/drivers/process.ts";

function spawn(script: string, fields: Partial<HarnessSpawn> = {}): HarnessProcess {
  return HarnessProcess.start({
    cli: "Fake CLI",
    program: "sh",
    args: ["-c", script],
    cwd: Deno.cwd(),
    env: {},
    stdin: "null",
    idleTimeoutSeconds: 30,
    signal: new AbortController().signal,
    ...fields,
  });
}

async function drain(child: HarnessProcess): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of child.lines()) lines.push(line);
  return lines;
}

Deno.test("HarnessProcess.lines() yields stdout lines and finished() reports the exit", async () => {
  const child = spawn("printf 'one\\n\\ntwo\\r\\nthree'; echo oops >&2; exit 3");
  assert.deepEqual(await drain(child), ["one", "two", "three"]);
  const exit = await child.finished();
  assert.deepEqual(
    { code: exit.code, signal: exit.signal, stoppedBy: exit.stoppedBy, stderr: exit.stderr },
    { code: 3, signal: null, stoppedBy: null, stderr: "oops\n" },
  );
  assert.equal(describeExit(exit), "exited with code 3");
});

Deno.test("HarnessProcess keeps only the last 64 KiB of stderr", async () => {
  // 200 000 bytes of 'x' then a last line: the head is dropped, the last line kept.
  const child = spawn("head -c 200000 /dev/zero | tr '\\0' x >&2; printf '\\nEND\\n' >&2");
  await drain(child);
  const exit = await child.finished();
  assert.equal(exit.stderr.length, 64 * 1024);
  assert.ok(exit.stderr.endsWith("x\nEND\n"));
  assert.ok(/^x+\nEND\n$/.test(exit.stderr));
  assert.equal(exit.lastSaid, "END");
});

Deno.test("HarnessProcess stops a child that says nothing for the idle timeout", async () => {
  const started = performance.now();
  const child = spawn("echo 'I am thinking'; while :; do sleep 0.1; done", {
    idleTimeoutSeconds: 0.5,
  });
  assert.deepEqual(await drain(child), ["I am thinking"]);
  const exit = await child.finished();
  assert.equal(exit.stoppedBy, "idle");
  assert.equal(exit.signal, "SIGTERM");
  assert.equal(exit.lastSaid, "I am thinking");
  assert.ok(performance.now() - started < 5_000);
});

Deno.test("HarnessProcess's idle timeout counts from the child's last output, not its start", async () => {
  // Writes a line every 0.1 s for 0.8 s, then goes silent: with a 0.4 s idle timeout it is stopped
  // once 0.4 s have passed since its last line, not 0.4 s after it started.
  const child = spawn("for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.1; done; sleep 30", {
    idleTimeoutSeconds: 0.4,
  });
  const lines: string[] = [];
  let lastLineAt = 0;
  for await (const line of child.lines()) {
    lines.push(line);
    lastLineAt = performance.now();
  }
  const exit = await child.finished();
  assert.deepEqual(lines, ["1", "2", "3", "4", "5", "6", "7", "8"]);
  assert.equal(exit.stoppedBy, "idle");
  const silence = performance.now() - lastLineAt;
  assert.ok(silence >= 350, `stopped ${silence.toFixed(0)} ms after the last line`);
});

// regression: an idle timeout past what a timer can wait (2^31 - 1 ms; --idle-timeout 2600000 is a
// month) overflowed, the timer fired at once and the CLI was stopped as idle straight away.
Deno.test("HarnessProcess does not stop a child at once for an idle timeout of a month", async () => {
  const child = spawn("sleep 0.3; echo done", { idleTimeoutSeconds: 2_600_000 });
  assert.deepEqual(await drain(child), ["done"]);
  const exit = await child.finished();
  assert.deepEqual({ code: exit.code, stoppedBy: exit.stoppedBy }, { code: 0, stoppedBy: null });
});

Deno.test("HarnessProcess sends SIGINT on abort and SIGKILL after the grace period", async () => {
  const controller = new AbortController();
  const child = spawn("trap '' INT; echo ready; while :; do sleep 0.1; done", {
    signal: controller.signal,
    graceMs: 300,
  });
  const lines = child.lines();
  assert.equal((await lines.next()).value, "ready");
  controller.abort();
  for await (const _ of lines) { /* drain */ }
  const exit = await child.finished();
  assert.equal(exit.stoppedBy, "signal");
  assert.equal(exit.signal, "SIGKILL");
});

Deno.test("HarnessProcess lets a child that handles SIGINT exit on its own", async () => {
  const controller = new AbortController();
  const child = spawn("trap 'echo bye; exit 0' INT; echo ready; while :; do sleep 0.1; done", {
    signal: controller.signal,
    graceMs: 10_000,
  });
  const lines = child.lines();
  assert.equal((await lines.next()).value, "ready");
  controller.abort();
  const rest: string[] = [];
  for await (const line of lines) rest.push(line);
  const exit = await child.finished();
  assert.deepEqual(rest, ["bye"]);
  assert.deepEqual({ code: exit.code, stoppedBy: exit.stoppedBy }, {
    code: 0,
    stoppedBy: "signal",
  });
});

Deno.test("HarnessProcess kills at once when the kill signal aborts", async () => {
  const stop = new AbortController();
  const kill = new AbortController();
  const child = spawn("trap '' INT; echo ready; while :; do sleep 0.1; done", {
    signal: stop.signal,
    kill: kill.signal,
    graceMs: 60_000,
  });
  const lines = child.lines();
  await lines.next();
  stop.abort();
  kill.abort();
  for await (const _ of lines) { /* drain */ }
  const exit = await child.finished();
  assert.equal(exit.signal, "SIGKILL");
  assert.equal(exit.stoppedBy, "signal");
});

Deno.test("HarnessProcess.hold() pauses the idle timer while reins waits", async () => {
  const child = HarnessProcess.start({
    cli: "Fake CLI",
    program: "sh",
    args: ["-c", "echo waiting; read answer; echo got $answer"],
    cwd: Deno.cwd(),
    env: {},
    stdin: "piped",
    idleTimeoutSeconds: 0.3,
    signal: new AbortController().signal,
  });
  const seen: string[] = [];
  for await (const line of child.lines()) {
    seen.push(line);
    if (line === "waiting") {
      // Three idle timeouts pass while the answer is held back.
      const answer = await child.hold(
        new Promise<string>((resolve) => setTimeout(() => resolve("yes"), 1_000)),
      );
      await child.write(`${answer}\n`);
    }
  }
  const exit = await child.finished();
  assert.deepEqual(seen, ["waiting", "got yes"]);
  assert.deepEqual({ code: exit.code, stoppedBy: exit.stoppedBy }, { code: 0, stoppedBy: null });
});

Deno.test("HarnessProcess.start() throws HarnessStartError when the program does not exist", () => {
  assert.throws(
    () => spawn("", { program: "/nonexistent/reins-fake-cli" }),
    (error: unknown) =>
      error instanceof HarnessStartError &&
      error.message === 'Cannot start Fake CLI: no program "/nonexistent/reins-fake-cli" on PATH',
  );
});

Deno.test("stderrSummary() joins the last lines of stderr and shortens long ones", () => {
  assert.equal(stderrSummary("a\n\nb\nc\nd\n"), "b ⏎ c ⏎ d");
  assert.equal(stderrSummary("x".repeat(1000), 3, 10), `…${"x".repeat(10)}`);
});

Deno.test("HarnessProcess stops reading soon after the child exits when a background job holds its pipes", async () => {
  // regression: a job the agent left running kept stdout open and the turn never ended
  const started = performance.now();
  const child = spawn("(sleep 8 &) ; echo done");
  assert.deepEqual(await drain(child), ["done"]);
  const exit = await child.finished();
  assert.equal(exit.code, 0);
  // Within the 2 s grace, not when the job ends 8 s later.
  assert.ok(performance.now() - started < 6_000, `took ${performance.now() - started} ms`);
});
