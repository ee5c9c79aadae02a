// `reins suite compare` of two 3,200-cell suite runs (800 scenarios × 4 epochs, three checks each,
// synthetic state files as the runner writes them) against a raw read and JSON.parse of the same
// two runs' files, in the same process and run: the comparison (reading through the state files'
// checks, cells, Fisher per scenario, the JSON it prints) should cost at most 2× reading them.
// `deno task bench compare` runs it alone.
import { compare, figure, medianMs } from "./_lib.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { compareSuiteRuns } from "../../lib/cli/suite_compare.ts";
import type { Instance, ScenarioState, SuiteRunFile } from "../../lib/suite/state.ts";
import type { CheckResult } from "../../lib/suite/results.ts";

const SCENARIOS = 800;
const EPOCHS = 4;

function checks(pass: boolean): CheckResult[] {
  const one = (name: string, kind: CheckResult["kind"], met: boolean): CheckResult => ({
    name,
    kind,
    outcome: met ? "passed" : "failed",
    met,
    checkpoint: true,
    detail: met
      ? `the final answer matches /answer to/: "answer to the question about ${name}"`
      : `the final answer does not match /answer to/: "I cannot help with ${name}"`,
    score: null,
    by: null,
    reason: null,
  });
  return [one("says", "regex", pass), one("file", "file", true), one("cost", "cost", true)];
}

/** Writes a suite run as the runner leaves it: its header and one state file per cell. */
function writeRun(root: DataRoot, id: string, failEvery: number): void {
  const dir = root.layout.suite(id);
  root.ensureDir(`${dir}/scenarios`);
  const instances: Instance[] = [];
  const now = new Date().toISOString();
  for (let s = 0; s < SCENARIOS; s++) {
    for (let e = 1; e <= EPOCHS; e++) {
      const instance = { id: `s${s}.${e}`, key: `s${s}`, repeat: e, agent: null, index: s };
      instances.push(instance);
      const pass = (s * EPOCHS + e) % failEvery !== 0;
      const state: ScenarioState = {
        type: "reins.suite-scenario",
        version: 1,
        instance,
        name: `scenario ${s}`,
        status: pass ? "passed" : "failed",
        reason: null,
        attempts: [{
          attempt: 1,
          startedAt: now,
          endedAt: now,
          status: pass ? "passed" : "failed",
          reason: null,
          runIds: [`01J${s}X${e}RUNID0000000000`],
          workdir: pass ? null : `/tmp/suite-${id}-s${s}`,
        }],
        runIds: [`01J${s}X${e}RUNID0000000000`],
        turns: 1,
        costUsd: 0.0012 * (1 + (s % 7)),
        durationMs: 800 + ((s * 31 + e) % 400),
        checks: checks(pass),
        ended: "the 1 scripted turns were said",
        startedAt: now,
        endedAt: now,
      };
      root.writeFileAtomic(
        `${dir}/scenarios/${instance.id}.json`,
        `${JSON.stringify(state, null, 2)}\n`,
      );
    }
  }
  const header: SuiteRunFile = {
    type: "reins.suite-run",
    version: 1,
    id,
    suite: "bench",
    file: "/bench/suite.yaml",
    digest: "0".repeat(64),
    createdAt: now,
    updatedAt: now,
    options: {
      jobs: 8,
      filter: null,
      repeat: EPOCHS,
      agents: null,
      report: false,
      shard: null,
      rerunOf: null,
    },
    instances,
    state: "finished",
    finishedAt: now,
    sessions: [{ pid: 1, startedAt: now, endedAt: now, resumed: false }],
    report: null,
    reports: {},
  };
  root.writeFileAtomic(`${dir}/suite-run.json`, `${JSON.stringify(header, null, 2)}\n`);
}

export default async function (): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "reins-bench-compare-" });
  try {
    await Deno.chmod(home, 0o700);
    using root = new DataRoot(home);
    // Ids as reins makes them (time-ordered), so suite list and resolve see them.
    const { newId } = await import("../../lib/core/ids.ts");
    const ids = [newId(), newId()];
    writeRun(root, ids[0], 23);
    writeRun(root, ids[1], 11);
    const files = ids.flatMap((id) => {
      const dir = root.layout.suite(id);
      return [
        `${dir}/suite-run.json`,
        ...[...Deno.readDirSync(`${dir}/scenarios`)].map((e) => `${dir}/scenarios/${e.name}`),
      ];
    });
    const raw = () => {
      let parsed = 0;
      for (const file of files) parsed += JSON.parse(Deno.readTextFileSync(file)) ? 1 : 0;
      return parsed;
    };
    let printed = 0;
    const ours = () => {
      const { comparison } = compareSuiteRuns(root, ids, []);
      printed = JSON.stringify(comparison).length;
    };
    // Warm both (the page cache, the JIT), then take medians, the two taken in turns so that a
    // busy machine weighs on both alike.
    raw();
    ours();
    const times = { raw: [] as number[], ours: [] as number[] };
    for (let i = 0; i < 9; i++) {
      times.raw.push(await medianMs(1, raw));
      times.ours.push(await medianMs(1, ours));
    }
    const median = (list: number[]) => list.sort((x, y) => x - y)[Math.floor(list.length / 2)];
    const baseline = median(times.raw);
    const measured = median(times.ours);
    figure(
      "compare inputs",
      `${files.length} files, 2 × ${SCENARIOS * EPOCHS} cells; the JSON printed ${
        (printed / 1024).toFixed(0)
      } KiB`,
    );
    compare({
      name: `suite compare of two ${SCENARIOS * EPOCHS}-cell runs`,
      ours: measured,
      baseline,
      unit: "ms",
      better: "lower",
      goal: "<= 2",
      baselineName: "a raw read and JSON.parse of their files",
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}
