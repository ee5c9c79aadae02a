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

/**
 * The Deno cache this run uses. A benchmark that gives a child reins a temporary HOME passes it
 * on (withDenoCache): under that HOME, Deno's default cache is empty and the registry settings of
 * the real HOME are missing, so the child failed to fetch its npm packages ("Failed caching npm
 * package") on a machine whose packages were not cached already.
 */
export const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;

/** `env` for a child Deno, with the cache of this run (see DENO_DIR). */
export function withDenoCache(env: Record<string, string>): Record<string, string> {
  return { ...env, DENO_DIR };
}

/**
 * Fills this run's Deno cache with what `entry` imports, with this process's own environment (its
 * HOME's registry settings), so that a child started under a temporary HOME finds it all there.
 */
export async function cacheModules(config: string, entry: string): Promise<void> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["cache", "--quiet", "--config", config, entry],
    env: { DENO_DIR },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(`deno cache ${entry} failed: ${new TextDecoder().decode(output.stderr)}`);
  }
}

/** A process's peak resident size in KiB (VmHWM), or null once it is gone. */
function peakKiB(pid: number): number | null {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib); // a zombie has no memory left to tell
  } catch {
    return null; // gone
  }
}

/** Waits for a child's output, polling its peak resident size (KiB) every 10 ms as it runs. */
export async function outputWithPeak(
  child: Deno.ChildProcess,
): Promise<{ output: Deno.CommandOutput; peakKiB: number }> {
  let peak = 0;
  const poll = setInterval(() => {
    peak = Math.max(peak, peakKiB(child.pid) ?? 0);
  }, 10);
  try {
    return { output: await child.output(), peakKiB: peak };
  } finally {
    clearInterval(poll);
  }
}
