// Foundation benchmarks: `reins --version` start-up against an empty `deno run`, and the rate of
// OpenLogs.append / PrivateLog.append against a raw writeSync loop on the same file.
import { compare, medianMs, run } from "./_lib.ts";
import { OpenLogs, PrivateLog } from "../../lib/core/private_log.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

export default async function (): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "reins-bench-core-" });
  try {
    const empty = `${dir}/empty.ts`;
    await Deno.writeTextFile(empty, "");
    const deno = Deno.execPath();
    const env = { REINS_HOME: `${dir}/home` };
    // Warm both (module cache, page cache) before timing.
    await run(deno, ["run", "--quiet", empty]);
    await run(deno, ["run", "--quiet", "-A", "--config", CONFIG, MAIN, "--version"], { env });
    const baseline = await medianMs(15, () => run(deno, ["run", "--quiet", empty]));
    const ours = await medianMs(
      15,
      () => run(deno, ["run", "--quiet", "-A", "--config", CONFIG, MAIN, "--version"], { env }),
    );
    compare({
      name: "reins --version start-up",
      ours,
      baseline,
      unit: "ms",
      better: "lower",
      goal: "<= 1.5",
      baselineName: "empty deno run",
    });

    const line = JSON.stringify({ type: "message.delta", payload: { text: "x".repeat(150) } });
    const lines = 50_000;
    // The baseline is the least a writer of string lines can do: encode into a reused buffer,
    // one writeSync per line, no lock, no checks.
    const encoder = new TextEncoder();
    const buffer = new Uint8Array(line.length * 3 + 1);
    const rawPath = `${dir}/raw.jsonl`;
    const rawStart = performance.now();
    const raw = Deno.openSync(rawPath, { append: true, create: true });
    for (let i = 0; i < lines; i++) {
      const { written } = encoder.encodeInto(line, buffer);
      buffer[written] = 0x0a;
      raw.writeSync(buffer.subarray(0, written + 1));
    }
    raw.close();
    const rawRate = lines / ((performance.now() - rawStart) / 1000);

    const root = `${dir}/home`;
    const logStart = performance.now();
    const log = PrivateLog.open(root, `${root}/log.jsonl`);
    for (let i = 0; i < lines; i++) log.append(line);
    log.close();
    const logRate = lines / ((performance.now() - logStart) / 1000);
    compare({
      name: "PrivateLog.append (locked, torn-tail checked, kept open)",
      ours: logRate,
      baseline: rawRate,
      unit: "lines/s",
      better: "higher",
      goal: ">= 0.3",
      baselineName: "raw writeSync loop",
    });

    const logs = new OpenLogs(root);
    const oneStart = performance.now();
    for (let i = 0; i < lines; i++) logs.append(`${root}/one.jsonl`, line);
    const oneRate = lines / ((performance.now() - oneStart) / 1000);
    logs.close();
    compare({
      name: "OpenLogs.append (locked, torn-tail checked, handle kept)",
      ours: oneRate,
      baseline: rawRate,
      unit: "lines/s",
      better: "higher",
      goal: ">= 0.3",
      baselineName: "raw writeSync loop",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
