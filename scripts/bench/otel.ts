// OTLP export of a long run: `reins export otel` (a whole process under the binary's sandbox) of a
// 1,000,000-event loop run to a local OTLP/HTTP collector stub on port 0, which reads each request,
// counts its spans and keeps nothing. Its peak resident size (VmHWM, polled from /proc/<pid>/status
// while it runs) is held to the goal, 100 MiB; its time is shown against reading and
// JSON-parsing the same events.jsonl line by line in a process of its own, measured in the same
// run. It runs under the binary's V8 flags (BINARY_V8_FLAGS) as well as its sandbox. The deferred
// path is measured too: a run settling with its collector down writes its requests to the outbox
// (lib/otel/export.ts exportOnSettle, in a process of its own), and `reins export otel --pending`
// sends them; each one's peak is shown against the same goal. `deno task bench otel`.
import { against, compare, figure, outputWithPeak } from "./_lib.ts";
import { BINARY_V8_FLAGS, sourceRunFlags } from "../permissions.ts";
import type { EventInput } from "../../lib/store/contracts.ts";
import { loopIteration } from "./_loop_events.ts";
import { newId } from "../../lib/core/ids.ts";
import { openStore } from "../../lib/store/store.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const EXPORT = new URL("../../lib/otel/export.ts", import.meta.url).href;
const STORE = new URL("../../lib/store/store.ts", import.meta.url).href;
const CONFIG_TS = new URL("../../lib/core/config.ts", import.meta.url).href;
const EVENTS = 1_000_000;
const GOAL_MIB = 100;

/** One loop iteration's events (6): a model call asking for a tool, the tool, the totals. */
function iteration(i: number, atMs: number): EventInput[] {
  return loopIteration(i, {
    at: new Date(atMs + 3).toISOString(),
    text: "Let me look at the file.",
    result: "export function main() {\n  return 42;\n}\n",
    namesTool: false,
  });
}

/**
 * A settled loop run of `count` events: recorded through the store (its run.json, the envelope of
 * its events), then its log written out whole in the store's format, a millisecond an event —
 * appending a million events one by one under the log's lock would take minutes.
 */
async function writeRun(home: string, count: number): Promise<{ runId: string; bytes: number }> {
  let runId: string;
  {
    using store = openStore(home);
    const writer = store.createRun({
      sessionId: newId(),
      contextId: null,
      harness: "reins",
      driver: "loop",
      trigger: "cli",
      cwd: "/tmp",
      goal: "bench",
    });
    writer.append({ type: "completed", payload: { reason: null, result: "done" } });
    writer.close();
    runId = writer.runId;
  }
  const dir = `${home}/runs/${runId}`;
  const [started, completed] = Deno.readTextFileSync(`${dir}/events.jsonl`).split("\n")
    .filter(Boolean).map((line) => JSON.parse(line));
  const startMs = Date.parse(started.timestamp);
  const file = await Deno.open(`${dir}/events.jsonl`, { write: true, truncate: true });
  const encoder = new TextEncoder();
  let bytes = 0;
  const chunk: string[] = [];
  const flush = async () => {
    const data = encoder.encode(chunk.join(""));
    chunk.length = 0;
    for (let at = 0; at < data.length;) at += await file.write(data.subarray(at));
    bytes += data.length;
  };
  chunk.push(JSON.stringify(started) + "\n");
  let sequence = 1;
  for (let i = 0; sequence < count - 1; i++) {
    for (const event of iteration(i, startMs + sequence)) {
      if (sequence >= count - 1) break;
      chunk.push(
        JSON.stringify({
          id: newId(),
          runId,
          sessionId: started.sessionId,
          sequence,
          timestamp: new Date(startMs + sequence).toISOString(),
          ...event,
        }) + "\n",
      );
      sequence++;
    }
    if (chunk.length >= 10_000) await flush();
  }
  const endedAt = new Date(startMs + sequence).toISOString();
  chunk.push(JSON.stringify({ ...completed, sequence, timestamp: endedAt, id: newId() }) + "\n");
  await flush();
  file.close();
  const record = JSON.parse(Deno.readTextFileSync(`${dir}/run.json`));
  Deno.writeTextFileSync(`${dir}/run.json`, JSON.stringify({ ...record, endedAt }, null, 2));
  return { runId, bytes };
}

