// The turn engine's costs (issue 11): a whole `reins run` against a Deno script that only spawns
// the same program, its slowest run against its median; many turns at once in one process (what
// suites and servers do), every run checked complete and valid; and reins around a real agent CLI
// against the same CLI run directly. Each baseline is measured in the same run, turn about with
// ours, so that whatever else the machine does weighs on both alike.
import { compare, figure } from "./_lib.ts";
import { BINARY_V8_FLAGS, bundleRunFlags, type Sandbox, sourceRunFlags } from "../permissions.ts";
import { buildBundle } from "../bundle.ts";
import { claudeTurn } from "./_claude_turn.ts";
import {
  validateClaudeLine,
  validateCodexLine,
  validateGeminiLine,
  validateOpencodeLine,
} from "../../lib/drivers/wire_checks.gen.ts";
import { text } from "../../tests/fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../../tests/fixtures/fake_anthropic.ts";
import { ensureCli } from "../../tests/interop/_install.ts";
import { makeScratch } from "../../tests/interop/_scratch.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CLAUDE_TURN = new URL("./_claude_turn.ts", import.meta.url).pathname;
const TURNS = new URL("./_turns.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const RUNS = 50;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

async function ok(command: Deno.Command): Promise<void> {
  const output = await command.output();
  if (!output.success) {
    throw new Error(`exit ${output.code}: ${new TextDecoder().decode(output.stderr).slice(-400)}`);
  }
}

/**
 * How reins is started: from the sources (main.ts, as a checkout's launcher runs it) or from the
 * bundle `deno task compile` compiles into the binary (scripts/bundle.ts), under the binary's
 * sandbox flags (and, for the bundle, its V8 flags) — plus the reading of its code, which the
 * binary embeds.
 */
interface Code {
  /** Its data roots' suffix. */
  key: "source" | "bundle";
  name: string;
  args(sandbox: Sandbox): string[];
  /**
   * Its environment's additions. The bundle's V8 flags get a Deno cache of their own (as the
   * binary has): V8 refuses a code cache made under other flags and Deno then makes it anew, so
   * runs with and without them in one cache would keep remaking each other's caches of Deno's own
   * modules — measured, a script spawning `true` took ~40 ms instead of ~26 ms that way.
   */
  env: Record<string, string>;
}

async function codes(dir: string): Promise<{ source: Code; bundle: Code }> {
  const outdir = `${dir}/bundle`;
  const entry = await buildBundle({ outdir });
  return {
    source: {
      key: "source",
      name: "from the sources",
      args: (sandbox) => ["run", "--quiet", "--config", CONFIG, ...sourceRunFlags(sandbox), MAIN],
      env: {},
    },
    bundle: {
      key: "bundle",
      name: "the bundle the binary is compiled from",
      args: (sandbox) => [
        "run",
        "--quiet",
        "--config",
        CONFIG,
        ...bundleRunFlags(sandbox, outdir),
        entry,
      ],
      env: { DENO_DIR: `${dir}/deno-cache-binary-flags` },
    },
  };
}

/** A whole `reins run --driver command --exec true hello` against a script spawning `true`. */
async function wholeRun(dir: string, { source, bundle }: { source: Code; bundle: Code }) {
  // A working directory of its own, empty: a turn snapshots its working directory as it starts.
  const work = `${dir}/run-work`;
  Deno.mkdirSync(work);
  const reinsFrom = (code: Code) => {
    const home = `${dir}/run-home-${code.key}`;
    const args = code.args({ home, cwd: work, netHosts: [], programs: ["true"] })
      .concat(["run", "--driver", "command", "--exec", "true", "hello"]);
    return () =>
      ok(
        new Deno.Command(Deno.execPath(), {
          args,
          cwd: work,
          env: { REINS_HOME: home, ...code.env },
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }),
      );
  };
  const fromSource = reinsFrom(source);
  const fromBundle = reinsFrom(bundle);
  Deno.writeTextFileSync(`${dir}/spawn.ts`, 'await new Deno.Command("true").output();\n');
  // Under the binary's V8 flags too, so that the comparison is of the work and not of the flags.
  const raw = () =>
    ok(
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", BINARY_V8_FLAGS, "--allow-run=true", `${dir}/spawn.ts`],
        cwd: work,
        env: bundle.env,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }),
    );
  // Data roots of 50 runs, and the module caches warm.
  for (let i = 0; i < RUNS; i++) {
    await fromSource();
    await fromBundle();
  }
  await raw();
  const ours = { source: [] as number[], bundle: [] as number[] };
  const baseline: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    baseline.push(await timed(raw));
    ours.bundle.push(await timed(fromBundle));
    ours.source.push(await timed(fromSource));
  }
  const name =
    "a whole reins run --driver command --exec true hello (sandbox flags, 50-run data root)";
  compare({
    name: `${name}, ${bundle.name}`,
    ours: median(ours.bundle),
    baseline: median(baseline),
    unit: "ms",
    better: "lower",
    goal: "<= 1.6",
    baselineName: "a Deno script that only spawns true (the same V8 flags)",
  });
  compare({
    name: `the slowest of ${RUNS} such reins runs`,
    ours: Math.max(...ours.bundle),
    baseline: median(ours.bundle),
    unit: "ms",
    better: "lower",
    goal: "<= 2",
    baselineName: "their median",
  });
  figure(
    `the same, ${source.name}`,
    `${median(ours.source).toFixed(2)} ms = ${
      (median(ours.source) / median(baseline)).toFixed(2)
    }× the script; slowest ${Math.max(...ours.source).toFixed(2)} ms`,
  );
}

