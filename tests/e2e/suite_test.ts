// `reins suite` end to end, under the binary's sandbox: the example suite passes offline, a bad
// file is exit 2 with every problem's path, --json is JSON only, --junit, --filter and --repeat,
// kill -9 then --resume plays only what did not finish, --rerun makes a linked suite run, and
// SIGINT leaves the rest for --resume.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

const EXAMPLE_DIR = new URL("../../examples/suite/", import.meta.url).pathname;
const SHOP_AGENT = `${EXAMPLE_DIR}agents/shop.sh`;

Deno.test("reins suite run passes the example suite offline: every check kind, scripted and simulated users, judges on mock:", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const junit = `${dir.path}/junit.xml`;
  const result = await reins(["suite", "run", "suite.yaml", "--junit", junit], {
    home,
    cwd: EXAMPLE_DIR,
    allowRun: [SHOP_AGENT, "sh"],
    // The JUnit file goes beside the data root, outside the working directory.
    allowPaths: [dir.path],
  });
  assert.equal(result.code, 0, result.stderr + result.stdout);
  const table = result.stdout.trimEnd().split("\n");
  assert.match(
    table[0],
    /^scenario\s+status\s+checks\s+turns\s+cost\s+duration\s+first failing check$/,
  );
  assert.deepEqual(table.slice(1, 5).map((line) => line.split(/\s+/).slice(0, 4)), [
    ["refund-late-order", "passed", "8/8", "2"],
    ["impatient-customer", "passed", "3/3", "2"],
    ["no-refund-without-asking", "passed", "4/4", "1"],
    ["notes-on-the-demo-model", "passed", "4/4", "1"],
  ]);
  assert.match(
    table[table.length - 1],
    /^4 scenarios: 4 passed, 0 failed, 0 errors, 0 skipped in /,
  );
  // Progress on stderr: a line as each scenario starts and one as it ends.
  const starts = result.stderr.split("\n").filter((line) => / start {3}/.test(line));
  const ends = result.stderr.split("\n").filter((line) => /\] passed {2}/.test(line));
  assert.equal(starts.length, 4);
  assert.equal(ends.length, 4);
  const xml = await Deno.readTextFile(junit);
  assert.match(
    xml,
    /<testsuite name="checkout-support" tests="4" failures="0" errors="0" skipped="0"/,
  );
  assert.equal(xml.match(/<testcase /g)?.length, 4);

  // The scenario's runs are one family: reins stats --family shows its cost.
  const shown = JSON.parse((await reins(["suite", "show", "--json"], { home })).stdout);
  const refund = shown.scenarios.find((s: { key: string }) => s.key === "refund-late-order");
  assert.equal(refund.runIds.length, 2);
  const stats = await reins(["stats", "--family", refund.runIds[1]], { home });
  assert.equal(stats.code, 0, stats.stderr);
  assert.match(stats.stdout, new RegExp(`family of ${refund.runIds[0]} \\(2 runs\\)`));
  assert.match(stats.stdout, /\$0\.0060/);
});

Deno.test("reins suite run refuses an unusable file with exit 2, every problem's path and line, and runs nothing", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(
    `${dir.path}/suite.yaml`,
    [
      "suite: s",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      "  - {key: a, turns: [hi]}",
      "  - {key: b, turns: [hi], jobs: 3}",
      "  - key: c",
      "    turns: [hi]",
      "    checks:",
      '      - {regex: "(unclosed"}',
    ].join("\n"),
  );
  for (const command of ["run", "validate"]) {
    const result = await reins(["suite", command, "suite.yaml"], { home, cwd: dir.path });
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stdout, "");
    assert.deepEqual(result.stderr.trimEnd().split("\n"), [
      "suite.yaml:6:27: scenarios[1].jobs: unknown key",
      "suite.yaml:10:17: scenarios[2].checks[0].regex: invalid regular expression (/(unclosed/u: Unterminated group)",
      "2 problems in suite.yaml; nothing was run",
    ]);
  }
  const json = await reins(["suite", "validate", "suite.yaml", "--json"], { home, cwd: dir.path });
  assert.equal(json.code, 2);
  const parsed = JSON.parse(json.stdout);
  assert.equal(parsed.valid, false);
  assert.deepEqual(parsed.problems.map((p: { path: string }) => p.path), [
    "scenarios[1].jobs",
    "scenarios[2].checks[0].regex",
  ]);
  assert.throws(() => Deno.statSync(`${home}/suites`), Deno.errors.NotFound);
});