/** A collector that reads each request, counts its spans and keeps nothing. */
function collectorStub() {
  let spans = 0;
  let requests = 0;
  let largest = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const text = await request.text();
    largest = Math.max(largest, text.length);
    const body = JSON.parse(text);
    for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length;
    requests++;
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    counts: () => ({ spans, requests, largest }),
    close: () => server.shutdown(),
  };
}

/** Runs a command to its end, polling its peak resident size; its time and peak (KiB). */
async function measured(
  args: string[],
  env: Record<string, string>,
): Promise<{ ms: number; peakKiB: number; stdout: string }> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { output, peakKiB: peak } = await outputWithPeak(child);
  const ms = performance.now() - started;
  const decoder = new TextDecoder();
  if (!output.success) {
    throw new Error(`${args.join(" ")} exited ${output.code}: ${decoder.decode(output.stderr)}`);
  }
  return { ms, peakKiB: peak, stdout: decoder.decode(output.stdout) };
}

const PARSE_LINES = `
const file = Deno.openSync(Deno.args[0]);
const buffer = new Uint8Array(256 * 1024);
const decoder = new TextDecoder();
let pending = "";
let n = 0;
for (let read = file.readSync(buffer); read !== null; read = file.readSync(buffer)) {
  pending += decoder.decode(buffer.subarray(0, read), { stream: true });
  const lines = pending.split("\\n");
  pending = lines.pop();
  for (const line of lines) if (line) { JSON.parse(line); n++; }
}
console.log(n);
`;

