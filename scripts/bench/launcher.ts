// The launcher a checkout installs (scripts/reins.sh, issue 24): `reins --version` and a whole
// trivial run through it, once its cache holds their flags, against main.ts run directly under
// the very flags the launcher gave it (the same environment, REINS_SANDBOX included) — what the
// launcher costs beyond the Deno it starts. Turn about, so the machine's other load weighs on both
// alike. The first start of a command line (its flags computed by a Deno of their own, then
// stored) and `deno task reins` are figures: no goal holds them.
import { compare, figure } from "./_lib.ts";
import { ALLOW_ENV } from "../launcher_cache.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const MAIN = `${REPO}main.ts`;
const CONFIG = `${REPO}deno.json`;
const RUNS = 60;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

/** The CPU this process's waited-for children have used, theirs included, in ms (/proc/self/stat). */
function childrenCpuMs(): number {
  const fields = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  // cutime and cstime, fields 16 and 17 of proc(5), counted from field 3: in ticks of 10 ms.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

async function timed(
  program: string,
  args: string[],
  options: { cwd: string; env: Record<string, string> },
): Promise<number> {
  const start = performance.now();
  const output = await new Deno.Command(program, {
    args,
    cwd: options.cwd,
    clearEnv: true,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const ms = performance.now() - start;
  if (!output.success) {
    throw new Error(
      `${program} ${args.join(" ")} exited ${output.code}: ${
        new TextDecoder().decode(output.stderr).slice(-400)
      }`,
    );
  }
  return ms;
}

/** The flags and REINS_SANDBOX of the only entry in the cache, as reins.sh runs main.ts. */
function cachedFlags(cache: string): { flags: string[]; origin: string; entry: string } {
  const names = [...Deno.readDirSync(cache)].map((entry) => entry.name);
  if (names.length !== 1) throw new Error(`expected one cache entry, found ${names.length}`);
  const entry = `${cache}/${names[0]}`;
  const lines = Deno.readTextFileSync(entry).trimEnd().split("\n");
  return {
    flags: [
      ...lines.flatMap((line) =>
        line === "env" ? [ALLOW_ENV] : line.startsWith("--") ? [line] : []
      ),
      `--allow-read=${entry}`,
      "--allow-env=REINS_LAUNCHER_CACHE",
    ],
    origin: lines.find((line) => line.startsWith("origin "))!.slice("origin ".length),
    entry,
  };
}

export default async function (): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-launcher-" }));
  try {
    const home = `${root}/home`;
    const work = `${root}/work`;
    const bin = `${root}/bin`;
    for (const dir of [home, work, bin]) Deno.mkdirSync(dir);
    const env: Record<string, string> = {
      HOME: home,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: Deno.env.get("DENO_DIR") ||
        `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`,
      NO_COLOR: "1",
    };
    await timed(Deno.execPath(), ["task", "--quiet", "install", "--dir", bin], {
      cwd: REPO,
      env,
    });
    const reins = `${bin}/reins`;
    const cache = `${home}/.cache/reins/launcher`;
    const cases: [string, string[]][] = [
      ["reins --version", ["--version"]],
      ["a whole trivial reins run", ["run", "--driver", "command", "--exec", "true", "hello"]],
    ];
    for (const [name, args] of cases) {
      await Deno.remove(cache, { recursive: true }).catch(() => {});
      // The first start computes the flags and stores them; the ones after find them.
      const first = await timed(reins, args, { cwd: work, env });
      const { flags, origin, entry } = cachedFlags(cache);
      const direct = ["run", "--quiet", "--config", CONFIG, ...flags, MAIN, ...args];
      // The environment reins.sh gives main.ts: the same work for the Deno on both sides.
      const directEnv = {
        ...env,
        REINS_SANDBOX: origin,
        REINS_LAUNCHER_CACHE: entry,
        DENO_NO_UPDATE_CHECK: "1",
      };
      await timed(Deno.execPath(), direct, { cwd: work, env: directEnv });
      const ours: number[] = [];
      const baseline: number[] = [];
      const cpu = { ours: 0, baseline: 0 };
      for (let i = 0; i < RUNS; i++) {
        let before = childrenCpuMs();
        ours.push(await timed(reins, args, { cwd: work, env }));
        cpu.ours += childrenCpuMs() - before;
        before = childrenCpuMs();
        baseline.push(await timed(Deno.execPath(), direct, { cwd: work, env: directEnv }));
        cpu.baseline += childrenCpuMs() - before;
      }
      compare({
        name: `${name} through the installed launcher (its flags cached)`,
        ours: median(ours),
        baseline: median(baseline),
        unit: "ms",
        better: "lower",
        goal: "<= 1.3",
        baselineName: "main.ts run directly under the same flags",
      });
      // Less swayed by what else the machine runs than the wall clock: a busy machine makes each
      // process the launcher adds (a shell, sha256sum) wait for a core.
      figure(
        `${name}: CPU used, the launcher's / main.ts's`,
        `${(cpu.ours / RUNS).toFixed(1)} ms / ${(cpu.baseline / RUNS).toFixed(1)} ms = ${
          (cpu.ours / cpu.baseline).toFixed(2)
        }× (means of ${RUNS}, children included)`,
      );
      figure(
        `${name}, the launcher's first start of it (the flags computed, then stored)`,
        `${first.toFixed(1)} ms`,
      );
    }
    const task: number[] = [];
    for (let i = 0; i < 9; i++) {
      task.push(
        await timed(Deno.execPath(), ["task", "--quiet", "reins", "--version"], {
          cwd: REPO,
          env,
        }),
      );
    }
    figure(
      "deno task reins --version (the task runner's Deno, then main.ts's)",
      `${median(task).toFixed(1)} ms (median of 9)`,
    );
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}
