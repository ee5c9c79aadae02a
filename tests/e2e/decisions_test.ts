// Approvals and questions from the command line end to end: a piped `reins run --approve ask`
// says on stderr which command answers what it waits for (with a run prefix no other run shares),
// and `reins approve` / `reins answer` for a run that has ended say the decision was ignored and
// exit 8 instead of pretending it was given.
import assert from "node:assert/strict";
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
