// The runner, in process, on real command-driver agents (shell scripts) through the engine: one
// context per scenario, a fresh workdir copy each, setup, retries of what could not run, the
// scenario's and the turn's time limits, simulated users, and a stop that leaves work for a resume.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { parseSuite } from "../../lib/suite/load.ts";
import { type RunnerHooks, runSuite } from "../../lib/suite/runner.ts";
import { instancesOf, startSuiteRun } from "../../lib/suite/start.ts";
import { readScenarioStates } from "../../lib/suite/state.ts";
import { engineTurns } from "../../lib/suite/turns.ts";
import { resolveModel } from "../../lib/model/resolve_model.ts";
import { openStore, type Store } from "../../lib/store/store.ts";
import { tempDir } from "../support/reins.ts";

/** A command agent: says who it is and which turn, and appends the prompt to log.txt. */
const ECHO_AGENT = `#!/bin/sh
prompt=$(cat)
printf '%s\\n' "$prompt" >> log.txt
echo "session=$REINS_SESSION_ID context=$REINS_CONTEXT_ID turn=$(wc -l < log.txt | tr -d ' ') said=$prompt"
`;

async function suiteIn(dir: string, yaml: string, files: Record<string, string> = {}) {
  for (const [name, text] of Object.entries({ "agent.sh": ECHO_AGENT, ...files })) {
    const path = `${dir}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(path, text);
    if (name.endsWith(".sh")) await Deno.chmod(path, 0o755);
  }
  await Deno.writeTextFile(`${dir}/suite.yaml`, yaml);
  return parseSuite(`${dir}/suite.yaml`, await Deno.readFile(`${dir}/suite.yaml`));
}

async function play(
  store: Store,
  suite: ReturnType<typeof parseSuite>,
  options: { jobs?: number; stop?: AbortSignal; hooks?: RunnerHooks } = {},
) {
  const settings = loadSettings({ REINS_HOME: store.home });
  const started = startSuiteRun(store, suite, { kind: "fresh", filter: null, repeat: 1 }, {
    jobs: options.jobs ?? 2,
    report: false,
  });
  using handle = started.handle;
  const outcome = await runSuite({
    suite,
    handle,
    todo: started.todo,
    jobs: options.jobs ?? 2,
    stop: options.stop ?? new AbortController().signal,
    kill: new AbortController().signal,
    runTurn: engineTurns(store, settings, () => {}),
    makeModel: (spec, baseUrl) => resolveModel(spec, { settings, baseUrl }),
    hooks: options.hooks,
  });
  handle.end(outcome.stopped ? "stopped" : "finished");
  return { ...outcome, id: handle.id, states: readScenarioStates(store, handle.header) };
}

Deno.test("runSuite() plays a scenario's turns as one context: one session, one family, trigger suite", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      "  - key: three-turns",
      "    turns: [one, two, three]",
      "    checks:",
      "      - {regex: 'turn=3 said=three', in: final}",
      "      - {regex: 'said=one', in: any}",
      "      - {file: log.txt, contains: two}",
    ].join("\n"),
  );
  const { states } = await play(store, suite);
  const [state] = states;
  assert.equal(state.status, "passed", JSON.stringify(state.checks));
  assert.equal(state.turns, 3);
  assert.equal(state.runIds.length, 3);
  const records = state.runIds.map((id) => store.loadRun(id));
  assert.deepEqual(records.map((r) => r.trigger), ["suite", "suite", "suite"]);
  assert.equal(new Set(records.map((r) => r.sessionId)).size, 1, "one harness session");
  assert.equal(new Set(records.map((r) => r.contextId)).size, 1, "one context");
  assert.deepEqual(records.map((r) => r.parentRunId), [null, state.runIds[0], state.runIds[0]]);
  const family = store.runFamily(state.runIds[2]);
  assert.deepEqual(family.runs.map((m) => m.record.id), state.runIds);
  const entry = store.contexts.get(records[0].contextId!);
  assert.equal(entry?.session_id, records[0].sessionId);
});

Deno.test("runSuite() gives each scenario a fresh copy of the workdir, runs setup there, and keeps only copies that did not pass", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "workdir: ./fixture",
      "setup: ['echo prepared > setup.txt']",
      "scenarios:",
      "  - {key: a, turns: [alpha], checks: [{file: log.txt, regex: '^seed\\nalpha\\n$'}, {file: setup.txt}]}",
      "  - {key: b, turns: [beta], checks: [{file: log.txt, contains: alpha}]}",
      "  - {key: c, turns: [gamma], setup: ['echo nope >&2; exit 4']}",
    ].join("\n"),
    { "fixture/log.txt": "seed\n" },
  );
  const { states } = await play(store, suite, { jobs: 3 });
  assert.deepEqual(states.map((s) => s.status), ["passed", "failed", "error"]);
  assert.equal(states[2].reason, 'setup "echo nope >&2; exit 4" exited with code 4: nope');
  assert.equal(states[2].turns, 0);
  // The original is untouched; a passed scenario's copy is gone, the others' kept.
  assert.equal(await Deno.readTextFile(`${dir.path}/fixture/log.txt`), "seed\n");
  const [a, b, c] = states.map((s) => s.attempts[0].workdir);
  assert.equal(a, null);
  assert.equal(await Deno.readTextFile(`${b}/log.txt`), "seed\nbeta\n");
  assert.ok(Deno.statSync(c!).isDirectory);
});

Deno.test("runSuite() retries a scenario that could not run, up to retry.errors, but never a failure", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const counter = `${dir.path}/attempts`;
  const flaky =
    `#!/bin/sh\necho x >> ${counter}\n[ "$(wc -l < ${counter} | tr -d ' ')" -ge 2 ] || { echo "crashed" >&2; exit 9; }\necho fine\n`;
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./flaky.sh",
      "retry: {errors: 1}",
      "scenarios:",
      "  - {key: flaky, turns: [go], checks: [{regex: fine}]}",
      "  - {key: failing, exec: ./agent.sh, turns: [go], checks: [{regex: never}]}",
    ].join("\n"),
    { "flaky.sh": flaky },
  );
  const retried: string[] = [];
  const { states } = await play(store, suite, {
    jobs: 1,
    hooks: { onRetry: (state, reason) => retried.push(`${state.instance.id}: ${reason}`) },
  });
  const [flakyState, failing] = states;
  assert.equal(flakyState.status, "passed");
  assert.deepEqual(flakyState.attempts.map((a) => a.status), ["error", "passed"]);
  assert.match(flakyState.attempts[0].reason!, /^turn 1 failed: .*exited with code 9: crashed$/);
  assert.deepEqual(retried.map((line) => line.split(":")[0]), ["flaky"]);
  // The retry is a fresh conversation: another context, its own runs.
  assert.notEqual(flakyState.attempts[0].runIds[0], flakyState.runIds[0]);
  assert.notEqual(
    store.loadRun(flakyState.attempts[0].runIds[0]).contextId,
    store.loadRun(flakyState.runIds[0]).contextId,
  );
  assert.equal(failing.status, "failed");
  assert.equal(failing.attempts.length, 1);
});