const COUNTING_AGENT = `#!/bin/sh
# Says the prompt back; waits while the gate file exists (the test holds a scenario with it).
prompt=$(cat)
echo "$$" > "$GATE_DIR/pid-$prompt"
while [ -f "$GATE_DIR/hold-$prompt" ]; do sleep 0.05; done
echo "answer to $prompt"
`;

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function countingSuite(dir: string, keys: string[], extra: string[] = []) {
  await Deno.writeTextFile(`${dir}/agent.sh`, COUNTING_AGENT.replaceAll("$GATE_DIR", dir));
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  await Deno.writeTextFile(
    `${dir}/suite.yaml`,
    [
      "suite: counting",
      "driver: command",
      `exec: ${dir}/agent.sh`,
      ...extra,
      "scenarios:",
      ...keys.map((key) =>
        `  - {key: ${key}, turns: [${key}], checks: [{regex: 'answer to ${key}'}]}`
      ),
    ].join("\n"),
  );
}

async function waitFor(what: string, test: () => boolean | Promise<boolean>, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A scenario's saved state as docs/suites.md lays it out: its file, or the last line of
 * begun.jsonl for it when that line's attempt began after the file was written (one in flight).
 */
function scenarioFile(home: string, key: string): Record<string, unknown> | null {
  const [id] = [...Deno.readDirSync(`${home}/suites`)].map((e) => e.name);
  const read = (path: string) => {
    try {
      return Deno.readTextFileSync(path);
    } catch {
      return null;
    }
  };
  const text = read(`${home}/suites/${id}/scenarios/${key}.json`);
  const file = text === null ? null : JSON.parse(text) as { attempts: unknown[] };
  const begun = (read(`${home}/suites/${id}/begun.jsonl`) ?? "").split("\n").filter(Boolean)
    .map((line) => JSON.parse(line) as { instance: { id: string }; attempts: unknown[] })
    .filter((state) => state.instance.id === key).at(-1) ?? null;
  if (begun !== null && (file === null || begun.attempts.length > file.attempts.length)) {
    return begun;
  }
  return file;
}

Deno.test("reins suite run --resume after kill -9 plays only what did not finish and leaves finished results as they were", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["a", "b", "c", "d"]);
  await Deno.writeTextFile(`${dir.path}/hold-c`, "");
  const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  await waitFor("c's agent to start", () => exists(`${dir.path}/pid-c`));
  assert.equal(scenarioFile(home, "b")?.status, "passed");
  assert.equal(scenarioFile(home, "c")?.status, "running");
  const before = { a: scenarioFile(home, "a"), b: scenarioFile(home, "b") };
  child.kill("SIGKILL");
  await child.status;
  await child.stdout.cancel();
  await child.stderr.cancel();
  // The agent outlived reins: end it too.
  const agentPid = Number((await Deno.readTextFile(`${dir.path}/pid-c`)).trim());
  try {
    Deno.kill(agentPid, "SIGKILL");
  } catch { /* gone already */ }
  await Deno.remove(`${dir.path}/hold-c`);

  const resumed = await reins(["suite", "run", "suite.yaml", "--resume", "--json"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(resumed.code, 0, resumed.stderr);
  const result = JSON.parse(resumed.stdout);
  assert.deepEqual(result.scenarios.map((s: { status: string }) => s.status), [
    "passed",
    "passed",
    "passed",
    "passed",
  ]);
  assert.deepEqual(scenarioFile(home, "a"), before.a);
  assert.deepEqual(scenarioFile(home, "b"), before.b);
  const c = scenarioFile(home, "c") as { attempts: { status: string | null }[] };
  assert.deepEqual(c.attempts.map((a) => a.status), [null, "passed"]);
  assert.equal((scenarioFile(home, "d") as { attempts: unknown[] }).attempts.length, 1);
  assert.equal(result.state, "finished");
  // The run cut short by the kill is marked interrupted, not left running.
  const firstRun = (c.attempts[0] as unknown as { runIds: string[] }).runIds[0];
  const shown = JSON.parse((await reins(["show", firstRun, "--json"], { home })).stdout);
  assert.equal(shown.record.status, "interrupted");

  // Nothing is left to resume now.
  const again = await reins(["suite", "run", "suite.yaml", "--resume"], { home, cwd: dir.path });
  assert.equal(again.code, 3);
  assert.match(again.stderr, /No suite run of .*suite\.yaml is left to resume/);
});

Deno.test("regression: reins suite list and show tell a suite run killed with -9 as interrupted, not running", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["a", "b"]);
  await Deno.writeTextFile(`${dir.path}/hold-b`, "");
  const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  await waitFor("b's agent to start", () => exists(`${dir.path}/pid-b`));
  const stateIn = async (args: string[]) => {
    const listed = await reins(["suite", ...args], { home, cwd: dir.path });
    assert.equal(listed.code === 0 || listed.code === 1, true, listed.stderr);
    return listed;
  };
  const [id] = [...Deno.readDirSync(`${home}/suites`)].map((e) => e.name);
  assert.match((await stateIn(["list"])).stdout, new RegExp(`^${id}  \\S+ \\S+  running  `));
  child.kill("SIGKILL");
  await child.status;
  await child.stdout.cancel();
  await child.stderr.cancel();
  try {
    Deno.kill(Number((await Deno.readTextFile(`${dir.path}/pid-b`)).trim()), "SIGKILL");
  } catch { /* gone already */ }
  await Deno.remove(`${dir.path}/hold-b`);

  assert.match((await stateIn(["list"])).stdout, new RegExp(`^${id}  \\S+ \\S+  interrupted  `));
  const listed = JSON.parse((await stateIn(["list", "--json"])).stdout);
  assert.deepEqual(listed.suiteRuns.map((r: { state: string }) => r.state), ["interrupted"]);
  const shown = await stateIn(["show", id]);
  assert.equal(shown.code, 1);
  assert.match(shown.stderr, /· interrupted\n/);
  assert.match(shown.stderr, new RegExp(`its process is gone: reins suite run .* --resume ${id}`));
  assert.equal(JSON.parse((await stateIn(["show", id, "--json"])).stdout).state, "interrupted");
  // Nothing was written: the file still says running, for --resume to take up.
  const header = JSON.parse(await Deno.readTextFile(`${home}/suites/${id}/suite-run.json`));
  assert.equal(header.state, "running");
});

