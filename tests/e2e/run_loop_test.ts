// `reins run` with the built-in loop end to end, under the binary's sandbox flags: resume with
// history, approvals answered from a second process, the deny policy, budget exhaustion.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

interface Shown {
  record: { status: string; sessionId: string; terminalReason: string | null };
  events: { type: string; payload: Record<string, unknown>; sequence: number }[];
}

async function show(home: string, run: string): Promise<Shown> {
  const result = await reins(["show", run, "--json"], { home });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

async function script(dir: string, name: string, steps: unknown[]): Promise<string> {
  const path = `${dir}/${name}`;
  await Deno.writeTextFile(path, JSON.stringify(steps));
  return path;
}

const WRITE = { id: "c1", name: "write_file", args: { path: "out.txt", content: "hello" } };

Deno.test("reins run --context: the second loop turn resumes the session and sees the first", async () => {
  await using dir = await tempDir();
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  await Deno.writeTextFile(`${work}/a.txt`, "alpha");
  const home = `${dir.path}/home`;
  const first = await reins(["run", "--context", "c", "--json", "Look around"], {
    home,
    cwd: work,
  });
  assert.equal(first.code, 0, first.stderr);
  const one = JSON.parse(first.stdout);
  const second = await reins(["run", "--context", "c", "--json", "What did I ask?"], {
    home,
    cwd: work,
  });
  assert.equal(second.code, 0, second.stderr);
  const two = JSON.parse(second.stdout);
  assert.equal(two.sessionId, one.sessionId);
  assert.match(two.result, /Look around/, "the demo model quotes the earlier prompt");
  const shown = await show(home, two.runId);
  const requested = shown.events.find((e) => e.type === "model.requested")!;
  assert.ok((requested.payload.historyLength as number) > 2, "the history carries the first turn");
});

Deno.test("reins run --approve ask waits until reins approve from another process, then runs the tool", async () => {
  await using dir = await tempDir();
  const model = await script(dir.path, "ask.json", [{ toolCalls: [WRITE] }, { text: "wrote it" }]);
  const child = spawnReins([
    "run",
    "--model",
    `mock:${model}`,
    "--approve",
    "ask",
    "--json",
    "write",
  ], {
    home: dir.path,
  });
  let runId = "";
  for (let i = 0; i < 100 && !runId; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const listed = await reins(["runs", "--json"], { home: dir.path });
    const runs = listed.code === 0 ? JSON.parse(listed.stdout) : [];
    const rows = Array.isArray(runs) ? runs : runs.runs ?? [];
    if (rows[0]?.status === "waiting") runId = rows[0].id;
  }
  assert.ok(runId, "the run went waiting");
  assert.equal(
    await Deno.stat(`${dir.path}/out.txt`).catch(() => null),
    null,
    "not before approval",
  );
  const wrong = await reins(["approve", runId, "approval-9"], { home: dir.path });
  assert.equal(wrong.code, 3);
  assert.match(wrong.stderr, /has no pending approval "approval-9"\nhint: pending: approval-1/);
  const approved = await reins(["approve", runId, "approval-1"], { home: dir.path });
  assert.equal(approved.code, 0, approved.stderr);
  const out = await child.output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.equal(JSON.parse(new TextDecoder().decode(out.stdout)).result, "wrote it");
  assert.equal(await Deno.readTextFile(`${dir.path}/out.txt`), "hello");
  const shown = await show(dir.path, runId);
  const types = shown.events.map((e) => e.type);
  const at = (type: string) => types.indexOf(type);
  assert.ok(at("approval.requested") < at("approval.resolved"));
  assert.ok(at("approval.resolved") < at("tool.started"));
  assert.deepEqual(
    shown.events.filter((e) => e.type === "status.changed").map((e) => e.payload.status),
    ["waiting", "running"],
  );
  assert.deepEqual(shown.events.map((e) => e.sequence), types.map((_, i) => i));
});

Deno.test("reins approve --deny gives the model a tool error with the reason", async () => {
  await using dir = await tempDir();
  const model = await script(dir.path, "deny.json", [{ toolCalls: [WRITE] }, {
    text: "could not",
  }]);
  const child = spawnReins([
    "run",
    "--model",
    `mock:${model}`,
    "--approve",
    "ask",
    "--json",
    "write",
  ], {
    home: dir.path,
  });
  let runId = "";
  for (let i = 0; i < 100 && !runId; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const listed = await reins(["runs", "--json", "--status", "waiting"], { home: dir.path });
    const parsed = listed.code === 0 ? JSON.parse(listed.stdout) : [];
    const rows = Array.isArray(parsed) ? parsed : parsed.runs ?? [];
    runId = rows[0]?.id ?? "";
  }
  const denied = await reins(["approve", runId, "approval-1", "--deny", "--reason", "not today"], {
    home: dir.path,
  });
  assert.equal(denied.code, 0, denied.stderr);
  assert.equal((await child.output()).code, 0);
  assert.equal(await Deno.stat(`${dir.path}/out.txt`).catch(() => null), null);
  const shown = await show(dir.path, runId);
  const done = shown.events.find((e) => e.type === "tool.completed")!;
  assert.equal(done.payload.ok, false);
  assert.equal(done.payload.error, "denied by cli: not today");
});

Deno.test("reins run --approve deny refuses tools as errors the model sees", async () => {
  await using dir = await tempDir();
  const model = await script(dir.path, "deny.json", [{ toolCalls: [WRITE] }, { text: "refused" }]);
  const result = await reins([
    "run",
    "--model",
    `mock:${model}`,
    "--approve",
    "deny",
    "--json",
    "write",
  ], {
    home: dir.path,
  });
  assert.equal(result.code, 0, result.stderr);
  const shown = await show(dir.path, JSON.parse(result.stdout).runId);
  const done = shown.events.find((e) => e.type === "tool.completed")!;
  assert.deepEqual([done.payload.ok, done.payload.error], [false, "denied by policy"]);
  assert.equal(await Deno.stat(`${dir.path}/out.txt`).catch(() => null), null);
});

// regression: --max-turns 5 made six model calls (a tool-less "final answer" past the limit) and
// the run completed with exit 0; a budget is a ceiling, and the run it ends fails, as every driver's.
Deno.test("reins run --max-turns: a warning at 80 %, no call past the limit, failed 'budget exhausted'", async () => {
  await using dir = await tempDir();
  const list = { id: "l", name: "list_files", args: {} };
  const steps = Array.from({ length: 5 }, (_, i) => ({ toolCalls: [{ ...list, id: `l${i}` }] }));
  const model = await script(dir.path, "budget.json", [...steps, { text: "final answer" }]);
  const result = await reins([
    "run",
    "--model",
    `mock:${model}`,
    "--max-turns",
    "5",
    "--json",
    "loop",
  ], {
    home: dir.path,
  });
  assert.equal(result.code, 1, result.stderr);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "failed");
  assert.equal(summary.reason, "budget exhausted: --max-turns 5 (5 of 5 model calls)");
  const shown = await show(dir.path, summary.runId);
  const warnings = shown.events.filter((e) => e.type === "budget.warning").map((e) =>
    e.payload.ratio
  );
  assert.deepEqual(warnings, [0.8, 1]);
  const requests = shown.events.filter((e) => e.type === "model.requested");
  assert.equal(requests.length, 5);
  assert.equal(shown.record.terminalReason, summary.reason);
  assert.equal(shown.events.at(-1)!.payload.code, "budget_exhausted");
});

Deno.test("reins run --model mock:FILE with a bad script exits 2 before recording a run", async () => {
  await using dir = await tempDir();
  const model = await script(dir.path, "bad.json", [{ text: 42 }]);
  const result = await reins(["run", "--model", `mock:${model}`, "hi"], { home: dir.path });
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, /bad\.json/);
  assert.equal(await Deno.stat(`${dir.path}/runs`).catch(() => null), null);
});

// regression: "last" was resolved after the new run existed, so it named the new run itself.
Deno.test("reins run --model replay:last serves the previous run's model outputs", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/a.txt`, "alpha");
  const first = JSON.parse((await reins(["run", "--json", "look"], { home: dir.path })).stdout);
  const again = await reins(["run", "--model", "replay:last", "--json", "look"], {
    home: dir.path,
  });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(JSON.parse(again.stdout).result, first.result);
});
