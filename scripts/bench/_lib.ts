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

/** Every comparison printed so far, with whether it met its goal. */
export const results: (Comparison & { met: boolean })[] = [];

/** Records and prints one comparison. */
export function compare(c: Comparison): void {
  const ratio = c.ours / c.baseline;
  const [op, limit] = c.goal.split(/\s+/);
  const met = op === ">=" ? ratio >= Number(limit) : ratio <= Number(limit);
  results.push({ ...c, met });
  const fmt = (n: number) => n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3);
  console.log(
    `${met ? "ok  " : "MISS"} ${c.name}: ${fmt(c.ours)} ${c.unit} vs ${c.baselineName} ${
      fmt(c.baseline)
    } ${c.unit} = ${ratio.toFixed(2)}× (goal ${c.goal}×)`,
  );
}

/**
 * Prints a figure held to an absolute goal (a rate the issue names in turns per second, say),
 * with whether it is met, and counts it with the comparisons.
 */
export function against(
  c: { name: string; value: number; unit: string; goal: string; context: string },
): void {
  const [op, limit] = c.goal.split(/\s+/);
  const met = op === ">=" ? c.value >= Number(limit) : c.value <= Number(limit);
  results.push({
    name: c.name,
    ours: c.value,
    baseline: 1,
    unit: c.unit,
    better: op === ">=" ? "higher" : "lower",
    goal: c.goal,
    baselineName: "an absolute goal",
    met,
  });
  const shown = c.value >= 100 ? c.value.toFixed(0) : c.value.toFixed(2);
  console.log(
    `${
      met ? "ok  " : "MISS"
    } ${c.name}: ${shown} ${c.unit} (goal ${c.goal} ${c.unit}; ${c.context})`,
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
