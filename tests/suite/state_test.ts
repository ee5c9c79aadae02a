// A suite run's state files: private, atomic, one driver at a time, found by id, prefix or last.
import assert from "node:assert/strict";
import {
  currentState,
  listSuiteRunIds,
  readScenarioStates,
  readSuiteRun,
  resolveSuiteRunId,
  SuiteRunHandle,
} from "../../lib/suite/state.ts";
import { tempDir } from "../support/reins.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { ReinsError } from "../../lib/core/errors.ts";

const OPTIONS = {
  jobs: 2,
  filter: null,
  repeat: 1,
  agents: null,
  report: false,
  shard: null,
  rerunOf: null,
};
const INSTANCES = [
  { id: "a", key: "a", repeat: 1, agent: null, index: 0, name: "A" },
  { id: "b", key: "b", repeat: 1, agent: null, index: 1, name: "B" },
];

function create(home: string) {
  return SuiteRunHandle.create(new DataRoot(home), {
    suite: "s",
    file: "/x/suite.yaml",
    digest: "sha256:00",
    options: OPTIONS,
    instances: INSTANCES,
  });
}

function modeOf(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

Deno.test("SuiteRunHandle.create() writes the header; a scenario is pending until its state is saved, a line of begun.jsonl (no file per scenario), 0600 in 0700 folders", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using handle = create(home);
  const header = readSuiteRun(new DataRoot(home), handle.id);
  assert.equal(header.state, "running");
  assert.deepEqual(header.instances.map((i) => i.id), ["a", "b"]);
  const pending = readScenarioStates(new DataRoot(home), header);
  assert.deepEqual(pending.map((s) => [s.instance.id, s.status]), [["a", "pending"], [
    "b",
    "pending",
  ]]);
  const names = () => [...Deno.readDirSync(handle.dir)].map((e) => e.name).sort();
  assert.deepEqual(names(), ["lock", "suite-run.json"]);

  const a = { ...pending[0], name: "A", status: "passed" as const };
  await handle.writeScenario(a);
  const states = readScenarioStates(new DataRoot(home), header);
  assert.deepEqual(states.map((s) => [s.instance.id, s.name, s.status]), [["a", "A", "passed"], [
    "b",
    "b",
    "pending",
  ]]);
  for (const path of [`${home}/suites`, handle.dir]) {
    assert.equal(modeOf(path), 0o700, path);
  }
  for (
    const path of [
      `${handle.dir}/suite-run.json`,
      `${handle.dir}/begun.jsonl`,
      `${handle.dir}/lock`,
    ]
  ) {
    assert.equal(modeOf(path), 0o600, path);
  }
  // A later save is one more line, and it is the state; no file is made for it.
  await handle.writeScenario({ ...a, status: "failed" });
  assert.deepEqual(names(), ["begun.jsonl", "lock", "suite-run.json"]);
  assert.equal(readScenarioStates(new DataRoot(home), header)[0].status, "failed");
  assert.equal(handle.readScenario(INSTANCES[0]).status, "failed", "the handle's own read too");
  // What it saves passes the secrets choke point, as every file of the data root does.
  await handle.writeScenario({
    ...a,
    reason: "the key sk-abcdefghijklmnopqrstuvwxyz0123 was refused",
  });
  const saved = await Deno.readTextFile(`${handle.dir}/begun.jsonl`);
  assert.match(saved, /the key \[redacted\] was refused/);
  assert.doesNotMatch(saved, /sk-abcdef/);
  assert.equal(saved.split("\n").length, 4, "three lines, each ended");
});

Deno.test("readScenarioStates() reads an older reins's state files (scenarios/ID.json): one that is another scenario's is refused", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  using handle = create(home);
  const [a] = readScenarioStates(root, handle.header);
  root.writeFileAtomic(
    `${handle.dir}/scenarios/a.json`,
    `${JSON.stringify({ ...a, status: "passed" }, null, 2)}\n`,
  );
  assert.deepEqual(readScenarioStates(root, handle.header).map((s) => s.status), [
    "passed",
    "pending",
  ]);
  Deno.copyFileSync(`${handle.dir}/scenarios/a.json`, `${handle.dir}/scenarios/b.json`);
  assert.throws(() => readScenarioStates(root, handle.header), /is a's/);
});