Deno.test("reins suite run --rerun failed --from ID plays only the failures, as a new suite run linked to the first", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["a", "b", "c"]);
  const suite = await Deno.readTextFile(`${dir.path}/suite.yaml`);
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suite.replace("'answer to b'", "'nope'"));
  const first = await reins(["suite", "run", "suite.yaml", "--json"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(first.code, 1);
  const firstRun = JSON.parse(first.stdout);
  assert.deepEqual(firstRun.scenarios.map((s: { status: string }) => s.status), [
    "passed",
    "failed",
    "passed",
  ]);

  await Deno.writeTextFile(`${dir.path}/suite.yaml`, suite);
  const rerun = await reins([
    "suite",
    "run",
    "suite.yaml",
    "--rerun",
    "failed",
    "--from",
    firstRun.suiteRunId.slice(0, 20),
    "--json",
  ], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(rerun.code, 0, rerun.stderr);
  const second = JSON.parse(rerun.stdout);
  assert.notEqual(second.suiteRunId, firstRun.suiteRunId);
  assert.deepEqual(second.options.rerunOf, { suiteRunId: firstRun.suiteRunId, which: ["failed"] });
  assert.deepEqual(
    second.scenarios.map((s: { instance: string; status: string }) => [s.instance, s.status]),
    [["b", "passed"]],
  );

  const none = await reins([
    "suite",
    "run",
    "suite.yaml",
    "--rerun",
    "errors",
    "--from",
    firstRun.suiteRunId,
  ], {
    home,
    cwd: dir.path,
  });
  assert.equal(none.code, 0);
  assert.match(none.stderr, /has no errors to rerun/);

  const list = JSON.parse((await reins(["suite", "list", "--json"], { home })).stdout);
  assert.deepEqual(list.suiteRuns.map((r: { id: string }) => r.id), [
    second.suiteRunId,
    firstRun.suiteRunId,
  ]);
});

Deno.test("reins suite run --filter and --repeat choose and repeat scenarios; --json prints only JSON", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["refund-a", "login", "refund-b"]);
  const result = await reins([
    "suite",
    "run",
    "suite.yaml",
    "--filter",
    "refund-*",
    "--repeat",
    "2",
    "--json",
    "--jobs",
    "4",
  ], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(result.code, 0, result.stderr);
  const parsed = JSON.parse(result.stdout);
  assert.deepEqual(parsed.scenarios.map((s: { instance: string }) => s.instance), [
    "refund-a.1",
    "refund-a.2",
    "refund-b.1",
    "refund-b.2",
  ]);
  assert.equal(result.stdout.trim().split("\n").length, 1);
  // Each repeat is its own conversation.
  const runIds = parsed.scenarios.map((s: { runIds: string[] }) => s.runIds[0]);
  assert.equal(new Set(runIds).size, 4);
});

