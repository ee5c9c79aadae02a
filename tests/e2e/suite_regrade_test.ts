// `reins suite regrade` end to end: a suite run whose agent writes a file and answers, then the
// suite file's checks changed and the run regraded — the checks see the recorded answers and the
// working directory as the conversation left it (restored from its end-state snapshot), no agent
// starts, a new suite run holds the result, and compare reads it.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

// Writes report.txt in its working directory, answers, and counts its starts in the test's folder.
const AGENT = `#!/bin/sh
prompt=$(cat)
echo started >> "$DIR/starts"
echo "status: done" > report.txt
echo "the answer to $prompt"
`;

function suiteFile(dir: string, fileWants: string, answerWants: string): string {
  return [
    "suite: regrade",
    "driver: command",
    `exec: ${dir}/agent.sh`,
    "scenarios:",
    "  - key: write",
    "    turns: [question]",
    "    checks:",
    `      - {name: report, file: report.txt, contains: '${fileWants}'}`,
    `      - {name: answer, regex: '${answerWants}'}`,
    "      - {name: listed, command: 'test -f report.txt'}",
  ].join("\n");
}

async function starts(dir: string): Promise<number> {
  return (await Deno.readTextFile(`${dir}/starts`)).trim().split("\n").length;
}

Deno.test("reins suite regrade runs the changed checks on the recorded end state, with no agent", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT.replaceAll("$DIR", dir.path));
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suiteFile(dir.path, "done", "answer to"));
  const opts = { home, cwd: dir.path, allowRun: [`${dir.path}/agent.sh`, "sh"] };
  const ran = await reins(
    ["suite", "run", "suite.yaml", "--repeat", "3", "--json", "--no-report"],
    opts,
  );
  assert.equal(ran.code, 0, ran.stderr + ran.stdout);
  const first = JSON.parse(ran.stdout).suiteRunId;
  assert.equal(await starts(dir.path), 3);

  // Unchanged checks: the same verdicts, and compare calls it unchanged.
  const same = await reins(["suite", "regrade", first, "--json"], opts);
  assert.equal(same.code, 0, same.stderr + same.stdout);
  const sameRun = JSON.parse(same.stdout);
  assert.equal(sameRun.options.regradeOf, first);
  assert.deepEqual(sameRun.scenarios.map((s: { status: string }) => s.status), [
    "passed",
    "passed",
    "passed",
  ]);
  assert.equal(sameRun.scenarios[0].checks[0].detail, 'report.txt contains "done"');
  assert.equal((await reins(["suite", "compare", first, sameRun.suiteRunId], { home })).code, 0);

  // The file check and the answer's pattern changed: both fail on what was recorded.
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suiteFile(dir.path, "finished", "^yes"));
  const changed = await reins(["suite", "regrade", first], opts);
  assert.equal(changed.code, 1, changed.stderr + changed.stdout);
  assert.match(
    changed.stderr,
    /regrading suite run \S+ with .*suite\.yaml \(changed since\): no agent runs/,
  );
  assert.match(changed.stdout, /^write\.1\s+failed\s+1\/3\s+1\s/m);
  assert.equal(await starts(dir.path), 3, "no agent started");
  const newId = /suite run (\S+) regrades/.exec(changed.stderr)![1];
  const shown = JSON.parse((await reins(["suite", "show", newId, "--json"], { home })).stdout);
  const checks = shown.scenarios[0].checks;
  assert.deepEqual(checks.map((c: { name: string; outcome: string }) => [c.name, c.outcome]), [
    ["report", "failed"],
    ["answer", "failed"],
    ["listed", "passed"],
  ]);
  assert.equal(checks[0].detail, 'report.txt does not contain "finished"');
  assert.match(checks[1].detail, /does not match \/\^yes\/: "the answer to question"/);
  const showText = await reins(["suite", "show", newId], { home });
  assert.match(showText.stderr, new RegExp(`regrades suite run ${first}: its checks ran anew`));

  // compare reads the regrade like any suite run: 3/3 → 0/3 is significant (p = 0.05).
  const gate = await reins(["suite", "compare", first, newId], { home });
  assert.equal(gate.code, 1, gate.stdout);
  assert.match(gate.stdout, /^write\s+regressed\*\s+3\/3\s+0\/3\s+0\.050/m);
  assert.match(
    gate.stdout,
    /check "report" \(file\) met 3\/3 → 0\/3: B: report.txt does not contain "finished"/,
  );
});