Deno.test("SuiteRunHandle refuses a second driver of the same suite run, in this process or another", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const handle = create(home);
  handle.end("stopped");
  assert.throws(
    () => SuiteRunHandle.resume(new DataRoot(home), handle.id),
    /is being run by another reins process/,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { SuiteRunHandle } from "${
        new URL("../../lib/suite/state.ts", import.meta.url).href
      }";` +
      `import { DataRoot } from "${
        new URL("../../lib/store/data_root.ts", import.meta.url).href
      }";` +
      `try { SuiteRunHandle.resume(new DataRoot(${JSON.stringify(home)}), ${
        JSON.stringify(handle.id)
      }); console.log("resumed"); }` +
      ` catch (e) { console.log(e.message); }`,
    ],
    stdout: "piped",
    stderr: "piped",
  });
  const held = new TextDecoder().decode((await child.output()).stdout).trim();
  assert.match(held, /is being run by another reins process/);
  handle.close();
  const resumedOut = new TextDecoder().decode((await child.output()).stdout).trim();
  assert.equal(resumedOut, "resumed");
  using again = SuiteRunHandle.resume(new DataRoot(home), handle.id);
  // The first session, the child's resume, and this one.
  assert.deepEqual(again.header.sessions.map((s) => s.resumed), [false, true, true]);
  assert.equal(again.header.state, "running");
});

Deno.test("resolveSuiteRunId() takes an id, a unique prefix or last; listSuiteRunIds() is newest first", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const first = create(home);
  first.close();
  const second = create(home);
  second.close();
  assert.deepEqual(listSuiteRunIds(new DataRoot(home)), [second.id, first.id]);
  assert.equal(resolveSuiteRunId(new DataRoot(home), "last"), second.id);
  assert.equal(resolveSuiteRunId(new DataRoot(home), second.id), second.id);
  assert.equal(resolveSuiteRunId(new DataRoot(home), second.id.slice(0, 30)), second.id);
  assert.throws(() => resolveSuiteRunId(new DataRoot(home), "ffff"), /No suite run "ffff"/);
  const common = first.id.split("").findIndex((c, i) => c !== second.id[i]);
  assert.throws(
    () => resolveSuiteRunId(new DataRoot(home), first.id.slice(0, common)),
    /matches 2 suite runs/,
  );
  assert.throws(
    () => resolveSuiteRunId(new DataRoot(`${dir.path}/empty`), "last"),
    /No suite runs yet/,
  );
});

Deno.test("regression: a suite run whose header names a device (CON) or one state file twice is a data-root error that names it, not a crash", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  const id = (() => {
    using handle = create(home);
    return handle.id;
  })();
  const path = `${home}/suites/${id}/suite-run.json`;
  const header = JSON.parse(await Deno.readTextFile(path));
  const cases: [unknown[], RegExp][] = [
    // What a suite run of a file with the key CON was left with, before keys were checked.
    [
      [...header.instances, { id: "CON", key: "CON", repeat: 1, index: 2 }],
      /instances\[2\]\.id "CON" cannot name a state file \(CON is a device name on Windows\)/,
    ],
    [
      [...header.instances, { id: "A", key: "A", repeat: 1, index: 2 }],
      /instances\[2\]\.id "A" names the same state file as instances\[0\]/,
    ],
    [[{ id: "x\u0000", key: "x", repeat: 1, index: 0 }], /instances\[0\]\.id "x\\u0000"/],
  ];
  for (const [instances, expected] of cases) {
    await Deno.writeTextFile(path, JSON.stringify({ ...header, instances }));
    let error: unknown = null;
    try {
      readScenarioStates(root, readSuiteRun(root, id));
    } catch (thrown) {
      error = thrown;
    }
    assert.ok(error instanceof ReinsError && error.code === "data_root", String(error));
    assert.match(error.message, new RegExp(`^Cannot read suite run ${id}: .*suite-run\\.json: `));
    assert.match(error.message, expected);
  }
});

Deno.test("currentState() is the header's, or interrupted when it says running and no process holds the lock", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  const handle = create(home);
  assert.equal(currentState(root, readSuiteRun(root, handle.id)), "running");
  // Another process's view: the lock is held by this one until it closes (or dies).
  handle.close();
  const header = readSuiteRun(root, handle.id);
  assert.equal(header.state, "running");
  assert.equal(currentState(root, header), "interrupted");
  using resumed = SuiteRunHandle.resume(root, handle.id);
  resumed.end("stopped");
  assert.equal(currentState(root, readSuiteRun(root, handle.id)), "stopped");
});

Deno.test("readSuiteRun() reads a suite run an older reins wrote, before agents and epochs: no agent, no matrix reports", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  let id: string;
  {
    using handle = create(home);
    id = handle.id;
    const [first] = readScenarioStates(root, handle.header);
    // As an older reins saved a scenario: a file of its own.
    root.writeFileAtomic(
      `${handle.dir}/scenarios/a.json`,
      `${JSON.stringify({ ...first, status: "passed" }, null, 2)}\n`,
    );
  }
  // As an older reins wrote them: no options.agents, no reports, no instance agent.
  const headerPath = `${home}/suites/${id}/suite-run.json`;
  const old = JSON.parse(await Deno.readTextFile(headerPath));
  delete old.options.agents;
  delete old.reports;
  for (const instance of old.instances) delete instance.agent;
  await Deno.writeTextFile(headerPath, JSON.stringify(old));
  const statePath = `${home}/suites/${id}/scenarios/a.json`;
  const state = JSON.parse(await Deno.readTextFile(statePath));
  delete state.instance.agent;
  await Deno.writeTextFile(statePath, JSON.stringify(state));

  const header = readSuiteRun(root, id);
  assert.equal(header.options.agents, null);
  assert.deepEqual(header.reports, {});
  assert.deepEqual(header.instances.map((i) => [i.id, i.agent]), [["a", null], ["b", null]]);
  const states = readScenarioStates(root, header);
  assert.deepEqual(states.map((s) => [s.instance.id, s.instance.agent, s.status]), [
    ["a", null, "passed"],
    ["b", null, "pending"],
  ]);
});