Deno.test("reins suite run stops on SIGINT: the rest stays unfinished, exit 1, and --resume finishes it", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["a", "b", "c"]);
  await Deno.writeTextFile(`${dir.path}/hold-b`, "");
  const child = spawnReins(["suite", "run", "suite.yaml", "--jobs", "1"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  await waitFor("b's agent to start", () => exists(`${dir.path}/pid-b`));
  child.kill("SIGINT");
  const output = await child.output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 1, stderr);
  assert.match(
    stderr,
    /stopped: 2 scenarios not finished; reins suite run suite\.yaml --resume [0-9a-f-]+ plays them/,
  );
  assert.equal(scenarioFile(home, "a")?.status, "passed");
  assert.equal(scenarioFile(home, "b")?.status, "pending");
  await Deno.remove(`${dir.path}/hold-b`);
  const id = /--resume ([0-9a-f-]+) plays them/.exec(stderr)![1];
  const resumed = await reins(["suite", "run", "suite.yaml", "--resume", id.slice(0, 24)], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stderr, new RegExp(`resuming suite run ${id}: 2 of 3 scenarios left`));
});

Deno.test("reins suite run stops at exit 4 when the sandbox refuses the agent, leaving the scenarios for --resume", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await countingSuite(dir.path, ["a", "b"], ["retry: {errors: 2}"]);
  const refused = await reins(["suite", "run", "suite.yaml", "--jobs", "1"], {
    home,
    cwd: dir.path,
  });
  assert.equal(refused.code, 4, refused.stderr);
  assert.match(
    refused.stderr,
    /The sandbox refused to run ".*agent\.sh": grant it with REINS_ALLOW_RUN=/,
  );
  const listed = JSON.parse((await reins(["suite", "list", "--json"], { home })).stdout);
  assert.equal(listed.suiteRuns[0].state, "stopped");
  assert.equal(listed.suiteRuns[0].totals.unfinished, 2);
  // No retries were spent on it, and a resume with the agent allowed finishes the suite run.
  const a = scenarioFile(home, "a") as { attempts: unknown[] } | null;
  assert.ok(a === null || a.attempts.length === 1);
  const resumed = await reins(["suite", "run", "suite.yaml", "--resume"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`, "sh"],
  });
  assert.equal(resumed.code, 0, resumed.stderr);
});