/**
 * 200 one-turn command runs, 8 at a time, in one process under the binary's sandbox flags (not
 * --allow-all: there agents start as the binary starts them), against 200 spawns of the same
 * program, 8 at a time, in the same process right after (_turns.ts). Three rounds; the median
 * ratio, with each round's.
 */
async function turnsInOneProcess(dir: string): Promise<void> {
  const count = 200;
  const width = 8;
  const rounds: {
    turns: number;
    spawns: number;
    turnCpuMs: number;
    spawnCpuMs: number;
    turnUserMs: number;
    turnSystemMs: number;
  }[] = [];
  for (let round = 0; round < 3; round++) {
    const home = `${dir}/turns-home-${round}`;
    const cwd = `${dir}/turns-cwd-${round}`;
    Deno.mkdirSync(cwd, { recursive: true });
    const flags = sourceRunFlags({ home, cwd, netHosts: [], programs: ["true"] }).map((flag) =>
      flag.startsWith("--allow-read=") ? `${flag},${TURNS}` : flag
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--config",
        CONFIG,
        ...flags,
        TURNS,
        home,
        cwd,
        `${count}`,
        `${width}`,
      ],
      cwd,
      env: { REINS_HOME: home },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`_turns.ts: ${new TextDecoder().decode(output.stderr).slice(-600)}`);
    }
    rounds.push(JSON.parse(new TextDecoder().decode(output.stdout)));
    await settleDisk();
  }
  const ratios = rounds.map((r) => r.turns / r.spawns);
  const middle = rounds[ratios.indexOf(median(ratios))];
  compare({
    name:
      `${count} one-turn command runs on ${count} contexts, ${width} at a time, in one process under the binary's flags`,
    ours: middle.turns,
    baseline: middle.spawns,
    unit: "/s",
    better: "higher",
    goal: ">= 0.3",
    baselineName:
      `${count} spawns of the same program, ${width} at a time, in that process, in rounds between`,
  });
  figure(
    "the three rounds (turns/s against spawns/s)",
    rounds.map((r) =>
      `${r.turns.toFixed(0)}/${r.spawns.toFixed(0)} = ${(r.turns / r.spawns).toFixed(2)}×`
    )
      .join("; ") + "; every run complete and valid",
  );
  figure(
    "CPU time of that process per turn against per bare spawn (median round)",
    `${middle.turnCpuMs.toFixed(2)} ms (user ${middle.turnUserMs.toFixed(2)}, system ${
      middle.turnSystemMs.toFixed(2)
    }) against ${middle.spawnCpuMs.toFixed(2)} ms`,
  );
  figure(
    "what each turn writes and syncs",
    'see docs/engine.md, "What a turn writes and syncs"',
  );
}

/** `reins run --driver claude` against the same `claude -p … --output-format stream-json`. */
async function aroundClaude(
  dir: string,
  { source, bundle }: { source: Code; bundle: Code },
): Promise<void> {
  const installed = await ensureCli("claude");
  if (installed.program === null) {
    figure("reins around real Claude Code", `skipped: ${installed.skip}`);
    return;
  }
  const program = installed.program;
  const times = 21;
  await using server = startFakeAnthropic(() => text("The answer."));
  await using scratch = await makeScratch("claude", server.url);
  const home = `${dir}/claude-home`;
  Deno.mkdirSync(home, { recursive: true });
  const sandbox = { home, cwd: scratch.cwd, netHosts: [], programs: [program] };
  const env = { ...scratch.env, REINS_HOME: home, REINS_CLAUDE_BIN: program };
  const via = (code: Code) => () =>
    ok(
      new Deno.Command(Deno.execPath(), {
        args: code.args(sandbox).concat(["run", "--driver", "claude", "hello"]),
        cwd: scratch.cwd,
        clearEnv: true,
        env: { ...env, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...code.env },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }),
    );
  const viaSource = via(source);
  const viaBundle = via(bundle);
  const turnEnv = { ...scratch.env, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" };
  const direct = () => claudeTurn(program, scratch.cwd, turnEnv);
  // The same turn from a Deno process of its own, under the binary's V8 flags: what any Deno
  // program around the CLI pays (Deno's start, its process support loading, its exit).
  const wrapped = () =>
    ok(
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          BINARY_V8_FLAGS,
          `--allow-run=${program}`,
          "--allow-env",
          CLAUDE_TURN,
          program,
          scratch.cwd,
        ],
        cwd: scratch.cwd,
        clearEnv: true,
        env: { ...turnEnv, ...bundle.env },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }),
    );
  await viaSource();
  await viaBundle();
  await direct();
  await wrapped();
  const ours = { source: [] as number[], bundle: [] as number[] };
  const baseline: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < times; i++) {
    baseline.push(await timed(direct));
    ours.bundle.push(await timed(viaBundle));
    ours.source.push(await timed(viaSource));
    floor.push(await timed(wrapped));
  }
  compare({
    name: `reins run --driver claude against a local fake model (whole process, ${bundle.name})`,
    ours: median(ours.bundle),
    baseline: median(baseline),
    unit: "ms",
    better: "lower",
    goal: "<= 1.08",
    baselineName: "the same claude -p --output-format stream-json turn run directly",
  });
  figure(
    `the same, ${source.name}`,
    `${median(ours.source).toFixed(0)} ms = ${
      (median(ours.source) / median(baseline)).toFixed(2)
    }× the direct run`,
  );
  figure(
    "the same turn from a Deno script that does nothing else (the floor of any Deno program)",
    `${median(floor).toFixed(0)} ms = ${
      (median(floor) / median(baseline)).toFixed(2)
    }× the direct run`,
  );
}