Deno.test("noteBegun() appends a begun attempt to begun.jsonl (0600, redacted, one line): readers take it over an older reins's file when it has more attempts, a torn last line is left out, a damaged one is said", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  const handle = create(home);
  const [a, b] = readScenarioStates(root, handle.header);
  const attempt = (n: number) => ({
    attempt: n,
    startedAt: new Date().toISOString(),
    endedAt: null,
    status: null,
    reason: null,
    runIds: [`run-${n}`],
    workdir: null,
  });
  // As an older reins left them, a: stopped once (its file), then begun again (a line); b: begun
  // (a line), then ended (its file).
  const oldFile = (state: typeof a) =>
    root.writeFileAtomic(
      `${handle.dir}/scenarios/${state.instance.id}.json`,
      `${JSON.stringify(state, null, 2)}\n`,
    );
  oldFile({ ...a, status: "pending", attempts: [attempt(1)] });
  await handle.noteBegun({
    ...a,
    status: "running",
    reason: "the key sk-abcdefghijklmnopqrstuvwxyz0123 was seen",
    attempts: [attempt(1), attempt(2)],
  });
  await handle.noteBegun({ ...b, status: "running", attempts: [attempt(1)] });
  oldFile({ ...b, status: "passed", attempts: [attempt(1)] });
  const journal = `${handle.dir}/begun.jsonl`;
  assert.equal(modeOf(journal), 0o600);
  const text = Deno.readTextFileSync(journal);
  assert.equal(text.split("\n").length, 3, "two lines, each ended");
  assert.doesNotMatch(text, /sk-abcdef/);
  assert.deepEqual(
    [...Deno.readDirSync(`${handle.dir}/scenarios`)].map((e) => e.name).sort(),
    ["a.json", "b.json"],
  );
  const read = () =>
    readScenarioStates(root, handle.header).map((s) => [s.status, s.attempts.length]);
  assert.deepEqual(read(), [["running", 2], ["passed", 1]]);
  // A crash mid-line leaves a torn last line: never answered, so not taken.
  handle.close();
  Deno.writeTextFileSync(journal, text + '{"type":"reins.suite-sc', { append: false });
  assert.deepEqual(read(), [["running", 2], ["passed", 1]]);
  // A resume reads it once, and the runner's read of a scenario sees the begun attempt.
  handle.end("stopped");
  {
    using resumed = SuiteRunHandle.resume(root, handle.id);
    assert.equal(resumed.readScenario(INSTANCES[0]).attempts.length, 2);
  }
  // A damaged line that is not the last is said, with where it is.
  Deno.writeTextFileSync(journal, "not json\n" + text);
  assert.throws(() => readScenarioStates(root, handle.header), /line 1 of .*begun\.jsonl/);
});

Deno.test("a scenario's end cut short by a crash (a torn last line of begun.jsonl) leaves it in flight, for a resume to play again", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const root = new DataRoot(home);
  const handle = create(home);
  const [a] = readScenarioStates(root, handle.header);
  const attempt = {
    attempt: 1,
    startedAt: new Date().toISOString(),
    endedAt: null,
    status: null,
    reason: null,
    runIds: ["run-1"],
    workdir: "/tmp/x",
  };
  await handle.noteBegun({ ...a, status: "running", attempts: [attempt] });
  const begun = Deno.readTextFileSync(`${handle.dir}/begun.jsonl`);
  await handle.writeScenario({ ...a, status: "passed", attempts: [attempt] });
  assert.equal(readScenarioStates(root, handle.header)[0].status, "passed");
  handle.close();
  const ended = Deno.readTextFileSync(`${handle.dir}/begun.jsonl`);
  Deno.writeTextFileSync(`${handle.dir}/begun.jsonl`, ended.slice(0, begun.length + 40));
  assert.deepEqual(
    readScenarioStates(root, handle.header).map((s) => [s.status, s.attempts.length]),
    [["running", 1], ["pending", 0]],
  );
  using resumed = SuiteRunHandle.resume(root, handle.id);
  assert.equal(resumed.readScenario(INSTANCES[0]).status, "running");
});
