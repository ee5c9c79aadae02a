// Memory stays flat whatever the recording's size: `reins report` uploads a 100 MiB recording and
// a 1 KiB one, and the fake platform reads the uploader's peak resident size (VmHWM in
// /proc/<pid>/status) the moment the last byte has arrived, while the process still waits for
// the answer. The two peaks must be close; the figures are printed.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { spawnReins, tempDir } from "../support/reins.ts";
import { makeRun } from "./_runs.ts";

const MiB = 1024 * 1024;

function peakKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)![1]);
}

/** Writes `size` bytes of varied data and returns their sha256, without holding them at once. */
async function writeRecording(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const block = new Uint8Array(MiB);
  for (let i = 0; i < MiB; i += 65536) crypto.getRandomValues(block.subarray(i, i + 65536));
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    for (let written = 0; written < size;) {
      block[0] = written & 0xff;
      const chunk = block.subarray(0, Math.min(MiB, size - written));
      hash.update(chunk);
      let at = 0;
      while (at < chunk.length) at += await file.write(chunk.subarray(at));
      written += chunk.length;
    }
  } finally {
    file.close();
  }
  return hash.digest("hex");
}

Deno.test({
  name: "reins report uploads a 100 MiB recording with the uploader's memory flat",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const runs: { id: string; bytes: number }[] = [];
    for (const bytes of [1024, 100 * MiB]) {
      const path = `${dir.path}/call-${bytes}.wav`;
      const sha256 = await writeRecording(path, bytes);
      const { record } = await makeRun(home, {
        goal: `Call of ${bytes} bytes`,
        events: [{
          type: "attachment.added",
          payload: { name: "call.wav", path, contentType: "audio/wav", bytes, sha256 },
        }],
      });
      runs.push({ id: record.id, bytes });
    }
    let child: Deno.ChildProcess | null = null;
    const peaks = new Map<number, number>();
    const platform = startFakePlatform({
      afterHandle: (seen) => {
        if (seen.route !== "recording" || child === null) return;
        const [call] = [...platform.calls.values()].filter((c) => c.id === seen.id);
        peaks.set(call.recordings[0].bytes, peakKiB(child.pid));
      },
    });
    try {
      for (const run of runs) {
        child = spawnReins(["report", run.id], {
          home,
          allowPaths: [dir.path],
          env: {
            HARNESS_PLATFORM_URL: platform.url,
            HARNESS_PLATFORM_API_KEY: platform.apiKey,
            HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
          },
        });
        const output = await child.output();
        assert.deepEqual(output.code, 0, new TextDecoder().decode(output.stderr));
      }
    } finally {
      await platform.close();
    }
    const small = peaks.get(1024)! / 1024;
    const big = peaks.get(100 * MiB)! / 1024;
    console.log(
      `uploader peak RSS: ${big.toFixed(1)} MiB for 100 MiB, ${small.toFixed(1)} MiB for 1 KiB`,
    );
    assert.ok(big - small < 24, `the 100 MiB upload took ${(big - small).toFixed(1)} MiB more`);
    assert.ok(big < 100, `peak ${big.toFixed(1)} MiB`);
  },
});