/** Lines as the harness CLIs write them (shortened from recordings), with their validators. */
const WIRE_LINES: [Record<string, (value: unknown) => unknown>, Record<string, unknown>][] = [
  [validateClaudeLine, {
    type: "assistant",
    session_id: "2f7c",
    parent_tool_use_id: null,
    message: {
      id: "msg_01",
      model: "claude-sonnet",
      content: [
        { type: "text", text: "I'll list the files first. ".repeat(6) },
        { type: "tool_use", id: "toolu_01", name: "Bash", input: { command: "ls -la" } },
      ],
      usage: { input_tokens: 1200, output_tokens: 80 },
    },
  }],
  [validateClaudeLine, {
    type: "user",
    message: {
      content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "a.ts\n".repeat(40) }],
    },
  }],
  [validateCodexLine, {
    type: "item.completed",
    item: {
      id: "item_0",
      type: "command_execution",
      command: "/bin/bash -lc ls",
      aggregated_output: "a.ts\n".repeat(40),
      exit_code: 0,
      status: "completed",
    },
  }],
  [validateGeminiLine, {
    type: "message",
    role: "assistant",
    content: "Listing the files. ".repeat(6),
    delta: true,
  }],
  [validateOpencodeLine, {
    type: "step_finish",
    sessionID: "ses_1",
    part: {
      type: "step-finish",
      cost: 0.001,
      tokens: { input: 40, output: 6, reasoning: 0, cache: { read: 8, write: 0 } },
    },
  }],
];

/**
 * What the wire schemas cost the reading of a harness's lines: lines parsed and checked against
 * parsed alone (what the str/num/obj helpers added was next to nothing).
 */
export function wireChecks(): void {
  const count = 100_000;
  const texts = WIRE_LINES.map(([, line]) => JSON.stringify(line));
  const parseAll = (check: boolean) => {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const k = i % texts.length;
      const value = JSON.parse(texts[k]);
      if (check) {
        const validators = WIRE_LINES[k][0];
        if (validators[value.type](value) !== null) throw new Error(`${texts[k]} is refused`);
      }
    }
    return count / ((performance.now() - start) / 1000);
  };
  parseAll(true); // warm up
  const rates = { ours: [] as number[], baseline: [] as number[] };
  for (let i = 0; i < 5; i++) {
    rates.baseline.push(parseAll(false));
    rates.ours.push(parseAll(true));
  }
  compare({
    name: `${
      count.toLocaleString("en")
    } harness lines parsed and checked against their wire schemas`,
    ours: median(rates.ours),
    baseline: median(rates.baseline),
    unit: "lines/s",
    better: "higher",
    goal: ">= 0.5",
    baselineName: "the same lines only parsed",
  });
}

/**
 * Flushes what the parts before wrote (the bundle, 100 whole runs, 200 runs), so that its writeback
 * does not land on the fsyncs of reins's runs in the part that follows, which the scripts they are
 * compared with do not make.
 */
async function settleDisk(): Promise<void> {
  await new Deno.Command("sync", { stdin: "null", stdout: "null", stderr: "null" }).output()
    .catch(() => {});
}

/** BENCH_ENGINE=whole,turns,claude,wire runs only those parts (all by default). */
function part(name: string): boolean {
  const only = Deno.env.get("BENCH_ENGINE");
  return !only || only.split(",").includes(name);
}

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-engine-" }));
  try {
    if (part("wire")) wireChecks();
    const code = await codes(dir);
    await settleDisk();
    if (part("whole")) await wholeRun(dir, code);
    await settleDisk();
    if (part("turns")) await turnsInOneProcess(dir);
    await settleDisk();
    if (part("claude")) await aroundClaude(dir, code);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
