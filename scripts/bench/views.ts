// Views of recordings: `reins show` of a 100,000-event run against reading and parsing the same
// file alone (both whole processes), and `reins stats` over 1,000 runs against reading and
// parsing their files alone.
import { compare, figure } from "./_lib.ts";
import { sourceRunFlags } from "../permissions.ts";
import type { EventInput } from "../../lib/store/contracts.ts";
import { loopIteration } from "./_loop_events.ts";
import { newId } from "../../lib/core/ids.ts";
import { openStore } from "../../lib/store/store.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const SHOW_EVENTS = 100_000;
const STATS_RUNS = 1_000;
const TIMES = 7;

/**
 * Median wall times of `ours` and `baseline`, run turn about so that a machine busy with other
 * work slows both alike.
 */
async function interleavedMedians(
  times: number,
  ours: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
): Promise<{ ours: number; baseline: number }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < times; i++) {
    let start = performance.now();
    await baseline();
    b.push(performance.now() - start);
    start = performance.now();
    await ours();
    a.push(performance.now() - start);
  }
  const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)];
  return { ours: median(a), baseline: median(b) };
}

/** Runs a command to completion with its output thrown away (as into `> /dev/null`). */
async function quietly(program: string, args: string[], env: Record<string, string> = {}) {
  const { success, code, stderr } = await new Deno.Command(program, {
    args,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(
      `${program} ${args.join(" ")} exited ${code}: ${new TextDecoder().decode(stderr)}`,
    );
  }
}

/** One loop iteration's events, cycled to make a long run. */
function loopEvents(i: number): EventInput[] {
  return loopIteration(i, {
    at: new Date().toISOString(),
    text: "Let me look at the file.\nIt should be there.",
    result: "export function main() {\n  return 42;\n}\n".repeat(4),
    namesTool: true,
  });
}

/** A settled loop run of about `count` events, recorded through the store. */
function recordRun(home: string, count: number): string {
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
  for (let i = 0; writer.lastSequence < count - 2; i++) {
    for (const event of loopEvents(i)) {
      if (writer.lastSequence >= count - 2) break;
      writer.append(event);
    }
  }
  writer.append({ type: "completed", payload: { reason: null, result: "done" } });
  writer.close();
  return writer.runId;
}

/**
 * `copies` runs made from one recorded run, each under a new id (its files rewritten), then
 * indexed: recording a thousand runs one by one costs a thousand fsyncs of run.json.
 */
function cloneRuns(home: string, runId: string, copies: number): void {
  const record = Deno.readTextFileSync(`${home}/runs/${runId}/run.json`);
  const events = Deno.readTextFileSync(`${home}/runs/${runId}/events.jsonl`);
  for (let i = 0; i < copies; i++) {
    const id = newId();
    const dir = `${home}/runs/${id}`;
    Deno.mkdirSync(dir, { mode: 0o700 });
    Deno.writeTextFileSync(`${dir}/run.json`, record.replaceAll(runId, id), { mode: 0o600 });
    Deno.writeTextFileSync(`${dir}/events.jsonl`, events.replaceAll(runId, id), { mode: 0o600 });
  }
  using store = openStore(home);
  store.index();
}

const PARSE_ONE = `
const text = Deno.readTextFileSync(Deno.args[0]);
let n = 0;
for (const line of text.split("\\n")) if (line) { JSON.parse(line); n++; }
console.log(n);
`;

const PARSE_ALL = `
const root = Deno.args[0] + "/runs";
let n = 0;
for (const entry of Deno.readDirSync(root)) {
  if (!entry.isDirectory || entry.name.startsWith(".")) continue;
  JSON.parse(Deno.readTextFileSync(root + "/" + entry.name + "/run.json"));
  const text = Deno.readTextFileSync(root + "/" + entry.name + "/events.jsonl");
  for (const line of text.split("\\n")) if (line) { JSON.parse(line); n++; }
}
console.log(n);
`;

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-views-" }));
  try {
    const flagsFor = (home: string) =>
      sourceRunFlags({ home, cwd: dir, netHosts: [], programs: ["sh"] });
    // Output goes to /dev/null: the time to format and write it is ours, reading it is not.
    const reins = (home: string, ...args: string[]) =>
      quietly(
        Deno.execPath(),
        ["run", "--quiet", "--config", CONFIG, ...flagsFor(home), MAIN, ...args],
        { REINS_HOME: home, NO_COLOR: "1" },
      );
    const deno = (script: string, arg: string) =>
      quietly(Deno.execPath(), ["run", "--quiet", `--allow-read=${dir}`, script, arg]);
    Deno.writeTextFileSync(`${dir}/parse_one.ts`, PARSE_ONE);
    Deno.writeTextFileSync(`${dir}/parse_all.ts`, PARSE_ALL);

    // reins show of a 100,000-event run.
    const showHome = `${dir}/show-home`;
    const runId = recordRun(showHome, SHOW_EVENTS);
    const log = `${showHome}/runs/${runId}/events.jsonl`;
    const bytes = Deno.statSync(log).size;
    await reins(showHome, "show", runId); // warm the module cache and the index
    const show = await interleavedMedians(
      TIMES,
      () => reins(showHome, "show", runId),
      () => deno(`${dir}/parse_one.ts`, log),
    );
    compare({
      name: `reins show of a ${SHOW_EVENTS.toLocaleString("en")}-event run (${
        (bytes / 1e6).toFixed(1)
      } MB; validated, formatted, written; whole process)`,
      ours: SHOW_EVENTS / (show.ours / 1000),
      baseline: SHOW_EVENTS / (show.baseline / 1000),
      unit: "events/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "reading and JSON-parsing the same file alone (whole process)",
    });
    figure("reins show of that run", `${show.ours.toFixed(0)} ms`);
    const verbose = await interleavedMedians(
      3,
      () => reins(showHome, "show", runId, "--verbose"),
      () => reins(showHome, "show", runId, "--json"),
    );
    figure("reins show --verbose of that run", `${verbose.ours.toFixed(0)} ms`);
    figure("reins show --json of that run", `${verbose.baseline.toFixed(0)} ms`);

    // reins stats over 1,000 runs.
    const statsHome = `${dir}/stats-home`;
    cloneRuns(statsHome, recordRun(statsHome, 26), STATS_RUNS - 1);
    await reins(statsHome, "stats");
    const stats = await interleavedMedians(
      TIMES,
      () => reins(statsHome, "stats"),
      () => deno(`${dir}/parse_all.ts`, statsHome),
    );
    compare({
      name: `reins stats over ${STATS_RUNS.toLocaleString("en")} runs of 26 events (whole process)`,
      ours: STATS_RUNS / (stats.ours / 1000),
      baseline: STATS_RUNS / (stats.baseline / 1000),
      unit: "runs/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "reading and JSON-parsing their run.json and events.jsonl alone",
    });
    figure(
      `reins stats over ${STATS_RUNS.toLocaleString("en")} runs`,
      `${stats.ours.toFixed(0)} ms`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
