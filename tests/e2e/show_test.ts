// `reins show` end to end under the binary's sandbox: the transcript formats against recorded
// runs (the same golden files as tests/session/format_test.ts), damaged lines as warnings, the
// command that answers a pending approval, and --follow across processes.
import assert from "node:assert/strict";
import type { RunRecord } from "../../lib/store/contracts.ts";
import { pendingDecisions } from "../../lib/store/decisions.ts";
import { parseEventLog } from "../../lib/store/event_log.ts";
import { formatTranscript } from "../../lib/session/format.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const FIXTURES = new URL("../fixtures/session/", import.meta.url).pathname;
const GOLDEN = new URL("../session/golden/", import.meta.url).pathname;
const WRITER = `${FIXTURES}slow_writer.ts`;
const decoder = new TextDecoder();

/** Places a recorded run in `home` as the store keeps it; `edit` may change its lines. */
function install(home: string, name: string, edit?: (text: string) => string): RunRecord {
  const record = JSON.parse(Deno.readTextFileSync(`${FIXTURES}${name}/run.json`)) as RunRecord;
  const dir = `${home}/runs/${record.id}`;
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  Deno.chmodSync(home, 0o700);
  Deno.chmodSync(`${home}/runs`, 0o700);
  Deno.writeTextFileSync(`${dir}/run.json`, JSON.stringify(record, null, 2), { mode: 0o600 });
  const events = Deno.readTextFileSync(`${FIXTURES}${name}/events.jsonl`);
  Deno.writeTextFileSync(`${dir}/events.jsonl`, edit ? edit(events) : events, { mode: 0o600 });
  return record;
}