Deno.test("runSuite() ends a scenario at timeouts.scenarioSeconds and a turn at timeouts.turnSeconds, as errors with the reason", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const slow = "#!/bin/sh\necho thinking\nsleep 30\n";
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./slow.sh",
      "scenarios:",
      "  - {key: scenario-limit, turns: [go], timeouts: {scenarioSeconds: 1}}",
      "  - {key: turn-limit, turns: [go], timeouts: {turnSeconds: 1}}",
    ].join("\n"),
    { "slow.sh": slow },
  );
  const started = Date.now();
  const { states } = await play(store, suite);
  assert.ok(Date.now() - started < 20_000, "the sleeps were stopped");
  assert.deepEqual(states.map((s) => s.status), ["error", "error"]);
  assert.equal(states[0].reason, "timed out after 1 s (timeouts.scenarioSeconds)");
  assert.match(states[1].reason!, /^turn 1 failed: timed out after 1 s/);
});

Deno.test("runSuite() plays a simulated user until it ends the conversation, or until maxTurns", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      "  - key: ends",
      "    persona: {name: Dana}",
      "    user: {model: 'mock:ends.json'}",
      "    checks: [{file: log.txt, regex: '^Hi\\nBye\\n$'}]",
      "  - key: talks-on",
      "    user: {model: 'mock:talks.json', maxTurns: 2, opening: Hello}",
      "  - key: silent",
      "    user: {model: 'mock:silent.json'}",
    ].join("\n"),
    {
      "ends.json": JSON.stringify([{ text: "Hi" }, { text: "Bye" }, {
        toolCalls: [{ name: "end_conversation", args: { reason: "satisfied" } }],
      }]),
      "talks.json": JSON.stringify([{ text: "more" }, { text: "and more" }, { text: "unused" }]),
      "silent.json": JSON.stringify([{ text: "" }]),
    },
  );
  const { states } = await play(store, suite, { jobs: 3 });
  const [ends, talks, silent] = states;
  assert.equal(ends.status, "passed", JSON.stringify(ends.checks));
  assert.equal(ends.turns, 2);
  assert.equal(ends.ended, "the simulated user ended it: satisfied");
  assert.deepEqual(talks.runIds.map((id) => store.loadRun(id).goal), ["Hello", "more"]);
  assert.equal(talks.ended, "the simulated user reached maxTurns (2)");
  assert.equal(silent.status, "error");
  assert.match(silent.reason!, /neither wrote a message nor ended the conversation/);
});

