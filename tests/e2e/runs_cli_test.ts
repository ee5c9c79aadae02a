// `reins runs`, `reins show` and `reins recover`, run as the binary runs them (main.ts under the
// sandbox's permission flags), against runs recorded in a temp data root.
import assert from "node:assert/strict";
import { openStore, type Store } from "../../lib/store/store.ts";
import { reins } from "../support/reins.ts";

/** A data root that does not exist yet, in a temp dir that is the commands' working directory. */
async function dataRoot(): Promise<{ path: string; cwd: string; store: Store } & AsyncDisposable> {
  const parent = await Deno.makeTempDir({ prefix: "reins-e2e-runs-" });
  const path = `${parent}/home`;
  const store = openStore(path);
  return {
    path,
    cwd: parent,
    store,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(parent, { recursive: true }).catch(() => {});
    },
  };
}

function record(
  store: Store,
  options: { context?: string | null; goal?: string; settle?: boolean } = {},
) {
  const writer = store.createRun({
    sessionId: "session-e2e",
    contextId: options.context === undefined ? "ticket-1" : options.context,
    harness: "claude-code",
    driver: "claude",
    trigger: "cli",
    cwd: "/tmp",
    goal: options.goal ?? "fix the flaky test",
  });
  writer.append({ type: "message.completed", payload: { role: "assistant", text: "done" } });
  if (options.settle !== false) {
    writer.append({ type: "completed", payload: { reason: null, result: "done" } });
  }
  return writer;
}

Deno.test("reins runs says there are no runs yet, and creates nothing", async () => {
  await using home = await dataRoot();
  const result = await reins(["runs"], { home: home.path, cwd: home.cwd });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr, "No runs yet: start one with reins run PROMPT\n");
  assert.throws(() => Deno.statSync(home.path), Deno.errors.NotFound);
});

Deno.test("reins runs prints a table, newest first, with id prefixes that resolve", async () => {
  await using home = await dataRoot();
  const old = record(home.store, { context: null, goal: "first\ngoal  with   spaces" });
  old.close();
  using live = record(home.store, { settle: false, goal: "x".repeat(300) });
  const result = await reins(["runs"], { home: home.path, cwd: home.cwd });
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 3);
  assert.match(lines[0], /^ID +STATUS +HARNESS +CONTEXT +STARTED +DURATION +GOAL$/);
  const [liveId, liveStatus, harness, context] = lines[1].split(/ +/);
  assert.ok(live.runId.startsWith(liveId) && liveId.length >= 8);
  assert.deepEqual([liveStatus, harness, context], ["running", "claude-code", "ticket-1"]);
  assert.match(lines[1], / \d+\.\ds… +x+…$/);
  assert.ok(lines[1].length <= 120, "the goal is cut to fit");
  assert.match(
    lines[2],
    /^\S+ +completed +claude-code +- +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\d+\.\ds +first goal with spaces$/,
  );
  const shown = await reins(["show", lines[2].split(" ")[0], "--json"], {
    home: home.path,
    cwd: home.cwd,
  });
  assert.equal(JSON.parse(shown.stdout).record.id, old.runId);
});

Deno.test("reins runs --json prints the full records, and the filters narrow them", async () => {
  await using home = await dataRoot();
  const a = record(home.store, { context: "a" });
  a.close();
  const b = record(home.store, { context: "b" });
  b.close();
  using c = record(home.store, { context: "a", settle: false });
  const all = await reins(["runs", "--json"], { home: home.path, cwd: home.cwd });
  assert.equal(all.code, 0, all.stderr);
  // regression: `run --json` named the id `runId` and `runs --json` only `id`. Each row is the
  // record with `runId` first (the name every command's JSON uses) and `id` kept.
  const rows = JSON.parse(all.stdout);
  assert.deepEqual(
    rows,
    [c, b, a].map((w) => ({ runId: w.runId, ...home.store.loadRun(w.runId) })),
  );
  assert.deepEqual(Object.keys(rows[0]).slice(0, 2), ["runId", "id"]);
  const ids = async (...args: string[]) => {
    const result = await reins(["runs", "--json", ...args], { home: home.path, cwd: home.cwd });
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout).map((r: { id: string }) => r.id);
  };
  assert.deepEqual(await ids("--context", "a"), [c.runId, a.runId]);
  assert.deepEqual(await ids("--active"), [c.runId]);
  assert.deepEqual(await ids("--status", "completed", "--limit", "1"), [b.runId]);
  assert.deepEqual(await ids("--session", "session-e2e", "--status=running,completed"), [
    c.runId,
    b.runId,
    a.runId,
  ]);
});

Deno.test("reins runs --status done and --limit 0 exit 2 naming the problem", async () => {
  await using home = await dataRoot();
  const status = await reins(["runs", "--status", "done"], { home: home.path, cwd: home.cwd });
  assert.equal(status.code, 2);
  assert.equal(
    status.stderr,
    'reins: Unknown run status "done"\nhint: use one of queued, running, waiting, completed, failed, interrupted\n',
  );
  const limit = await reins(["runs", "--limit", "0"], { home: home.path, cwd: home.cwd });
  assert.equal(limit.code, 2);
  assert.match(limit.stderr, /^reins: --limit takes a whole number from 1 to 10000: got "0"\n/);
});