/** A run settling with its collector down (a closed port): its export is left in the outbox. */
const SETTLE_DOWN = `
import { exportSettledRun } from ${JSON.stringify(EXPORT)};
import { openStore } from ${JSON.stringify(STORE)};
import { loadSettings } from ${JSON.stringify(CONFIG_TS)};
const [home, runId] = Deno.args;
const settings = loadSettings({ REINS_HOME: home, HOME: home, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" });
using store = openStore(home);
const outcomes = await exportSettledRun(store, settings, runId, () => {});
console.log(outcomes?.map((o) => o.state).join(","));
`;

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-otel-" }));
  const collector = collectorStub();
  try {
    const home = `${dir}/home`;
    const { runId, bytes } = await writeRun(home, EVENTS);
    const log = `${home}/runs/${runId}/events.jsonl`;
    Deno.writeTextFileSync(`${dir}/parse_lines.ts`, PARSE_LINES);

    const baseline = await measured(
      ["run", "--quiet", `--allow-read=${dir}`, `${dir}/parse_lines.ts`, log],
      {},
    );
    if (Number(baseline.stdout.trim()) !== EVENTS) {
      throw new Error(`the baseline read ${baseline.stdout.trim()} events, not ${EVENTS}`);
    }
    const flags = sourceRunFlags({ home, cwd: dir, netHosts: [], programs: [] });
    const reinsRun = (v8: string, args: string[]) =>
      measured(
        ["run", "--quiet", v8, "--config", CONFIG, ...flags, MAIN, ...args],
        { REINS_HOME: home, NO_COLOR: "1" },
      );
    const exportArgs = ["export", "otel", runId, "--endpoint", collector.url];
    const ours = await reinsRun(BINARY_V8_FLAGS, exportArgs);
    const { spans, requests, largest } = collector.counts();
    // The root, and 2 spans an iteration of 6 events; a last iteration cut short has a chat span
    // once its model call was asked for (one never answered), a tool span once its tool started.
    const rest = (EVENTS - 2) % 6;
    const expected = 1 + 2 * Math.floor((EVENTS - 2) / 6) + (rest >= 2 ? 1 : 0) +
      (rest >= 5 ? 1 : 0);
    if (spans !== expected) throw new Error(`the collector got ${spans} spans, not ${expected}`);
    figure(
      `the run`,
      `${EVENTS.toLocaleString("en")} events, ${(bytes / 1e6).toFixed(0)} MB of events.jsonl; ` +
        `${spans.toLocaleString("en")} spans in ${requests.toLocaleString("en")} requests ` +
        `(largest ${(largest / 1e6).toFixed(2)} MB)`,
    );
    against({
      name: `reins export otel of a ${EVENTS.toLocaleString("en")}-event run: peak memory ` +
        `(VmHWM, whole process)`,
      value: ours.peakKiB / 1024,
      unit: "MiB",
      goal: `<= ${GOAL_MIB}`,
      context: `reading and parsing the same log line by line alone peaks at ${
        (baseline.peakKiB / 1024).toFixed(0)
      } MiB`,
    });
    // What the binary's --optimize-for-size is worth here: without it, V8's young generation
    // grows to 2 x 32 MiB over a run that allocates as fast as parsing JSON does.
    const withoutFlag = BINARY_V8_FLAGS.replace(",--optimize-for-size", "");
    const defaultSizing = await reinsRun(withoutFlag, exportArgs);
    figure(
      `the same export without --optimize-for-size (${withoutFlag})`,
      `peak ${(defaultSizing.peakKiB / 1024).toFixed(0)} MiB, ` +
        `${(defaultSizing.ms / 1000).toFixed(1)} s (with it: ${(ours.ms / 1000).toFixed(1)} s)`,
    );
    // The deferred path: written to the outbox as it settles, sent later by --pending.
    Deno.writeTextFileSync(`${dir}/settle_down.ts`, SETTLE_DOWN);
    const settled = await measured(
      [
        "run",
        "--quiet",
        BINARY_V8_FLAGS,
        "--allow-all",
        "--config",
        CONFIG,
        `${dir}/settle_down.ts`,
      ]
        .concat([home, runId]),
      {},
    );
    if (settled.stdout.trim() !== "pending") {
      throw new Error(`the settling export was ${settled.stdout.trim()}, not pending`);
    }
    against({
      name: `a ${EVENTS.toLocaleString("en")}-event run settling with its collector down: its ` +
        `requests written to the outbox, peak memory (VmHWM, whole process)`,
      value: settled.peakKiB / 1024,
      unit: "MiB",
      goal: `<= ${GOAL_MIB}`,
      context: `${(settled.ms / 1000).toFixed(1)} s`,
    });
    const before = collector.counts().spans;
    const pending = await reinsRun(BINARY_V8_FLAGS, [
      "export",
      "otel",
      "--pending",
      "--endpoint",
      collector.url,
    ]);
    if (collector.counts().spans - before !== expected) {
      throw new Error(`--pending sent ${collector.counts().spans - before} spans, not ${expected}`);
    }
    against({
      name: `reins export otel --pending of that outbox entry: peak memory (VmHWM, whole process)`,
      value: pending.peakKiB / 1024,
      unit: "MiB",
      goal: `<= ${GOAL_MIB}`,
      context: `${(pending.ms / 1000).toFixed(1)} s`,
    });
    compare({
      name: `reins export otel of a ${EVENTS.toLocaleString("en")}-event run (read twice, ` +
        `${spans.toLocaleString("en")} spans made, redacted, sent; whole process)`,
      ours: ours.ms,
      baseline: baseline.ms,
      unit: "ms",
      better: "lower",
      // No goal in the issue for the time: shown against the raw reading, held to nothing tighter
      // than what two readings and the spans' JSON cost.
      goal: "<= 10",
      baselineName: "reading and JSON-parsing the same file line by line alone (whole process)",
    });
  } finally {
    await collector.close();
    await Deno.remove(dir, { recursive: true });
  }
}
