// What a turn looks at as it starts, held through the syscalls of a whole `reins run` traced by
// strace: the start of every run is on the path between the command and the agent, so what it
// need not ask of the file system it does not ask.
import assert from "node:assert/strict";
import { tempDir } from "../support/reins.ts";
import { straceWorks, tracedCalls, tracedRun } from "../support/strace.ts";

const STRACE = straceWorks();
if (!STRACE) {
  console.warn(
    "SKIPPED tests/e2e/run_start_test.ts: strace is not installed or may not trace here, so " +
      "the file system calls of a real reins run cannot be watched",
  );
}

Deno.test({
  name:
    "a turn in a working directory without files looks for neither the blob index nor the stat cache",
  ignore: !STRACE,
  async fn() {
    // regression: every run's snapshot stat()ed snapshots/blobs.sqlite and opened its stat cache
    // file, both missing on a data root whose runs never had a file to snapshot
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const work = `${dir.path}/work`;
    await Deno.mkdir(`${work}/empty-dir`, { recursive: true });
    const trace = `${dir.path}/trace.txt`;
    for (let i = 0; i < 2; i++) {
      const output = await tracedRun(home, work, trace, [], ["%file"]);
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
      const { runId } = JSON.parse(new TextDecoder().decode(output.stdout));
      const real = await Deno.realPath(home);
      const text = await Deno.readTextFile(trace);
      const asked = tracedCalls(text).filter((call) =>
        call.args.includes(`"${real}/snapshots/blobs.sqlite"`) ||
        call.args.includes(`"${real}/snapshots/cache/`)
      );
      assert.deepEqual(asked.map((call) => `${call.name}(${call.args})`), []);
      // The snapshot is still taken: its manifest lists the tree as it was.
      const manifest = JSON.parse(
        await Deno.readTextFile(`${home}/snapshots/manifests/${runId}.json`),
      );
      assert.equal(manifest.state, "taken");
      assert.deepEqual(manifest.entries.map((e: { path: string }) => e.path), ["empty-dir"]);
    }
  },
});
