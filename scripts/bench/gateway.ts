// The model gateway's costs (issue 23), each against the same thing without it, measured in the
// same run: a whole Claude Code turn through `reins run` (the gateway on) against a Deno script
// that does only the same turn; the time to the first byte of a streamed answer through the
// gateway against the same stream read directly (median of 50); a 10 MB SSE stream's throughput
// through it against directly; and the gateway's memory as a 100 MB stream passes.
import { against, compare, figure } from "./_lib.ts";
import type { Read } from "./_stream_client.ts";
import { BINARY_V8_FLAGS, bundleRunFlags, type Sandbox } from "../permissions.ts";
import { buildBundle } from "../bundle.ts";
import { BudgetLedger } from "../../lib/core/budget.ts";
import { newId } from "../../lib/core/ids.ts";
import { NO_PROXY_SETTINGS } from "../../lib/net/route.ts";
import { bindTurn, type GatewayBinding } from "../../lib/gateway/mod.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { text } from "../../tests/fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../../tests/fixtures/fake_anthropic.ts";
import { ensureCli } from "../../tests/interop/_install.ts";
import { makeScratch } from "../../tests/interop/_scratch.ts";

const CLAUDE_TURN = new URL("./_claude_turn.ts", import.meta.url).pathname;
const SSE_SERVER = new URL("./_sse_server.ts", import.meta.url).pathname;
const STREAM_CLIENT = new URL("./_stream_client.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function ok(command: Deno.Command): Promise<void> {
  const output = await command.output();
  if (!output.success) {
    throw new Error(`exit ${output.code}: ${new TextDecoder().decode(output.stderr).slice(-400)}`);
  }
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** `reins run --driver claude` (the bundle, the gateway on) against the floor of Deno around it. */
export async function claudeTurn(dir: string): Promise<void> {
  const installed = await ensureCli("claude");
  if (installed.program === null) {
    figure("Claude Code through the gateway", `skipped: ${installed.skip}`);
    return;
  }
  const program = installed.program;
  const outdir = `${dir}/bundle`;
  const entry = await buildBundle({ outdir });
  await using server = startFakeAnthropic(() => text("The answer."));
  await using scratch = await makeScratch("claude", server.url);
  const home = `${dir}/claude-home`;
  Deno.mkdirSync(home, { recursive: true });
  const sandbox: Sandbox = { home, cwd: scratch.cwd, netHosts: [], programs: [program] };
  const path = Deno.env.get("PATH") ?? "/usr/bin:/bin";
  const cache = { DENO_DIR: `${dir}/deno-cache-binary-flags` };
  const reins = (extra: string[]) => () =>
    ok(
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "--config",
          CONFIG,
          ...bundleRunFlags(sandbox, outdir),
          entry,
          "run",
          "--driver",
          "claude",
          ...extra,
          "hello",
        ],
        cwd: scratch.cwd,
        clearEnv: true,
        env: { ...scratch.env, REINS_HOME: home, REINS_CLAUDE_BIN: program, PATH: path, ...cache },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }),
    );
  const through = reins([]);
  const around = reins(["--no-gateway"]);
  const floor = () =>
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
        env: { ...scratch.env, PATH: path, ...cache },
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }),
    );
  await through();
  await around();
  await floor();
  const times = { through: [] as number[], around: [] as number[], floor: [] as number[] };
  for (let i = 0; i < 21; i++) {
    times.floor.push(await timed(floor));
    times.through.push(await timed(through));
    times.around.push(await timed(around));
  }
  const calls = server.modelCalls().length;
  compare({
    name: "reins run --driver claude through the gateway (the bundle, whole process)",
    ours: median(times.through),
    baseline: median(times.floor),
    unit: "ms",
    better: "lower",
    goal: "<= 1.05",
    baselineName: "a Deno script that does only the same turn",
  });
  figure(
    "the same with --no-gateway",
    `${median(times.around).toFixed(0)} ms = ${
      (median(times.around) / median(times.floor)).toFixed(2)
    }× the floor (${calls} model calls in all)`,
  );
}

interface Stream extends AsyncDisposable {
  url: string;
}

async function sseServer(): Promise<Stream> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-net=127.0.0.1", SSE_SERVER],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.includes("\n")) line += (await reader.read()).value ?? "";
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${line.trim()}`,
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await child.stdout.cancel().catch(() => {});
      await child.status;
    },
  };
}

interface Bound extends AsyncDisposable {
  binding: GatewayBinding;
  /** Each call's body size and time to `model.call.completed` (ms), as recorded. */
  recorded: { bytes: number; durationMs: number }[];
  /** Answers once every call begun is recorded (its `model.call.completed` emitted). */
  settleUrl: string;
}

async function bound(dir: string, upstream: string): Promise<Bound> {
  const root = new DataRoot(`${dir}/gateway-home-${newId()}`);
  const runId = newId();
  root.ensureDir(root.layout.run(runId));
  const recorded: Bound["recorded"] = [];
  let begun = 0;
  const settled: (() => void)[] = [];
  const binding = await bindTurn({
    root,
    runId,
    routes: { anthropic: { upstream } },
    emit: (event) => {
      if (event.type === "model.call.started") begun++;
      if (event.type !== "model.call.completed") return;
      const { body, durationMs } = event.payload as { body: { bytes: number }; durationMs: number };
      recorded.push({ bytes: body?.bytes ?? 0, durationMs });
      if (recorded.length === begun) { for (const done of settled.splice(0)) done(); }
    },
    ledger: new BudgetLedger([]),
    priceOf: () => null,
    proxy: NO_PROXY_SETTINGS,
  });
  // The stream client asks this before each read: none is timed while the gateway's process is
  // still at the call before (its answer synced and renamed; read and hashed, should a recorder
  // fall behind the stream), which would slow the read of whatever comes next, direct or not.
  const settle = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    if (recorded.length < begun) await new Promise<void>((done) => settled.push(done));
    return new Response("settled");
  });
  return {
    binding,
    recorded,
    settleUrl: `http://127.0.0.1:${settle.addr.port}/`,
    async [Symbol.asyncDispose]() {
      await settle.shutdown();
      await binding.close();
      root.close();
    },
  };
}

