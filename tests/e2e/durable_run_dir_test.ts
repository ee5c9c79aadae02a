// The rename that puts a run's directory in place is made durable: a whole `reins run` traced by
// strace fsyncs runs/ (and the run's own directory) after renaming runs/.staging/<id> to
// runs/<id>, and before it exits. The syscalls are the kernel's, not a seam of ours.
import assert from "node:assert/strict";
import { tempDir } from "../support/reins.ts";
import { type Call, fd, RENAMES, straceWorks, tracedCalls, tracedRun } from "../support/strace.ts";

const STRACE = straceWorks();
if (!STRACE) {
  console.warn(
    "SKIPPED tests/e2e/durable_run_dir_test.ts: strace is not installed or may not trace here, " +
      "so the fsyncs of a real reins run cannot be watched (tests/store/runs_test.ts still counts " +
      "them through atomic_write.ts's seam)",
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
    const output = await tracedRun(home, work, trace, []);
    const { runId } = JSON.parse(new TextDecoder().decode(output.stdout));
    const runs = await Deno.realPath(`${home}/runs`);
    const text = await Deno.readTextFile(trace);
    const calls = tracedCalls(text).filter((call) => call.ok);
    const renamed = calls.find((call) =>
      /rename/.test(call.name) && call.args.includes(`"${runs}/.staging/${runId}"`) &&
      call.args.includes(`"${runs}/${runId}"`)
    );
    assert.ok(renamed, `no rename of the run into place in:\n${text}`);
    // The syncs run on Deno's blocking pool: a call of another thread may split their lines.
    const synced = (path: string) =>
      calls.some((call) =>
        call.name === "fsync" && call.start > renamed.end &&
        call.args.replace(/^\d+/, "") === `<${path}>`
      );
    assert.ok(synced(runs), `runs/ was not fsynced after the rename:\n${text}`);
    assert.ok(synced(`${runs}/${runId}`), "the run's directory was not fsynced");
  },
});

Deno.test({
  name:
    "reins run makes a run whole in runs/.staging/<id> (owner.lock linked, events.jsonl with run.started) before renaming it into place",
  ignore: !STRACE,
  async fn() {
    // regression: the run's directory was renamed into place holding only its owner lock, and
    // events.jsonl and run.json were made in it afterwards (each path looked at first). Its
    // owner.lock is a hard link to the process's owner file now, and run.json is first written
    // when the record changes (at settle), so neither is a file made here.
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const work = `${dir.path}/work`;
    await Deno.mkdir(work);
    const trace = `${dir.path}/trace.txt`;
    const output = await tracedRun(home, work, trace, [], [
      "openat",
      "write",
      "link",
      "linkat",
      ...RENAMES,
    ]);
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const { runId } = JSON.parse(new TextDecoder().decode(output.stdout));
    const runs = await Deno.realPath(`${home}/runs`);
    const text = await Deno.readTextFile(trace);
    const calls = tracedCalls(text);
    const renamed = calls.find((call) =>
      call.ok && /rename/.test(call.name) && call.args.includes(`"${runs}/.staging/${runId}"`)
    );
    assert.ok(renamed, `no rename of the run into place in:\n${text}`);
    const staged = `${runs}/.staging/${runId}`;
    const before = calls.slice(0, calls.indexOf(renamed));
    const created = (path: string) =>
      before.some((call) =>
        call.name === "openat" && call.args.includes(`"${path}"`) && /O_CREAT/.test(call.args)
      );
    assert.ok(
      created(`${staged}/events.jsonl`),
      `events.jsonl was not made before the rename:\n${text}`,
    );
    assert.ok(
      before.some((call) =>
        call.ok && /^link/.test(call.name) && call.args.includes(`"${staged}/owner.lock"`)
      ),
      `owner.lock was not linked before the rename:\n${text}`,
    );
    assert.ok(!created(`${staged}/owner.lock`), "owner.lock was made a file of its own");
    assert.ok(!created(`${staged}/run.json`), "run.json was written at creation");
    // run.started is in the log before the directory is in place (a write on its descriptor).
    assert.ok(
      before.some((call) =>
        call.name === "write" && call.args.startsWith(`${fd(call)}<${staged}/events.jsonl>`) &&
        call.args.includes("run.started")
      ),
      `run.started was not written before the rename:\n${text}`,
    );
    // Nothing of the run was made at its final place but the record that settles it.
    const later = calls.slice(calls.indexOf(renamed));
    assert.ok(
      !later.some((call) =>
        call.name === "openat" && call.args.includes(`"${runs}/${runId}/events.jsonl"`) &&
        /O_CREAT/.test(call.args)
      ),
      `events.jsonl was made after the rename:\n${text}`,
    );
  },
});

Deno.test({
  name:
    "reins run --context syncs the context's session before renaming it, then its directory, and the log before the record that settles the run",
  ignore: !STRACE,
  async fn() {
    // The syncs of a turn run on Deno's blocking pool (other threads than the one renaming):
    // this holds their order, whichever thread made them.
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const work = `${dir.path}/work`;
    await Deno.mkdir(work);
    const trace = `${dir.path}/trace.txt`;
    const output = await tracedRun(home, work, trace, ["--context", "c1"]);
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const { runId } = JSON.parse(new TextDecoder().decode(output.stdout));
    const real = await Deno.realPath(home);
    const text = await Deno.readTextFile(trace);
    const calls = tracedCalls(text).filter((call) => call.ok);
    const context = `${real}/contexts/c1`;
    const placed = calls.find((call) =>
      /rename/.test(call.name) && call.args.endsWith(`"${context}/harness-session.json"`)
    );
    assert.ok(placed, `the context's session was not renamed into place:\n${text}`);
    const temp = /^"([^"]+)"/.exec(placed.args)![1];
    // A descriptor shows as `<fd><path>` (-y).
    const fsyncOf = (name: string, path: string) =>
      calls.filter((call) => call.name === name && call.args.replace(/^\d+/, "") === `<${path}>`);
    assert.ok(
      fsyncOf("fsync", temp).some((call) => call.end < placed.start),
      `the session's temp file was not fsynced before its rename:\n${text}`,
    );
    const settledRecord = calls.filter((call) =>
      /rename/.test(call.name) && call.args.endsWith(`"${real}/runs/${runId}/run.json"`)
    ).at(-1)!;
    const before = (list: Call[], after = -1) =>
      list.some((call) => call.start > after && call.end < settledRecord.start);
    assert.ok(
      before(fsyncOf("fsync", context), placed.end),
      `the context's directory was not fsynced after the rename, before the run settled:\n${text}`,
    );
    assert.ok(
      before(fsyncOf("fdatasync", `${real}/runs/${runId}/events.jsonl`)),
      `the log was not synced before the record that settles the run:\n${text}`,
    );
    assert.ok(before(fsyncOf("fsync", `${real}/runs`)), "runs/ was not synced before settling");
  },
});
