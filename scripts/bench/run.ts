// Running sessions: the command driver's recording rate (a program printing 100,000 protocol
// lines as fast as it can, against the same program piped to `wc -l`), and what --context adds
// to a run.
import { against, compare, figure, medianMs, run } from "./_lib.ts";
import { sourceRunFlags } from "../permissions.ts";
import { openStore } from "../../lib/store/store.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const FLOOD = new URL("../../tests/fixtures/agents/flood.sh", import.meta.url).pathname;
const PROTOCOL = new URL("../../tests/fixtures/agents/protocol.sh", import.meta.url).pathname;

export default async function (): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "reins-bench-run-" });
  try {
    const home = `${dir}/home`;
    // A working directory of its own: a turn snapshots its working directory as it starts, and
    // this one must not hold the data root the runs are recorded in.
    const work = `${dir}/work`;
    Deno.mkdirSync(work);
    const flags = sourceRunFlags({
      home,
      cwd: work,
      netHosts: [],
      programs: ["sh"],
    });
    const reins = (...args: string[]) =>
      run(Deno.execPath(), ["run", "--quiet", "--config", CONFIG, ...flags, MAIN, ...args], {
        cwd: work,
        env: { REINS_HOME: home },
      });
    const lines = 100_000;
    await reins("run", "--driver", "command", "--exec", `sh ${FLOOD} 1000`, "warm up");

    const rawStart = performance.now();
    await run("sh", ["-c", `sh ${FLOOD} ${lines} | wc -l`]);
    const rawRate = lines / ((performance.now() - rawStart) / 1000);

    const start = performance.now();
    await reins("run", "--driver", "command", "--exec", `sh ${FLOOD} ${lines}`, "--quiet", "flood");
    const seconds = (performance.now() - start) / 1000;
    const rate = lines / seconds;
    against({
      name: "command driver recording (validated, sequenced, appended; whole reins run)",
      value: rate,
      unit: "events/s",
      goal: ">= 50000",
      context: `the same program | wc -l: ${rawRate.toFixed(0)} lines/s`,
    });

    // In process: what resolving and remembering a context costs a run.
    using benchStore = openStore(home);
    const contexts = benchStore.contexts;
    const session = {
      sessionId: "s",
      nativeSessionId: null,
      harness: "command",
      driver: "command",
    };
    contexts.put("bench-in-process", session);
    const perTurn = await medianMs(200, () => {
      using store = openStore(home);
      const map = store.contexts;
      map.get("bench-in-process");
      map.put("bench-in-process", session);
    });
    figure(
      "context lookup + harness-session.json rewrite, in process (goal <= 5 ms)",
      `${perTurn.toFixed(2)} ms`,
    );

    const exec = ["--driver", "command", "--exec", `sh ${PROTOCOL}`, "--quiet"];
    await reins("run", ...exec, "--context", "bench", "warm");
    // Alternate the two so that whatever else the machine does weighs on both alike.
    const plainTimes: number[] = [];
    const contextTimes: number[] = [];
    for (let i = 0; i < 15; i++) {
      plainTimes.push(await medianMs(1, () => reins("run", ...exec, "a turn")));
      contextTimes.push(
        await medianMs(1, () => reins("run", ...exec, "--context", "bench", "a turn")),
      );
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const plain = median(plainTimes);
    const withContext = median(contextTimes);
    compare({
      name: "a run with --context (resume lookup + harness-session.json rewrite)",
      ours: withContext,
      baseline: plain,
      unit: "ms",
      better: "lower",
      goal: "<= 1.1",
      baselineName: "the same run without --context",
    });
    figure(
      "time --context adds to a whole reins run (goal <= 5 ms)",
      `${(withContext - plain).toFixed(1)} ms`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
