// What loading a module costs a fresh reins process: the figures the comments on the start-up
// path quote when they keep a module off it (zod, yaml, node:util, node:path, node:crypto, the
// Node `process` and timers, an npm module), measured here rather than remembered. Each is timed
// inside a fresh `deno run` with reins's config, from just before its first use to just after
// (a dynamic import whose specifier Deno cannot see ahead, so that loading it is inside the
// timing), median of several processes after one that fills the caches. A tiny local module is
// the floor. These are figures, not goals: what a module costs is why it is kept off a path.
import { figure, run } from "./_lib.ts";

const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const MAIN = new URL("../../lib/cli/main.ts", import.meta.url).href;
const TIMES = 9;

/**
 * The probe: uses `what` once, prints the milliseconds it took, of the wall clock and of the main
 * thread's CPU (/proc/thread-self/schedstat, in ns): on a busy machine the first grows with what
 * else runs, the second much less.
 */
const PROBE = `
const cpuNs = () => Number(Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ")[0]);
const what = Deno.args[0];
const cpu = cpuNs();
const start = performance.now();
if (what === "first clearTimeout") clearTimeout(undefined);
else if (what === "the Node process global") (globalThis as { process?: unknown }).process;
else await import(what);
const wall = performance.now() - start;
console.log(JSON.stringify({ wall, cpu: (cpuNs() - cpu) / 1e6 }));
`;

export const STARTUP_COSTS: [label: string, what: string][] = [
  ["a tiny local module (the floor)", "./tiny.ts"],
  ["zod", "zod"],
  ["yaml (an npm module)", "yaml"],
  ["node:util", "node:util"],
  ["node:path", "node:path"],
  ["node:crypto", "node:crypto"],
  ["node:sqlite", "node:sqlite"],
  ["the Node process global (what process.getBuiltinModule needs)", "the Node process global"],
  ["the first clearTimeout (Deno's Node timers)", "first clearTimeout"],
  ["lib/cli/main.ts (the command table; commands load lazily)", MAIN],
];

export default async function (): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "reins-bench-startup-" });
  try {
    Deno.writeTextFileSync(`${dir}/probe.ts`, PROBE);
    Deno.writeTextFileSync(`${dir}/tiny.ts`, "export const tiny = 1;\n");
    const probe = async (what: string) => {
      const output = await run(Deno.execPath(), [
        "run",
        "--quiet",
        "-A",
        "--config",
        CONFIG,
        `${dir}/probe.ts`,
        what,
      ], { cwd: dir });
      return JSON.parse(new TextDecoder().decode(output.stdout)) as { wall: number; cpu: number };
    };
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
    for (const [label, what] of STARTUP_COSTS) {
      await probe(what); // fills the module and code caches
      const times: { wall: number; cpu: number }[] = [];
      for (let i = 0; i < TIMES; i++) times.push(await probe(what));
      const wall = median(times.map((time) => time.wall));
      const cpu = median(times.map((time) => time.cpu));
      figure(
        `loading ${label}`,
        `${wall.toFixed(1)} ms wall, ${cpu.toFixed(1)} ms of main-thread CPU (medians of ${TIMES})`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
