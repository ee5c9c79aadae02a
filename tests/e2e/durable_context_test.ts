// A context's harness-session.json is what its next turn resumes: every write of it is durable
// (the file fsynced before its rename, its directory after, a resumed turn's write too), and a
// file that is there but empty or damaged is said once and rebuilt from the context's runs instead
// of silently starting a new conversation.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import { fd, RENAMES, straceWorks, tracedCalls, tracedRun } from "../support/strace.ts";

const STRACE = straceWorks();
if (!STRACE) {
  console.warn(
    "SKIPPED the strace test of tests/e2e/durable_context_test.ts: strace is not installed or " +
      "may not trace here, so the fsyncs of harness-session.json cannot be watched",
  );
}

Deno.test({
  name:
    "regression: a resumed turn's harness-session.json is fsynced before its rename, and its directory after",
  ignore: !STRACE,
  async fn() {
    // It was renamed unsynced when the turn resumed the session on top: a power cut could leave
    // the file empty.
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const work = `${dir.path}/work`;
    await Deno.mkdir(work);
    const first = await tracedRun(home, work, `${dir.path}/first.txt`, ["--context", "c"]);
    assert.equal(first.code, 0, new TextDecoder().decode(first.stderr));
    const trace = `${dir.path}/trace.txt`;
    const second = await tracedRun(home, work, trace, ["--context", "c"]);
    assert.equal(second.code, 0, new TextDecoder().decode(second.stderr));
    const context = await Deno.realPath(`${home}/contexts/c`);
    const text = await Deno.readTextFile(trace);
    const calls = tracedCalls(text).filter((call) => call.ok);
    const renamed = calls.find((call) =>
      RENAMES.includes(call.name) && call.args.includes(`"${context}/harness-session.json"`)
    );
    assert.ok(renamed, `no rename into harness-session.json in:\n${text}`);
    const temp = /"([^"]*\.harness-session\.json\.[^"]*\.tmp)"/.exec(renamed.args)![1];
    const fileSynced = calls.some((call) =>
      (call.name === "fsync" || call.name === "fdatasync") && call.end < renamed.start &&
      call.args.startsWith(`${fd(call)}<${temp}>`)
    );
    assert.ok(fileSynced, `${temp} was not synced before its rename:\n${text}`);
    const dirSynced = calls.some((call) =>
      call.name === "fsync" && call.start > renamed.end && call.args === `${fd(call)}<${context}>`
    );
    assert.ok(dirSynced, `${context} was not fsynced after the rename:\n${text}`);
  },
});

interface Turn {
  runId: string;
  sessionId: string;
  relation: string | null;
  resumedFromRunId: string | null;
  stderr: string;
}

async function turn(home: string, cwd: string): Promise<Turn> {
  const result = await reins(
    ["run", "--driver", "command", "--exec", "true", "--context", "c", "--json", "hi"],
    { home, cwd, allowRun: ["true"] },
  );
  assert.equal(result.code, 0, result.stderr);
  const { runId } = JSON.parse(result.stdout);
  const shown = await reins(["show", runId, "--json"], { home, cwd });
  const { record } = JSON.parse(shown.stdout);
  return {
    runId,
    sessionId: record.sessionId,
    relation: record.relation,
    resumedFromRunId: record.resumedFromRunId,
    stderr: result.stderr,
  };
}

for (
  const damage of [
    { name: "emptied (a power cut after an unsynced rename)", bytes: "", kept: false },
    { name: "damaged (bytes that are not JSON)", bytes: '{"type":"reins.harn\x00\x00', kept: true },
  ]
) {
  Deno.test(`regression: a harness-session.json ${damage.name} is said once and rebuilt from the context's runs`, async () => {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    const first = await turn(home, dir.path);
    const second = await turn(home, dir.path);
    assert.equal(second.sessionId, first.sessionId);
    const path = `${home}/contexts/c/harness-session.json`;
    await Deno.writeTextFile(path, damage.bytes);

    const listed = await reins(["contexts", "--json"], { home, cwd: dir.path });
    assert.equal(listed.code, 0, listed.stderr);
    const [entry] = JSON.parse(listed.stdout);
    assert.equal(entry.contextId, "c");
    assert.equal(entry.session_id, first.sessionId);
    assert.equal(listed.stderr.split("\n").filter((line) => line.includes(path)).length, 1);

    const third = await turn(home, dir.path);
    assert.equal(third.sessionId, first.sessionId, "the conversation goes on");
    assert.equal(third.relation, "resume");
    assert.equal(third.resumedFromRunId, second.runId);
    const said = third.stderr.split("\n").filter((line) => line.includes(path));
    assert.equal(said.length, 1, third.stderr);
    assert.match(
      said[0],
      new RegExp(
        `^reins: warning: the session file \\S+ of context 'c': it ${
          damage.bytes === "" ? "is empty" : "is not JSON \\(.*\\)"
        }; rebuilt from the context's 2 runs \\(command session ${first.sessionId}\\), written back at its next turn$`,
      ),
    );
    const rewritten = JSON.parse(await Deno.readTextFile(path));
    assert.equal(rewritten.session_id, first.sessionId);
    assert.equal(rewritten.sessions.length, 1);
    const copy = await Deno.readTextFile(`${path}.damaged`).catch(() => null);
    assert.equal(copy, damage.kept ? damage.bytes : null);

    const fourth = await turn(home, dir.path);
    assert.equal(fourth.sessionId, first.sessionId);
    assert.doesNotMatch(fourth.stderr, /session file/, "said once: the file is whole again");
  });
}