Deno.test("reins suite regrade says when there is no end state to check, and leaves other checks decided", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(`${dir.path}/agent.sh`, AGENT.replaceAll("$DIR", dir.path));
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suiteFile(dir.path, "done", "answer to"));
  const opts = { home, cwd: dir.path, allowRun: [`${dir.path}/agent.sh`, "sh"] };
  const ran = await reins(["suite", "run", "suite.yaml", "--json", "--no-report"], opts);
  const first = JSON.parse(ran.stdout);
  // The end state lost (as a suite run from before regrade has none).
  await Deno.remove(`${home}/snapshots/manifests/${first.scenarios[0].runIds[0]}.end.json`);
  const regraded = await reins(["suite", "regrade", first.suiteRunId, "--json"], opts);
  const checks = JSON.parse(regraded.stdout).scenarios[0].checks;
  assert.deepEqual(checks.map((c: { outcome: string }) => c.outcome), [
    "grading_error",
    "passed",
    "grading_error",
  ]);
  assert.match(
    checks[0].detail,
    /^cannot check anew: no end state of its working directory was kept \(no end-state snapshot/,
  );

  const unknown = await reins(["suite", "regrade", "nope"], { home });
  assert.equal(unknown.code, 3, unknown.stderr);
  assert.match(unknown.stderr, /No suite run "nope"/);
});

Deno.test("an empty working directory at the conversation's end keeps no end-state snapshot, and regrades as empty", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  // Answers and writes nothing; a second scenario leaves a file, to tell the two apart.
  await Deno.writeTextFile(`${dir.path}/agent.sh`, '#!/bin/sh\nprompt=$(cat)\necho "ok $prompt"\n');
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  const suite = (check: string) =>
    [
      "suite: empty-end",
      "driver: command",
      `exec: ${dir.path}/agent.sh`,
      "scenarios:",
      `  - {key: empty, turns: [hi], checks: [${check}]}`,
      `  - {key: full, turns: [hi], setup: ['echo x > left.txt'], checks: [${check}]}`,
    ].join("\n");
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suite("{regex: 'ok hi'}"));
  const opts = { home, cwd: dir.path, allowRun: [`${dir.path}/agent.sh`, "sh"] };
  const ran = await reins(["suite", "run", "suite.yaml", "--json", "--no-report"], opts);
  assert.equal(ran.code, 0, ran.stderr + ran.stdout);
  const first = JSON.parse(ran.stdout);
  const [empty, full] = first.scenarios.map((s: { runIds: string[] }) => s.runIds[0]);
  const manifests = `${home}/snapshots/manifests`;
  await assert.rejects(Deno.stat(`${manifests}/${empty}.end.json`), Deno.errors.NotFound);
  await Deno.stat(`${manifests}/${full}.end.json`);

  // Checked anew: the empty one in an empty folder (no grading error), the other as it was left.
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    suite("{file: left.txt, absent: true}, {command: 'test -z \"$(ls -A)\"'}"),
  );
  const regraded = await reins(["suite", "regrade", first.suiteRunId, "--json"], opts);
  const outcomes = JSON.parse(regraded.stdout).scenarios.map((s: {
    checks: { outcome: string }[];
  }) => s.checks.map((c) => c.outcome));
  assert.deepEqual(outcomes, [["passed", "passed"], ["failed", "failed"]]);
});
