// `reins replay` of a harness run whose recording lacks a body its events name (a wire/ file
// deleted, a data root copied in part): said for what it is, before anything of the replay is made.
import assert from "node:assert/strict";
import { openStore } from "../../lib/store/store.ts";
import { reins, tempDir } from "../support/reins.ts";

async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A Claude Code run as the gateway records it: call-1 answered (its answer's body on disk unless
 * `answerOnDisk` is false), then, with `cutDuringCall2`, call-2 started and never answered (the
 * run stopped during it). Its id, and the path its answer's body has or would have.
 */
async function claudeRun(
  home: string,
  cwd: string,
  options: { answerOnDisk: boolean; cutDuringCall2?: boolean },
) {
  const request = new TextEncoder().encode(
    JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: "hi" }] }),
  );
  const answer = new TextEncoder().encode('{"type":"message"}');
  const [requestSha, answerSha] = [await sha256(request), await sha256(answer)];
  using store = openStore(home);
  const writer = store.createRun({
    sessionId: crypto.randomUUID(),
    contextId: null,
    nativeSessionId: null,
    parentRunId: null,
    resumedFromRunId: null,
    relation: null,
    harness: "claude",
    driver: "claude",
    trigger: "cli",
    cwd,
    goal: "say hi",
    resumeOf: null,
    agent: { provider: "anthropic", model: "claude-x", inputExcludesCache: true },
  });
  try {
    const wire = `${home}/runs/${writer.runId}/wire`;
    await Deno.mkdir(wire, { recursive: true });
    await Deno.writeFile(`${wire}/${requestSha}`, request);
    if (options.answerOnDisk) await Deno.writeFile(`${wire}/${answerSha}`, answer);
    const started = (callId: string) => ({
      type: "model.call.started" as const,
      payload: {
        callId,
        wire: "anthropic.messages" as const,
        generates: true,
        route: "anthropic",
        method: "POST",
        path: "/v1/messages",
        model: "claude-x",
        stream: false,
        headers: {},
        body: { sha256: requestSha, bytes: request.length },
      },
    });
    writer.append(started("call-1"));
    writer.append({
      type: "model.call.completed",
      payload: {
        callId: "call-1",
        outcome: "ok",
        status: 200,
        headers: { "content-type": "application/json" },
        body: { sha256: answerSha, bytes: answer.length },
        chunks: [],
        model: "claude-x",
        stopReason: "end_turn",
        usage: null,
        firstByteMs: 1,
        durationMs: 2,
      },
    });
    if (options.cutDuringCall2) writer.append(started("call-2"));
    else writer.append({ type: "completed", payload: { reason: null, result: "hi" } });
    return { runId: writer.runId, answer: `${wire}/${answerSha}` };
  } finally {
    writer.close();
  }
}

// regression: the replay restored the directory and started the harness, whose call was answered
// 502 "not on disk"; Claude Code retried it, and the replay reported the retries as calls "not in
// the recording" — a divergence, not the damage
Deno.test("reins replay of a harness run missing an answer's body: exit 3 naming it, no harness started, nothing made", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  const { runId, answer: missing } = await claudeRun(home, work, { answerOnDisk: false });
  // A "Claude Code" that says it was started.
  const claude = `${dir.path}/claude`;
  await Deno.writeTextFile(claude, `#!/bin/sh\ntouch ${dir.path}/started\nexit 1\n`);
  await Deno.chmod(claude, 0o755);
  const result = await reins(["replay", runId, "--cwd", work], {
    home,
    cwd: work,
    env: { REINS_CLAUDE_BIN: claude },
    allowRun: [claude],
  });
  assert.equal(result.code, 3, result.stderr);
  assert.match(
    result.stderr,
    new RegExp(`Cannot replay run ${runId}: the answer of its model call call-1 is not on disk`),
  );
  assert.ok(result.stderr.includes(missing), result.stderr);
  await assert.rejects(Deno.stat(`${dir.path}/started`), Deno.errors.NotFound);
  using store = openStore(home);
  assert.deepEqual(store.listRuns().map((run) => run.id), [runId], "no replay run was made");
  // No directory restored nor scratch home made under tmp/ (which need not be there at all).
  let made: string[] = [];
  try {
    made = [...Deno.readDirSync(`${home}/tmp`)].map((entry) => entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  assert.deepEqual(made.filter((name) => name.startsWith("replay-")), []);
});

// regression: such a recording replayed with no word of its end, and its last call came out as
// "not in the recording", as if the replay had diverged
Deno.test("reins replay of a harness run stopped during a model call says the recording ends there", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  const { runId } = await claudeRun(home, work, { answerOnDisk: true, cutDuringCall2: true });
  const claude = `${dir.path}/claude`;
  await Deno.writeTextFile(claude, "#!/bin/sh\nexit 1\n");
  await Deno.chmod(claude, 0o755);
  const result = await reins(["replay", runId, "--cwd", work], {
    home,
    cwd: work,
    env: { REINS_CLAUDE_BIN: claude },
    allowRun: [claude],
  });
  assert.match(
    result.stderr,
    new RegExp(
      `the recording of ${runId} ends during its model call call-2 \\(started, never answered`,
    ),
  );
});
