// Recording uploads: a 256 MiB file sent by PlatformClient.recording() (streamed from disk, hashed
// on the way out) against `curl -F` to the same local fake platform, which parses every upload
// with busboy and checks its sha256. The uploader runs in a child process, so its peak resident
// size (VmHWM) is its own. Run alone with `deno task bench platform`.
import { createHash } from "node:crypto";
import { compare, figure } from "./_lib.ts";
import { startFakePlatform } from "../../tests/fixtures/fake_platform.ts";
import { PlatformClient, platformTarget } from "../../lib/platform/client.ts";
import { INGESTION_PREFIX } from "../../lib/platform/wire.ts";

const MiB = 1024 * 1024;
const SIZE = 256 * MiB;
const ROUNDS = 3;
const SELF = new URL(import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

async function writeFile(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const block = new Uint8Array(4 * MiB);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, i + 65536));
  }
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    for (let written = 0; written < size; written += block.length) {
      block[0] = (written / block.length) & 0xff;
      hash.update(block);
      let at = 0;
      while (at < block.length) at += await file.write(block.subarray(at));
    }
  } finally {
    file.close();
  }
  return hash.digest("hex");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** The child: one upload, then `{"ms": …, "peakKiB": …}` on stdout. */
async function child(args: string[]): Promise<void> {
  const [url, callId, path, sha256, bytes] = args;
  const client = new PlatformClient(platformTarget({
    url,
    apiKey: "test-key",
    secretKey: "test-secret",
    workspaceId: null,
    jobId: null,
    allowHttp: false,
  }));
  const started = performance.now();
  await client.recording(callId, { path, name: "call.wav", bytes: Number(bytes), sha256 });
  const ms = performance.now() - started;
  client.close();
  const status = await Deno.readTextFile("/proc/self/status");
  const peakKiB = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  console.log(JSON.stringify({ ms, peakKiB }));
}

export default async function (): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "reins-bench-platform-" });
  const platform = startFakePlatform();
  try {
    const path = `${dir}/call.wav`;
    const sha256 = await writeFile(path, SIZE);
    const setup = new PlatformClient(platformTarget({
      url: platform.url,
      apiKey: platform.apiKey,
      secretKey: platform.secretKey,
      workspaceId: null,
      jobId: null,
      allowHttp: false,
    }));
    const { run_test_id } = await setup.provision({
      name: "bench",
      agent_name: "bench",
      personas: [],
      modality: "text",
    });
    const { test_execution_id } = await setup.start(run_test_id, {});
    const callIds = (await setup.batch(test_execution_id, 2 * ROUNDS)).call_execution_ids;
    setup.close();

    const curlMs: number[] = [];
    const oursMs: number[] = [];
    const peaks: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const curlCall = callIds[2 * round];
      const started = performance.now();
      const curl = await new Deno.Command("curl", {
        args: [
          "-sS",
          "--fail",
          "-o",
          "/dev/null",
          "-H",
          `X-Api-Key: ${platform.apiKey}`,
          "-H",
          `X-Secret-Key: ${platform.secretKey}`,
          "-F",
          `file=@${path};type=audio/wav`,
          "-F",
          `sha256=${sha256}`,
          `${platform.url}${INGESTION_PREFIX}/call-executions/${curlCall}/recording/`,
        ],
        stdout: "null",
        stderr: "piped",
      }).output();
      curlMs.push(performance.now() - started);
      if (!curl.success) throw new Error(`curl failed: ${new TextDecoder().decode(curl.stderr)}`);

      const ours = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "-A",
          "--config",
          CONFIG,
          SELF,
          "--child",
          platform.url,
          callIds[2 * round + 1],
          path,
          sha256,
          String(SIZE),
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!ours.success) {
        throw new Error(`uploader failed: ${new TextDecoder().decode(ours.stderr)}`);
      }
      const { ms, peakKiB } = JSON.parse(new TextDecoder().decode(ours.stdout));
      oursMs.push(ms);
      peaks.push(peakKiB / 1024);
    }
    for (const call of platform.calls.values()) {
      for (const recording of call.recordings) {
        if (recording.sha256 !== sha256 || recording.bytes !== SIZE) {
          throw new Error(`the platform received a different file on call ${call.id}`);
        }
      }
    }
    const rate = (ms: number) => SIZE / MiB / (ms / 1000);
    compare({
      name: "recording upload, 256 MiB (streamed, hashed)",
      ours: rate(median(oursMs)),
      baseline: rate(median(curlMs)),
      unit: "MiB/s",
      better: "higher",
      goal: ">= 0.5",
      baselineName: "curl -F",
    });
    figure(
      "uploader peak memory (VmHWM, whole process)",
      `${Math.max(...peaks).toFixed(1)} MiB for a 256 MiB file (goal < 100 MiB)`,
    );
  } finally {
    await platform.close();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main && Deno.args[0] === "--child") await child(Deno.args.slice(1));
