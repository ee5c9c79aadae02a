// One context, several drivers, end to end under the binary's sandbox: each driver keeps its own
// session under the context, so switching drivers and switching back resumes each one's own
// conversation, and the built-in loop continues from every turn the context recorded.
import assert from "node:assert/strict";
import { reins, type ReinsOptions, tempDir } from "../support/reins.ts";

// A command-driver agent with a session of its own: it names one on its first turn (and says
// so), and on a later turn says which one reins handed back.
const AGENT = `#!/bin/sh
read -r prompt
if [ -z "$REINS_NATIVE_SESSION_ID" ]; then
  echo '{"type":"session.linked","payload":{"nativeSessionId":"agent-'"$$"'"}}'
  echo "new session agent-$$ for: $prompt"
else
  echo "resumed $REINS_NATIVE_SESSION_ID for: $prompt"
fi
`;

interface Summary {
  runId: string;
  sessionId: string;
  result: string;
  status: string;
}

interface Record {
  id: string;
  sessionId: string;
  driver: string;
  relation: string | null;
  resumedFromRunId: string | null;
}

// regression: one harness session per context — a turn of another driver replaced it, so going
// back started over; and a resumed turn recorded relation "resume" with resumedFromRunId null.
Deno.test("reins run on one context: command, loop, command, loop — each driver resumes its own session", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  await Deno.writeTextFile(`${work}/agent.sh`, AGENT);
  await Deno.writeTextFile(`${work}/a.txt`, "alpha");
  const options: ReinsOptions = { home, cwd: work, allowRun: ["sh"] };
  const turn = async (args: string[], prompt: string): Promise<Summary> => {
    const result = await reins(["run", "--context", "t", ...args, "--json", prompt], options);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };
  const command = ["--driver", "command", "--exec", "sh agent.sh"];

  const one = await turn(command, "remember kiwi");
  const native = one.result.match(/^new session (agent-\d+) for: remember kiwi$/)?.[1];
  assert.ok(native, one.result);
  const two = await turn([], "What did I ask you last time?");
  assert.notEqual(two.sessionId, one.sessionId, "the loop has a session of its own");
  assert.match(two.result, /remember kiwi/, "the loop sees the command agent's turn");
  const three = await turn(command, "and now?");
  assert.equal(three.result, `resumed ${native} for: and now?`);
  assert.equal(three.sessionId, one.sessionId);
  const four = await turn([], "What did I ask you last time?");
  assert.equal(four.sessionId, two.sessionId, "the loop resumes its own session");
  assert.match(four.result, /and now\?/, "…and sees every turn of the context");

  const show = async (runId: string): Promise<Record> => {
    const shown = await reins(["show", runId, "--json"], options);
    assert.equal(shown.code, 0, shown.stderr);
    return JSON.parse(shown.stdout).record;
  };
  const records = await Promise.all([one, two, three, four].map((s) => show(s.runId)));
  assert.deepEqual(records.map((r) => [r.driver, r.relation, r.resumedFromRunId]), [
    ["command", null, null],
    ["loop", null, null],
    ["command", "resume", one.runId],
    ["loop", "resume", two.runId],
  ]);

  const listed = await reins(["contexts", "--json"], options);
  const [context] = JSON.parse(listed.stdout);
  assert.equal(context.driver, "loop", "the session used last is on top");
  assert.deepEqual(
    context.sessions.map((s: { driver: string; session_id: string }) => [s.driver, s.session_id]),
    [["loop", two.sessionId], ["command", one.sessionId]],
  );
  assert.equal(
    context.sessions.find((s: { driver: string }) => s.driver === "command").native_session_id,
    native,
  );
});

Deno.test("reins forget drops every driver's session: the loop's next turn starts afresh, without the context's old turns", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const options: ReinsOptions = { home, cwd: dir.path };
  const first = await reins(["run", "--context", "f", "--json", "remember kiwi"], options);
  assert.equal(first.code, 0, first.stderr);
  assert.equal((await reins(["forget", "f"], options)).code, 0);
  const after = await reins(["run", "--context", "f", "--json", "What did I ask?"], options);
  assert.equal(after.code, 0, after.stderr);
  const summary = JSON.parse(after.stdout);
  assert.notEqual(summary.sessionId, JSON.parse(first.stdout).sessionId);
  assert.doesNotMatch(summary.result, /kiwi/);
});