Deno.test("reins show RUN --json prints record, events, problems and pending", async () => {
  await using home = await dataRoot();
  using writer = record(home.store, { settle: false });
  writer.append({
    type: "approval.requested",
    payload: { approvalId: "ap1", tool: "rm", args: {} },
  });
  const result = await reins(["show", writer.runId.slice(0, 20), "--json"], {
    home: home.path,
    cwd: home.cwd,
  });
  assert.equal(result.code, 0, result.stderr);
  const shown = JSON.parse(result.stdout);
  assert.deepEqual(shown.record, home.store.loadRun(writer.runId));
  assert.deepEqual(shown.events.map((e: { type: string }) => e.type), [
    "run.started",
    "message.completed",
    "approval.requested",
  ]);
  assert.deepEqual(shown.problems, []);
  assert.deepEqual(shown.pending.map((p: { id: string }) => p.id), ["ap1"]);
  assert.equal(result.stderr, "");
});

Deno.test("reins show warns about damaged lines and a damaged run.json, and does not crash", async () => {
  await using home = await dataRoot();
  const writer = record(home.store);
  writer.close();
  const dir = `${home.path}/runs/${writer.runId}`;
  Deno.writeTextFileSync(`${dir}/events.jsonl`, '{"broken": true}\n{"id":', { append: true });
  const bytes = Deno.readFileSync(`${dir}/run.json`);
  Deno.writeFileSync(`${dir}/run.json`, bytes.subarray(0, bytes.length >> 1));
  const result = await reins(["show", "last", "--json"], { home: home.path, cwd: home.cwd });
  assert.equal(result.code, 0, result.stderr);
  const shown = JSON.parse(result.stdout);
  assert.equal(shown.record.status, "completed");
  assert.equal(shown.events.length, 3);
  assert.deepEqual(
    shown.problems.map((p: { file: string; line: number | null }) => [p.file, p.line]),
    [
      [`runs/${writer.runId}/run.json`, null],
      [`runs/${writer.runId}/events.jsonl`, 4],
      [`runs/${writer.runId}/events.jsonl`, 5],
    ],
  );
  const warnings = result.stderr.trimEnd().split("\n");
  assert.equal(warnings.length, 3);
  assert.match(
    warnings[0],
    new RegExp(
      `^reins: warning: runs/${writer.runId}/run\\.json: skipped: not JSON: .*; rebuilt from events\\.jsonl$`,
    ),
  );
  assert.equal(
    warnings[1],
    `reins: warning: runs/${writer.runId}/events.jsonl:4: skipped: no event type at type`,
  );
  const plain = await reins(["show", writer.runId], { home: home.path, cwd: home.cwd });
  assert.equal(plain.code, 0);
  // The human views are lib/session's; here it is enough that they name the run.
  assert.ok(plain.stdout.includes(writer.runId));
});

Deno.test("reins show exits 3 for no such run and 2 for an ambiguous prefix", async () => {
  await using home = await dataRoot();
  for (let i = 0; i < 2; i++) record(home.store).close();
  const missing = await reins(["show", "ffffffff"], { home: home.path, cwd: home.cwd });
  assert.equal(missing.code, 3);
  assert.match(
    missing.stderr,
    /^reins: No run matches "ffffffff" in .*\nhint: list runs with: reins runs\n$/,
  );
  const ambiguous = await reins(["show", "0"], { home: home.path, cwd: home.cwd });
  assert.equal(ambiguous.code, 2);
  assert.match(
    ambiguous.stderr,
    /^reins: Cannot tell which run "0" means: 2 run ids start with it/,
  );
  const none = await reins(["show"], { home: home.path, cwd: home.cwd });
  assert.equal(none.code, 2);
});

Deno.test("reins recover interrupts what was left running and reindex rebuilds the index", async () => {
  await using home = await dataRoot();
  const done = record(home.store);
  done.close();
  const left = record(home.store, { settle: false });
  left.close();
  home.store.listRuns(); // the index exists, with both runs in it ...
  home.store.close();
  Deno.removeSync(`${home.path}/index.sqlite`); // ... and is gone
  const result = await reins(["recover", "--reindex"], { home: home.path, cwd: home.cwd });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `interrupted       ${left.runId}\n`);
  assert.equal(
    result.stderr,
    "checked 2 runs, 1 interrupted, 0 repaired, 0 still running, index rebuilt with 2 runs\n",
  );
  using after = openStore(home.path);
  assert.equal(after.loadRun(left.runId).status, "interrupted");
  const again = await reins(["recover", "--json"], { home: home.path, cwd: home.cwd });
  assert.deepEqual(JSON.parse(again.stdout), {
    checked: 2,
    skipped: [],
    live: [],
    interrupted: [],
    outcomeRepaired: [],
    recordRebuilt: [],
    removed: 0,
    removedTemps: 0,
    problems: [],
    reindexed: null,
    agents: [],
  });
});

Deno.test("reins runs --home FILE and reins recover --home FILE exit 6", async () => {
  await using home = await dataRoot();
  // Given with --home: HOME itself must stay a directory for Deno to start.
  const file = `${home.cwd}/file`;
  Deno.writeTextFileSync(file, "not a directory");
  for (const command of ["runs", "recover"]) {
    const result = await reins([command, "--home", file], { home: home.cwd, cwd: home.cwd });
    assert.equal(result.code, 6, result.stderr);
    assert.equal(
      result.stderr,
      `reins: Cannot use "${file}": it is not a directory\nhint: move the file away, or point REINS_HOME (or --home) at another directory\n`,
    );
  }
});