/** Waits for `child` to exit, killing it (and failing) after `ms`. */
async function exited(child: Deno.ChildProcess, ms: number) {
  const timer = setTimeout(() => child.kill("SIGKILL"), ms);
  try {
    const output = await child.output();
    return {
      ...output,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The event lines of a transcript as [sequence, text], without the time column. */
function eventLines(stdout: string): [number, string][] {
  return stdout.split("\n").flatMap((line) => {
    const match = /^\s+(\d+)\s+[+-]\S+\s\s(.*)$/.exec(line);
    return match ? [[Number(match[1]), match[2]] as [number, string]] : [];
  });
}

for (
  const [name, args] of [
    ["loop_tools", []],
    ["loop_tools", ["--verbose"]],
    ["approval_denied", ["--short"]],
    ["command_agent", ["-v"]],
  ] as const
) {
  const mode = args.some((arg) => arg === "--verbose" || arg === "-v") ? "verbose" : "short";
  Deno.test(`reins show ${["RUN", ...args].join(" ")} prints the ${name} run as its ${mode} golden file`, async () => {
    await using home = await tempDir();
    const record = install(home.path, name);
    const shown = await reins(["show", record.id.slice(0, 13), ...args], { home: home.path });
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(shown.stderr, "");
    assert.equal(shown.stdout, Deno.readTextFileSync(`${GOLDEN}${name}.${mode}.txt`));
  });
}

Deno.test("reins show warns on stderr about each damaged line and shows the rest", async () => {
  await using home = await tempDir();
  const record = install(home.path, "loop_tools", (text) => {
    const lines = text.split("\n");
    lines.splice(4, 0, "{not json", '{"type":"heartbeat"}');
    return `${lines.join("\n").trimEnd()}\n{"id":"torn`;
  });
  const shown = await reins(["show", record.id], { home: home.path });
  assert.equal(shown.code, 0, shown.stderr);
  const file = `runs/${record.id}/events.jsonl`;
  assert.deepEqual(shown.stderr.trimEnd().split("\n"), [
    `reins: warning: ${file}:5: skipped: not JSON: Expected property name or '}' in JSON at position 1 (line 1 column 2)`,
    `reins: warning: ${file}:6: skipped: Invalid input: expected string, received undefined at id`,
    `reins: warning: ${file}:40: skipped: incomplete last line (its writer stopped mid-line)`,
  ]);
  assert.equal(eventLines(shown.stdout).length, 37);

  const json = await reins(["show", record.id, "--json"], { home: home.path });
  assert.equal(json.code, 0);
  const body = JSON.parse(json.stdout);
  assert.deepEqual(Object.keys(body), ["record", "events", "problems", "pending"]);
  assert.equal(body.events.length, 37);
  assert.deepEqual(body.problems.map((p: { line: number }) => p.line), [5, 6, 40]);
});

// A log of many pieces (the reader takes 64 KiB at a time, and each piece is written as it is
// formatted): the transcript is the one made of all its events at once, and a damaged line's
// warning names its line wherever it falls.
Deno.test("reins show of a log of many pieces prints the transcript of all its events, and warns of a damaged line among them", async () => {
  await using home = await tempDir();
  let damagedLine = 0;
  const record = install(home.path, "loop_tools", (text) => {
    const lines = text.trimEnd().split("\n");
    const [first, middle, last] = [lines[0], lines.slice(1, -1), lines.at(-1)!];
    const out = [first];
    for (let round = 0; out.length < 3_000; round++) {
      for (const line of middle) {
        const event = JSON.parse(line);
        out.push(JSON.stringify({ ...event, id: `${event.id}-${round}`, sequence: out.length }));
      }
    }
    out.push(JSON.stringify({ ...JSON.parse(last), sequence: out.length }));
    damagedLine = 1_700;
    out.splice(damagedLine - 1, 0, "{damaged");
    return `${out.join("\n")}\n`;
  });
  const log = Deno.readTextFileSync(`${home.path}/runs/${record.id}/events.jsonl`);
  assert.ok(log.length > 16 * 65_536, `the log is ${log.length} bytes: too few pieces`);
  const read = parseEventLog(log, record.id);
  for (const mode of ["short", "verbose"] as const) {
    const shown = await reins(["show", record.id, `--${mode}`], { home: home.path });
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(
      shown.stderr,
      `reins: warning: runs/${record.id}/events.jsonl:${damagedLine}: skipped: not JSON: ` +
        "Expected property name or '}' in JSON at position 1 (line 1 column 2)\n",
    );
    const expected = formatTranscript(record, read.events, pendingDecisions(read.events), mode);
    assert.equal(shown.stdout, `${expected}\n`, mode);
  }
});

Deno.test("reins show --short --verbose is a usage error", async () => {
  await using home = await tempDir();
  const record = install(home.path, "loop_tools");
  const shown = await reins(["show", record.id, "--short", "--verbose"], { home: home.path });
  assert.equal(shown.code, 2);
  assert.match(shown.stderr, /reins show takes --short or --verbose, not both/);
});

// The writer takes ~2.5 s so that the follower, started after it, finds the run still going even
// on a loaded machine (150 ms steps settled before a slow start-up once).
Deno.test("reins show --follow prints a run another process writes, until it settles", async () => {
  await using home = await tempDir();
  const writer = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", WRITER, home.path, "4", "500"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = writer.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const runId = (await reader.read()).value!.trim();
  reader.releaseLock();
  const follower = spawnReins(["show", runId, "--follow"], { home: home.path });
  const followed = await exited(follower, 15_000);
  await writer.status;
  assert.equal(followed.code, 0, followed.stderr);
  const lines = eventLines(followed.stdout).map(([sequence, text]) =>
    [sequence, text.replace(/ok, \d+ ms/, "ok, N ms")] as [number, string]
  );
  assert.deepEqual(lines.map(([sequence]) => sequence), Array.from({ length: 18 }, (_, i) => i));
  assert.deepEqual(lines.slice(1, 5), [
    [1, "iteration 0"],
    [2, `  → count {"up_to":0}`],
    [3, "  ← count ok, N ms: 0"],
    [4, `assistant (part): "step 0 done⏎next"`],
  ]);
  assert.deepEqual(lines.at(-1), [17, `■ completed: "counted 4 steps"`]);
  assert.match(followed.stdout, /^run \S+ · running · slow-writer \(driver command\) · cli\n/);
  assert.match(
    followed.stdout,
    /\ncompleted after [^·]+ · 18 events · model calls unknown · 4 tool calls\n$/,
  );
});

Deno.test("reins show --follow --json prints events as JSON lines and ends interrupted when the writer dies", async () => {
  await using home = await tempDir();
  const writer = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", WRITER, home.path, "2", "100", "die"],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = writer.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const runId = (await reader.read()).value!.trim();
  reader.releaseLock();
  const followed = await exited(
    spawnReins(["show", runId, "--follow", "--json"], { home: home.path }),
    15_000,
  );
  await writer.status;
  assert.equal(followed.code, 0, followed.stderr);
  const events = followed.stdout.trimEnd().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(events.map((event) => event.sequence), Array.from({ length: 10 }, (_, i) => i));
  assert.deepEqual(events.at(-1).payload, {
    status: "interrupted",
    reason: "the process running it stopped before the run settled",
  });
});

Deno.test("reins show gives the command that answers a pending approval, and --follow sees it answered", async () => {
  await using home = await tempDir();
  const script = `${home.path}/ask.json`;
  Deno.writeTextFileSync(
    script,
    JSON.stringify([
      { toolCalls: [{ id: "w1", name: "write_file", args: { path: "r.md", content: "x" } }] },
      { text: "written" },
    ]),
  );
  const running = spawnReins(["run", "--model", `mock:${script}`, "--approve", "ask", "write"], {
    home: home.path,
    allowRun: ["sh"],
  });
  let runId = "";
  for (let i = 0; i < 300 && runId === ""; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const runs = [...(function* () {
      try {
        yield* Deno.readDirSync(`${home.path}/runs`);
      } catch { /* not made yet */ }
    })()];
    for (const entry of runs) {
      if (entry.name.startsWith(".") || !entry.isDirectory) continue;
      // regression: the run's directory is in place a moment before its events.jsonl is.
      let log = "";
      try {
        log = Deno.readTextFileSync(`${home.path}/runs/${entry.name}/events.jsonl`);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
      if (log.includes('"approval.requested"')) runId = entry.name;
    }
  }
  assert.notEqual(runId, "", "the run never asked for approval");
  const follower = spawnReins(["show", runId, "--follow"], { home: home.path });
  const shown = await reins(["show", runId], { home: home.path });
  const command = `reins approve ${runId} approval-1 [--deny]`;
  assert.ok(
    shown.stdout.includes(
      `\nwaiting for approval approval-1 (write_file {"path":"r.md","content":"x"}): ${command}\n`,
    ),
    shown.stdout,
  );
  const approved = await reins(["approve", runId, "approval-1"], { home: home.path });
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal((await exited(running, 15_000)).code, 0);
  const followed = await exited(follower, 15_000);
  assert.equal(followed.code, 0, followed.stderr);
  assert.ok(followed.stdout.includes(`): ${command}\n`), followed.stdout);
  assert.match(followed.stdout, /✓ approval approval-1 allowed by cli\n/);
  assert.match(followed.stdout, /\ncompleted after /);
});
