// A child process for the store tests: does one job against a data root, in its own process.
//   append HOME RUN WORKER COUNT     append COUNT events tagged WORKER to RUN (as a non-owner)
//   own HOME COUNT SPIN_MS           create a run, print its id, append COUNT events (spinning
//                                    about SPIN_MS between them, sizes up to 8 KiB), print "done",
//                                    then wait for stdin to close and exit without settling it
import { openStore } from "../../lib/store/store.ts";

export function filler(worker: number, index: number): string {
  // Sizes from a few bytes to 8 KiB, so a kill can land in the middle of a long line.
  const size = (worker * 7919 + index * 104729) % 8192;
  return "x".repeat(size);
}

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* keep the appends spread over time */ }
}

if (import.meta.main) {
  const [job, home, ...rest] = Deno.args;
  using store = openStore(home);
  if (job === "append") {
    const [runId, worker, count] = rest;
    const appender = store.openRun(runId);
    for (let i = 0; i < Number(count); i++) {
      appender.append({
        type: "message.delta",
        payload: { role: "assistant", text: `${worker}:${i}`, worker: Number(worker), index: i },
      });
    }
    appender.close();
  } else if (job === "own") {
    const [count, spinMs] = rest;
    const writer = store.createRun({
      sessionId: "child-session",
      contextId: null,
      harness: "test",
      driver: "command",
      trigger: "cli",
      cwd: Deno.cwd(),
      goal: "append until killed",
    });
    const out = (text: string) => Deno.stdout.writeSync(new TextEncoder().encode(`${text}\n`));
    out(writer.runId);
    for (let i = 0; i < Number(count); i++) {
      writer.append({ type: "message.delta", payload: { role: "assistant", text: filler(1, i) } });
      if (Number(spinMs) > 0) spin(Number(spinMs));
    }
    out("done");
    // Wait for the parent to close stdin, then exit holding the run unsettled (no close()).
    for await (const _ of Deno.stdin.readable) { /* drain */ }
    Deno.exit(0);
  } else {
    throw new Error(`unknown job ${job}`);
  }
}
