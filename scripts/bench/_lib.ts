// Shared pieces of the benchmarks: timing, a raw baseline measured in the same run, and one
// printed line per comparison (ratio to the baseline and the goal it is held to).

export interface Comparison {
  name: string;
  /** What ours measured, in the unit given. */
  ours: number;
  baseline: number;
  unit: string;
  /** "higher" when a bigger number is better (rates), "lower" for times. */
  better: "higher" | "lower";
  /** The goal on ours/baseline (rates) or ours/baseline (times): e.g. ">= 0.5" or "<= 1.5". */
  goal: string;
  baselineName: string;
}

export const results: Comparison[] = [];

/** Records and prints one comparison. */
export function compare(c: Comparison): void {
  results.push(c);
  const ratio = c.ours / c.baseline;
  const [op, limit] = c.goal.split(/\s+/);
  const met = op === ">=" ? ratio >= Number(limit) : ratio <= Number(limit);
  const fmt = (n: number) => n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3);
  console.log(
    `${met ? "ok  " : "MISS"} ${c.name}: ${fmt(c.ours)} ${c.unit} vs ${c.baselineName} ${
      fmt(c.baseline)
    } ${c.unit} = ${ratio.toFixed(2)}× (goal ${c.goal}×)`,
  );
}

/** Prints a plain figure that has no baseline (a memory peak, a rate with an absolute goal). */
export function figure(name: string, value: string): void {
  console.log(`     ${name}: ${value}`);
}

/** Median wall time in ms of `runs` calls of `fn`. */
export async function medianMs(
  runs: number,
  fn: () => unknown | Promise<unknown>,
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** Runs a command to completion, failing loudly on a non-zero exit. */
export async function run(
  program: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; stdin?: "null" | "piped" } = {},
): Promise<Deno.CommandOutput> {
  const output = await new Deno.Command(program, {
    args,
    cwd: options.cwd,
    env: options.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(
      `${program} ${args.join(" ")} exited ${output.code}: ${
        new TextDecoder().decode(output.stderr).slice(-500)
      }`,
    );
  }
  return output;
}
