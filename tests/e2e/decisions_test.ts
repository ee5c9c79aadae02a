// Approvals and questions from the command line end to end: a piped `reins run --approve ask`
// says on stderr which command answers what it waits for (with a run prefix no other run shares),
// and `reins approve` / `reins answer` for a run that has ended say the decision was ignored and
// exit 8 instead of pretending it was given.
import assert from "node:assert/strict";
import { chatTranscript, startFakeChat } from "../fixtures/fake_chat.ts";
import { inOrder, text, toolCall } from "../fixtures/fake_model_server.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const WRITE = { id: "c1", name: "write_file", args: { path: "out.txt", content: "hello" } };

async function script(dir: string, name: string, steps: unknown[]): Promise<string> {
  const path = `${dir}/${name}`;
  await Deno.writeTextFile(path, JSON.stringify(steps));
  return path;
}

/** Reads a child's stderr until a line matches `pattern`; returns the match and the rest. */
async function waitForLine(
  child: Deno.ChildProcess,
  pattern: RegExp,
  timeoutMs = 30_000,
): Promise<{ match: RegExpMatchArray; seen: string; rest: Promise<string> }> {
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  const timer = setTimeout(() => reader.cancel("timed out"), timeoutMs);
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stderr ended without a line matching ${pattern}:\n${seen}`);
      seen += value;
      const match = seen.match(pattern);
      if (match) {
        const rest = (async () => {
          let more = "";
          while (true) {
            const next = await reader.read();
            if (next.done) return more;
            more += next.value;
          }
        })();
        return { match, seen, rest };
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The child's exit code and stdout (its stderr is being read by waitForLine). */
async function finish(child: Deno.ChildProcess): Promise<{ code: number; stdout: string }> {
  const [status, stdout] = await Promise.all([child.status, new Response(child.stdout).text()]);
  return { code: status.code, stdout };
}

/** The id of the run that goes `waiting` in `home` (polled through `reins runs`). */
async function waitingRun(home: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const listed = await reins(["runs", "--json", "--status", "waiting"], { home });
    const rows = listed.code === 0 ? JSON.parse(listed.stdout) : [];
    const row = (Array.isArray(rows) ? rows : rows.runs ?? [])[0];
    if (row) return row.id ?? row.runId;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no run went waiting");
}

interface Shown {
  record: { id: string; status: string };
  events: { type: string; payload: Record<string, unknown>; ignored?: string }[];
}

async function show(home: string, run: string): Promise<Shown> {
  const result = await reins(["show", run, "--json"], { home });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

// regression: a piped run printed nothing about its pending approval, and the progress line's
// hint used a fixed 8-character prefix that two runs started within a minute share.
Deno.test("reins run --approve ask, piped, prints one stderr line with the command that answers it, naming the run by a unique prefix", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  const earlier = await reins(["run", "--json", "look"], { home });
  assert.equal(earlier.code, 0, earlier.stderr);
  const earlierId: string = JSON.parse(earlier.stdout).runId;
  const model = await script(dir.path, "ask.json", [{ toolCalls: [WRITE] }, { text: "wrote it" }]);
  const child = spawnReins(
    ["run", "--model", `mock:${model}`, "--approve", "ask", "--json", "write"],
    { home },
  );
  const { match, seen, rest } = await waitForLine(
    child,
    /reins: run (\S+) waits for approval approval-1 \(write_file \{.*\}\): reins approve (\S+) approval-1 \[--deny\]\n/,
  );
  const [, named, prefix] = match;
  assert.equal(named, prefix);
  assert.equal(seen.split("\n").filter((line) => line.includes("waits for")).length, 1);
  assert.ok(!earlierId.startsWith(prefix), `${prefix} is not shared with ${earlierId}`);
  assert.ok(prefix.length >= 8);
  // The printed command, as printed, answers it.
  const approved = await reins(["approve", prefix, "approval-1"], { home });
  assert.equal(approved.code, 0, approved.stderr);
  const out = await finish(child);
  assert.equal(out.code, 0, await rest);
  const summary = JSON.parse(out.stdout);
  assert.ok(summary.runId.startsWith(prefix));
  assert.equal(summary.result, "wrote it");
  assert.doesNotMatch(await rest, /waits for/, "said once");
});

// regression: approving a run that had ended printed "allowed approval-1 on run …" and exited 0,
// although nothing would ever read the decision.
Deno.test("reins approve on a run that has ended says the decision was ignored and exits 8", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  const model = await script(dir.path, "ask.json", [{ toolCalls: [WRITE] }, { text: "wrote it" }]);
  const child = spawnReins(
    ["run", "--model", `mock:${model}`, "--approve", "ask", "--json", "write"],
    { home },
  );
  const waiting = await waitingRun(home);
  child.kill("SIGINT");
  const out = await child.output();
  assert.equal(out.code, 1);
  const runId: string = JSON.parse(new TextDecoder().decode(out.stdout)).runId;
  assert.equal(runId, waiting);
  assert.equal((await show(home, runId)).record.status, "interrupted");

  const late = await reins(["approve", runId, "approval-1"], { home });
  assert.equal(late.code, 8, late.stderr);
  assert.match(
    late.stderr,
    new RegExp(
      `^reins: Ignored: run ${runId} has already ended \\(interrupted\\), so the decision on approval-1 reached no agent\n`,
    ),
  );
  assert.doesNotMatch(late.stderr, /allowed/);
  const json = await reins(["approve", runId, "approval-1", "--deny", "--json"], { home });
  assert.equal(json.code, 8);
  assert.equal(JSON.parse(json.stdout).error.code, "run_settled");
  // Nothing was recorded as if it had been given.
  const shown = await show(home, runId);
  assert.deepEqual(shown.events.filter((e) => e.type === "approval.resolved"), []);
  // An approval the run never asked for is still not found (3), settled or not.
  const unknown = await reins(["approve", runId, "approval-7"], { home });
  assert.equal(unknown.code, 3, unknown.stderr);
});

// regression: a question an agent asked was recorded, `reins answer` recorded the answer, and
// the run stayed `running` for ever: no driver waited for answers.
Deno.test("reins answer from another process reaches the built-in loop's ask_user: the model reads the answer", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  await using server = startFakeChat(inOrder(
    toolCall("ask_user", { question: "Which colour should the button be?" }),
    text("Blue it is."),
  ));
  const child = spawnReins(
    ["run", "--model", "openai:fake", "--base-url", `${server.url}/v1`, "--json", "style it"],
    { home },
  );
  const { match, rest } = await waitForLine(
    child,
    /reins: run (\S+) waits for an answer to question-1 \("Which colour should the button be\?"\): reins answer (\S+) question-1 TEXT\n/,
  );
  assert.equal((await show(home, match[2])).record.status, "waiting");
  const wrong = await reins(["answer", match[2], "question-2", "red"], { home });
  assert.equal(wrong.code, 3, wrong.stderr);
  const answered = await reins(["answer", match[2], "question-1", "Blue,", "please"], { home });
  assert.equal(answered.code, 0, answered.stderr);
  assert.match(answered.stderr, /^answered question-1 on run /);
  const out = await finish(child);
  assert.equal(out.code, 0, await rest);
  const summary = JSON.parse(out.stdout);
  assert.deepEqual([summary.status, summary.result], ["completed", "Blue it is."]);
  // The second model call carries the answer as the ask_user call's result.
  const second = chatTranscript(server.modelCalls()[1]).join("\n");
  assert.match(second, /Blue, please/);
  const shown = await show(home, summary.runId);
  const types = shown.events.map((e) => e.type);
  assert.ok(types.indexOf("question.requested") < types.indexOf("question.answered"));
  const done = shown.events.find((e) => e.type === "tool.completed")!;
  assert.deepEqual([done.payload.tool, done.payload.ok, done.payload.result], [
    "ask_user",
    true,
    "Blue, please",
  ]);
  // Answered on a run that has ended: ignored, exit 8.
  const late = await reins(["answer", summary.runId, "question-1", "green"], { home });
  assert.equal(late.code, 8, late.stderr);
  assert.match(
    late.stderr,
    /Ignored: run \S+ has already ended \(completed\), so the answer to question-1 reached no agent/,
  );
});

// An agent of the command driver that asks a question and says what it was answered.
const ASKING_AGENT = `#!/bin/sh
read -r prompt
echo '{"type":"question.requested","payload":{"questionId":"q1","text":"Which file?"}}'
read -r answer
echo "told: $answer"
echo '{"type":"completed","payload":{"reason":null,"result":"done"}}'
read -r rest || echo "stdin closed after the verdict"
`;

Deno.test("reins run --driver command --exec-stdin events: the program reads the prompt and then reins answer's answer on its stdin", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  await Deno.writeTextFile(`${dir.path}/agent.sh`, ASKING_AGENT);
  const child = spawnReins(
    [
      "run",
      "--driver",
      "command",
      "--exec",
      "sh agent.sh",
      "--exec-stdin",
      "events",
      "--json",
      "pick one",
    ],
    { home, allowRun: ["sh"] },
  );
  const { match, rest } = await waitForLine(child, /reins answer (\S+) q1 TEXT\n/);
  const answered = await reins(["answer", match[1], "q1", "notes.md"], { home });
  assert.equal(answered.code, 0, answered.stderr);
  const out = await finish(child);
  assert.equal(out.code, 0, await rest);
  const summary = JSON.parse(out.stdout);
  assert.equal(summary.result, "done");
  const shown = await show(home, summary.runId);
  const said = shown.events.filter((e) => e.type === "message.delta").map((e) => e.payload.text)
    .join("");
  assert.equal(
    said,
    'told: {"type":"question.answered","payload":{"questionId":"q1","answer":"notes.md"}}\n' +
      "stdin closed after the verdict\n",
  );
  assert.deepEqual(
    shown.events.filter((e) => e.type === "status.changed").map((e) => e.payload.status),
    ["waiting", "running"],
  );
});

Deno.test("reins run --driver command without --exec-stdin events says the program's question cannot reach it, and does not wait", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  await Deno.writeTextFile(`${dir.path}/agent.sh`, ASKING_AGENT);
  const result = await reins(
    ["run", "--driver", "command", "--exec", "sh agent.sh", "--json", "pick one"],
    { home, allowRun: ["sh"] },
  );
  assert.equal(result.code, 0, result.stderr);
  const shown = await show(home, JSON.parse(result.stdout).runId);
  const problem = shown.events.find((e) => e.type === "problem")!;
  assert.match(
    String(problem.payload.reason),
    /^sh asked q1, but it reads no answers \(its stdin is closed after the prompt\): run it with --exec-stdin events/,
  );
  assert.equal(shown.events.filter((e) => e.type === "status.changed").length, 0);
});

Deno.test("reins replay answers the replayed ask_user as the recording was answered, and reproduces it", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  const model = await script(dir.path, "ask.json", [
    { toolCalls: [{ id: "q", name: "ask_user", args: { question: "Which file?" } }] },
    { text: "ok" },
  ]);
  const child = spawnReins(["run", "--model", `mock:${model}`, "--json", "pick"], { home });
  const { match, rest } = await waitForLine(child, /reins answer (\S+) question-1 TEXT\n/);
  assert.equal((await reins(["answer", match[1], "question-1", "notes.md"], { home })).code, 0);
  const out = await finish(child);
  assert.equal(out.code, 0, await rest);
  const original = JSON.parse(out.stdout).runId;
  const replay = await reins(["replay", original, "--json"], { home });
  assert.equal(replay.code, 0, replay.stderr);
  const verdict = JSON.parse(replay.stdout);
  assert.equal(verdict.diverged, false, JSON.stringify(verdict.divergences));
  const replayed = await show(home, verdict.runId);
  const answered = replayed.events.find((e) => e.type === "question.answered")!;
  assert.deepEqual(
    [answered.payload.questionId, answered.payload.answer],
    ["question-1", "notes.md"],
  );
});
