// The rename that puts a run's directory in place is made durable: a whole `reins run` traced by
// strace fsyncs runs/ (and the run's own directory) after renaming runs/.staging/<id> to
// runs/<id>, and before it exits. The syscalls are the kernel's, not a seam of ours.
import assert from "node:assert/strict";
import { CONFIG, MAIN, tempDir } from "../support/reins.ts";

function straceWorks(): boolean {
  try {
    const probe = new Deno.Command("strace", {
      args: ["-f", "-e", "trace=none", "-o", "/dev/null", "true"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return probe.success;
  } catch {
    return false;
  }
}

const STRACE = straceWorks();
if (!STRACE) {
  console.warn(
    "SKIPPED tests/e2e/durable_run_dir_test.ts: strace is not installed or may not trace here, " +
      "so the fsyncs of a real reins run cannot be watched (tests/store/runs_test.ts still counts " +
      "them through private_files' seam)",
  );
}

Deno.test({
  name: "reins run fsyncs runs/ and the run's directory after renaming the run into place",
  ignore: !STRACE,
  async fn() {
    // regression: runs/ was never fsynced after runs/.<id>.creating was renamed to runs/<id>
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const work = `${dir.path}/work`;
    await Deno.mkdir(work);
    const trace = `${dir.path}/trace.txt`;
    const output = await new Deno.Command("strace", {
      args: [
        "-f",
        "-y", // descriptors shown with their paths
        "-e",
        "trace=fsync,fdatasync,rename,renameat,renameat2",
        "-o",
        trace,
        Deno.execPath(),
        "run",
        "--quiet",
        "--allow-all",
        "--config",
        CONFIG,
        MAIN,
        "--home",
        home,
        "run",
        "--driver",
        "command",
        "--exec",
        "true",
        "--json",
        "hello",
      ],
      cwd: work,
      env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const { runId } = JSON.parse(new TextDecoder().decode(output.stdout));
    const runs = await Deno.realPath(`${home}/runs`);
    const lines = (await Deno.readTextFile(trace)).split("\n");
    const renamed = lines.findIndex((line) =>
      /rename/.test(line) && line.includes(`"${runs}/.staging/${runId}"`) &&
      line.includes(`"${runs}/${runId}"`) && / = 0$/.test(line)
    );
    assert.ok(renamed >= 0, `no rename of the run into place in:\n${lines.join("\n")}`);
    const after = lines.slice(renamed + 1);
    const synced = (path: string) =>
      after.some((line) => /\bfsync\(\d+<(.*)>\) = 0$/.exec(line)?.[1] === path);
    assert.ok(synced(runs), `runs/ was not fsynced after the rename:\n${after.join("\n")}`);
    assert.ok(synced(`${runs}/${runId}`), "the run's directory was not fsynced");
  },
});