/** A relay that only passes the answer on (Deno's own piping, no JavaScript per chunk): the floor
 * of any process between the harness and its model on this machine. */
function bareRelay(upstream: string): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const answer = await fetch(`${upstream}${url.pathname}${url.search}`, {
      method: request.method,
      body: await request.arrayBuffer(),
    });
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  });
}

/**
 * Reads streamed answers from `urls` in a client process of its own, interleaved, `runs` rounds,
 * each read after the gateway has recorded every call begun when `settle` is given.
 */
async function clientReads(
  runs: number,
  urls: string[],
  settle: string | null,
): Promise<Read[][]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-net=127.0.0.1",
      STREAM_CLIENT,
      String(runs),
      ...(settle === null ? [] : ["--settle", settle]),
      ...urls,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(`the stream client failed: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

const rateOf = (read: Read) => read.bytes / read.totalMs / 1000;

/** The CPU time this process (every thread of it) has used, in ms (Linux: /proc/self/stat). */
function cpuMs(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime, the 14th and 15th fields, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The CPU time this process spends while the client reads `runs` answers from `url`, per run. */
async function cpuPerRead(url: string, runs: number, settle: string): Promise<number> {
  const before = cpuMs();
  await clientReads(runs, [url], settle);
  return (cpuMs() - before) / runs;
}

export async function streams(dir: string): Promise<void> {
  await using server = await sseServer();
  await using gateway = await bound(dir, server.url);
  await using relay = bareRelay(server.url);
  const direct = `${server.url}/v1/messages`;
  const through = `${gateway.binding.routeUrl("anthropic")}/v1/messages`;
  const relayed = `http://127.0.0.1:${relay.addr.port}/v1/messages`;
  const settle = gateway.settleUrl;
  // (Answers of two events, recorded as they end: read back to back, as a harness would.)
  await clientReads(5, [direct, through], null);
  const [firstDirect, firstThrough] = await clientReads(50, [direct, through], null);
  const directFirst = median(firstDirect.map((read) => read.firstMs));
  const throughFirst = median(firstThrough.map((read) => read.firstMs));
  against({
    name: "time to the first byte of a streamed answer through the gateway, over direct",
    value: throughFirst - directFirst,
    unit: "ms",
    goal: "<= 2",
    context: `median of 50: ${throughFirst.toFixed(2)} ms through, ${
      directFirst.toFixed(2)
    } ms direct`,
  });

  const tenMb = (url: string) => `${url}?mb=10`;
  await clientReads(2, [tenMb(direct), tenMb(through), tenMb(relayed)], settle);
  const before10 = gateway.recorded.length;
  const [rateDirect, rateThrough, rateRelayed] = (
    await clientReads(15, [tenMb(direct), tenMb(through), tenMb(relayed)], settle)
  ).map((reads) => median(reads.map(rateOf)));
  const rateRecorded = median(
    gateway.recorded.slice(before10).map((call) => call.bytes / call.durationMs / 1000),
  );
  compare({
    name: "a 10 MB SSE stream through the gateway (recorded), throughput",
    ours: rateThrough,
    baseline: rateDirect,
    unit: "MB/s",
    better: "higher",
    goal: ">= 0.9",
    baselineName: "the same stream read directly",
  });
  figure(
    "the same stream through a bare relay (Deno.serve passing fetch's body on, nothing recorded)",
    `${rateRelayed.toFixed(0)} MB/s = ${(rateRelayed / rateDirect).toFixed(2)}× direct; ` +
      `the gateway ${(rateThrough / rateRelayed).toFixed(2)}× the relay (median of 15)`,
  );
  figure(
    "the same stream through the gateway until it is recorded (its model.call.completed)",
    `${rateRecorded.toFixed(0)} MB/s = ${(rateRecorded / rateDirect).toFixed(2)}× direct ` +
      `(the call's end: its answer on disk, hashed and read; median of 15)`,
  );
  // What the machine's load moves least: the CPU the gateway's process spends on a stream (all its
  // threads), against the relay's.
  const cpuThrough = await cpuPerRead(tenMb(through), 10, settle);
  const cpuRelayed = await cpuPerRead(tenMb(relayed), 10, settle);
  figure(
    "CPU time of the gateway's process per 10 MB stream",
    `${cpuThrough.toFixed(1)} ms, the bare relay's ${cpuRelayed.toFixed(1)} ms (10 streams each)`,
  );

  // Memory: the gateway's process (this one; the client is another) as 100 MB pass through it.
  const before = Deno.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, Deno.memoryUsage().rss);
  }, 5);
  // (Sampled until the call is recorded: the client waits for that before it ends.)
  const [[big]] = await clientReads(1, [`${through}?mb=100`], settle);
  clearInterval(sampler);
  peak = Math.max(peak, Deno.memoryUsage().rss);
  const growth = (peak - before) / (1024 * 1024);
  against({
    name: "the gateway's memory growth as a 100 MB stream passes",
    value: growth,
    unit: "MiB",
    goal: "<= 16",
    context: `${(big.bytes / 1024 / 1024).toFixed(0)} MiB streamed and recorded at ${
      rateOf(big).toFixed(0)
    } MB/s, RSS sampled every 5 ms`,
  });
}

export default async function (): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "reins-bench-gateway-" }));
  try {
    await streams(dir);
    await claudeTurn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