Deno.test("runSuite() honours a stop: scenarios in flight and not started stay unfinished, skips are final", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./slow.sh",
      "scenarios:",
      "  - {key: skipped, turns: [x], skip: not today}",
      "  - {key: in-flight, turns: [go]}",
      "  - {key: never-started, turns: [go]}",
    ].join("\n"),
    { "slow.sh": "#!/bin/sh\necho thinking\nsleep 30\n" },
  );
  const stop = new AbortController();
  const { states, stopped } = await play(store, suite, {
    jobs: 1,
    stop: stop.signal,
    hooks: { onStart: () => void setTimeout(() => stop.abort(), 300) },
  });
  assert.equal(stopped, true);
  assert.deepEqual(states.map((s) => s.status), ["skipped", "pending", "pending"]);
  assert.equal(states[0].reason, "not today");
  assert.deepEqual(states[1].attempts.map((a) => [a.status, a.reason]), [[
    null,
    "the suite run was stopped",
  ]]);
  assert.equal(states[2].attempts.length, 0);
  assert.equal(store.loadRun(states[1].attempts[0].runIds[0]).status, "interrupted");
});

Deno.test("instancesOf() repeats scenarios as key.N and filters by key", async () => {
  await using dir = await tempDir();
  const suite = await suiteIn(
    dir.path,
    "suite: s\ndriver: command\nexec: ./agent.sh\nscenarios:\n  - {key: refund-a, turns: [x]}\n  - {key: login, turns: [x]}\n  - {key: refund-b, turns: [x]}\n",
  );
  assert.deepEqual(
    instancesOf(suite, { filter: "refund-*", repeat: 2 }).map((i) => [i.id, i.index, i.repeat]),
    [
      ["refund-a.1", 0, 1],
      ["refund-a.2", 0, 2],
      ["refund-b.1", 2, 1],
      ["refund-b.2", 2, 2],
    ],
  );
  assert.throws(
    () => instancesOf(suite, { filter: "nope*", repeat: 1 }),
    /matches none of the 3 scenarios/,
  );
});

Deno.test("regression: runSuite() ends a scenario whose check backtracks without end at timeouts.scenarioSeconds, and the other scenarios go on", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      `  - key: hangs`,
      `    turns: ["${"a".repeat(40)}!"]`,
      "    timeouts: {scenarioSeconds: 2}",
      `    checks: [{regex: "said=(a|a)*$"}, {file: log.txt, regex: "^(a|a)*$"}]`,
      "  - {key: quick, turns: [hi], checks: [{regex: 'said=hi'}]}",
    ].join("\n"),
  );
  const ended: string[] = [];
  const startedMs = Date.now();
  const { states } = await play(store, suite, {
    hooks: { onEnd: (end) => void ended.push(end.state.instance.id) },
  });
  assert.deepEqual(
    states.map((s) => [s.instance.id, s.status, s.reason]),
    [
      ["hangs", "error", "timed out after 2 s (timeouts.scenarioSeconds)"],
      ["quick", "passed", null],
    ],
  );
  // The quick scenario did not wait for the match (2 jobs): it ended first.
  assert.deepEqual(ended, ["quick", "hangs"]);
  assert.ok(Date.now() - startedMs < 60_000);
});

Deno.test("runSuite() stops a scenario in the middle of a match when the suite stops: unfinished, for a resume", async () => {
  await using dir = await tempDir();
  using store = openStore(`${dir.path}/home`);
  const suite = await suiteIn(
    dir.path,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      `  - {key: hangs, turns: ["${"a".repeat(40)}!"], checks: [{regex: "said=(a|a)*$"}]}`,
    ].join("\n"),
  );
  const stop = new AbortController();
  const { states, stopped } = await play(store, suite, {
    stop: stop.signal,
    hooks: { onConversation: () => void setTimeout(() => stop.abort(), 500) },
  });
  assert.equal(stopped, true);
  assert.deepEqual(states.map((s) => [s.instance.id, s.status]), [["hangs", "pending"]]);
});
