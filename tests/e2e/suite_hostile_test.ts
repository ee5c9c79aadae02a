// `reins suite` against what a careless or hostile user hands it, end to end: a suite run cut short
// or still running compared as if its unplayed scenarios were unchanged, a damaged journal read
// past by compare, a regrade of a suite run another process is still playing, flags that parse
// more than a whole number, and names with control characters. Each case failed before its fix.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

// Says the prompt back; waits while the gate file exists (the test holds a scenario with it).
const AGENT = `#!/bin/sh
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

async function waitFor(what: string, test: () => Promise<boolean>, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function suite(dir: string, keys: string[], extra: string[] = []) {
  await Deno.writeTextFile(`${dir}/agent.sh`, AGENT.replaceAll("$GATE_DIR", dir));
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  await Deno.writeTextFile(
    `${dir}/suite.yaml`,
    [
      "suite: hostile",
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

const ID = /suite run ([0-9a-f]{8}-[0-9a-f-]{27})/;

/** Plays suite.yaml to the end; its suite run id. */
async function played(dir: string, home: string, args: string[] = []): Promise<string> {
  const ran = await reins(["suite", "run", "suite.yaml", "--no-report", ...args], {
    home,
    cwd: dir,
    allowRun: [`${dir}/agent.sh`],
  });
  assert.equal(ran.code, 0, ran.stderr);
  return ID.exec(ran.stderr)![1];
}

/** Starts suite.yaml with scenario `held` held; resolves once its agent runs. */
async function holding(dir: string, home: string, held: string) {
  await Deno.writeTextFile(`${dir}/hold-${held}`, "");
  const child = spawnReins(["suite", "run", "suite.yaml", "--no-report", "--jobs", "1"], {
    home,
    cwd: dir,
    allowRun: [`${dir}/agent.sh`],
  });
  await waitFor(`${held}'s agent to start`, () => exists(`${dir}/pid-${held}`));
  const [id] = [...Deno.readDirSync(`${home}/suites`)].map((e) => e.name).sort().slice(-1);
  return { child, id };
}

Deno.test("suite compare: a scenario B never finished is not 'unchanged', and nothing finished is exit 2", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a", "b"]);
  const baseline = await played(dir.path, home);
  await Deno.remove(`${dir.path}/pid-b`);
  const { child, id: stopped } = await holding(dir.path, home, "b");
  child.kill("SIGINT");
  const output = await child.output();
  assert.equal(output.code, 1, new TextDecoder().decode(output.stderr));
  await Deno.remove(`${dir.path}/hold-b`);

  const compared = await reins(["suite", "compare", baseline, stopped], { home });
  // regression: b read 1/1 → 0/0 "unchanged", as if B had shown it still passes.
  assert.equal(compared.code, 0, compared.stderr);
  const rows = compared.stdout.split("\n");
  assert.ok(rows.some((row) => /^a\s+unchanged\s+1\/1\s+1\/1/.test(row)), compared.stdout);
  assert.ok(!rows.some((row) => /^b\s/.test(row)), compared.stdout);
  assert.ok(rows.includes("no play finished (not compared): b (B)"), compared.stdout);
  assert.match(
    compared.stderr,
    new RegExp(`warning: B ${stopped}: 1 of 2 plays not finished \\(still running, or stopped\\)`),
  );
  const json = JSON.parse(
    (await reins(["suite", "compare", baseline, stopped, "--json"], { home }))
      .stdout,
  );
  assert.deepEqual(json.unplayed, [{ scenario: "b", side: "B" }]);
  assert.deepEqual(json.scenarios.map((s: { scenario: string }) => s.scenario), ["a"]);
  const markdown = await reins(["suite", "compare", baseline, stopped, "--markdown"], { home });
  assert.match(markdown.stdout, /^No play finished \(not compared\): b \(B\)$/m);

  // A suite run with no finished play at all: nothing to gate on, which is not a pass.
  await Deno.writeTextFile(`${dir.path}/hold-a`, "");
  await Deno.remove(`${dir.path}/pid-a`);
  const early = spawnReins(["suite", "run", "suite.yaml", "--no-report", "--jobs", "1"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`],
  });
  await waitFor("a's agent to start", () => exists(`${dir.path}/pid-a`));
  const [running] = [...Deno.readDirSync(`${home}/suites`)].map((e) => e.name).sort().slice(-1);
  const none = await reins(["suite", "compare", baseline, running], { home });
  early.kill("SIGINT");
  await early.output();
  assert.equal(none.code, 2, none.stdout + none.stderr);
  assert.equal(none.stdout, "");
  assert.match(
    none.stderr,
    new RegExp(
      `^reins: Cannot compare ${baseline} with ${running}: no scenario they share has a finished play in ${running}\n`,
    ),
  );
});

Deno.test("suite compare: a damaged line of begun.jsonl is said, naming it (exit 6), never read past", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a", "b"]);
  const id = await played(dir.path, home, ["--jobs", "1"]);
  const journal = `${home}/suites/${id}/begun.jsonl`;
  const lines = (await Deno.readTextFile(journal)).split("\n");
  // a's first line (running), then its last (passed): that one damaged, as a bad disk would.
  assert.match(lines[1], /"id":"a".*"status":"passed"/);
  lines[1] = lines[1].slice(0, 40) + "\u0000garbage";
  await Deno.writeTextFile(journal, lines.join("\n"));
  const shown = await reins(["suite", "show", id], { home });
  assert.equal(shown.code, 6, shown.stderr);
  // regression: compare read a from its line before (running), as never finished, and went on.
  const compared = await reins(["suite", "compare", id, id], { home });
  assert.equal(compared.code, 6, compared.stdout + compared.stderr);
  assert.equal(compared.stdout, "");
  assert.match(
    compared.stderr,
    /^reins: Cannot compare suite run [0-9a-f-]+: Cannot read line 2 of .*begun\.jsonl: it is not JSON/,
  );
});

Deno.test("suite regrade refuses a suite run another process is still playing, and makes no suite run", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a", "b", "c"]);
  const { child, id } = await holding(dir.path, home, "b");
  try {
    const regraded = await reins(["suite", "regrade", id], { home, cwd: dir.path });
    // regression: it regraded a's result and b's and c's nothing into a "finished" suite run.
    assert.equal(regraded.code, 1, regraded.stdout + regraded.stderr);
    assert.equal(
      regraded.stderr.split("\n")[0],
      `reins: Suite run ${id} is still being run by another reins process`,
    );
    assert.deepEqual([...Deno.readDirSync(`${home}/suites`)].map((e) => e.name), [id]);
  } finally {
    child.kill("SIGINT");
    await child.output();
  }
  // Stopped, it is regraded: what did not finish is carried over as it was.
  await Deno.remove(`${dir.path}/hold-b`);
  const stopped = await reins(["suite", "regrade", id], { home, cwd: dir.path });
  assert.equal(stopped.code, 1, stopped.stderr);
  assert.match(stopped.stderr, new RegExp(`regrades ${id}`));
});

Deno.test("suite run --epochs and --jobs take digits only: 1e2, 0x3, ' 2' and 2.0 are exit 2, nothing run", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  for (
    const [flag, value] of [["--epochs", "1e2"], ["--epochs", "0x3"], ["--jobs", " 2"], [
      "--epochs",
      "2.0",
    ], ["--epochs", "+2"]]
  ) {
    // regression: Number() took each (1e2: every cell played 100 times).
    const ran = await reins(["suite", "run", "suite.yaml", "--no-report", flag, value], {
      home,
      cwd: dir.path,
      allowRun: [`${dir.path}/agent.sh`],
    });
    assert.equal(ran.code, 2, `${flag} ${value}: ${ran.stderr}`);
    assert.equal(
      ran.stderr.split("\n")[0],
      `reins: ${flag} takes a whole number from 1 to ${flag === "--jobs" ? 256 : 1000}: got ${
        JSON.stringify(value)
      }`,
    );
  }
  assert.equal(await exists(`${home}/suites`), false);
  await played(dir.path, home, ["--epochs", "2", "--jobs=2"]);
});

Deno.test("suite validate: a name with a newline or a dot is one quoted line; a suite name must be one line", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  const write = (name: string, lines: string[]) =>
    Deno.writeTextFile(
      `${dir.path}/${name}`,
      ["suite: hostile", ...lines, "scenarios:", "  - {key: one, turns: [hi]}"].join("\n"),
    );
  await write("agents.yaml", [
    "agents:",
    `  "a\\nb": {driver: command, exec: ./agent.sh}`,
    `  "a.1": {driver: command, exec: ./agent.sh}`,
  ]);
  const agents = await reins(["suite", "validate", "agents.yaml"], { home, cwd: dir.path });
  assert.equal(agents.code, 2, agents.stderr);
  // regression: the name was written raw, so its problem took two lines, and "a.1" read as a path.
  assert.deepEqual(agents.stderr.trimEnd().split("\n"), [
    `agents.yaml:3:11: agents["a\\nb"]: must be 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter`,
    `agents.yaml:4:10: agents["a.1"]: must be 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter`,
    "2 problems in agents.yaml; nothing was run",
  ]);
  // regression: a suite named across two lines ran, and split its line of `suite list` in two.
  await Deno.writeTextFile(
    `${dir.path}/named.yaml`,
    [
      `suite: "checkout\\nsupport"`,
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      "  - {key: one, turns: [hi]}",
    ].join("\n"),
  );
  const named = await reins(["suite", "run", "named.yaml", "--no-report"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`],
  });
  assert.equal(named.code, 2, named.stderr);
  assert.equal(
    named.stderr.split("\n")[0],
    "named.yaml:1:8: suite: must be one line, without control characters (it names the suite run in every list)",
  );
  assert.equal(await exists(`${home}/suites`), false);
});

Deno.test("suite run and regrade refuse a --junit FILE that cannot be written before anything runs (exit 2)", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  const cases = [
    [dir.path, `reins: --junit ${dir.path} is a directory, not a file to write`],
    [
      `${dir.path}/gone/junit.xml`,
      `reins: --junit ${dir.path}/gone/junit.xml: its folder ${dir.path}/gone does not exist`,
    ],
    [
      `${dir.path}/suite.yaml/junit.xml`,
      `reins: --junit ${dir.path}/suite.yaml/junit.xml: its folder ${dir.path}/suite.yaml is not a directory`,
    ],
  ];
  for (const [junit, said] of cases) {
    // regression: the suite was played to its end, then the write failed: exit 6, and no table.
    const ran = await reins(["suite", "run", "suite.yaml", "--no-report", "--junit", junit], {
      home,
      cwd: dir.path,
      allowRun: [`${dir.path}/agent.sh`],
    });
    assert.equal(ran.code, 2, ran.stderr);
    assert.equal(ran.stderr.split("\n")[0], said);
    assert.equal(await exists(`${dir.path}/pid-a`), false, "no agent started");
  }
  assert.equal(await exists(`${home}/suites`), false);
  // In the data root, which the run makes: written (the Kubernetes recipe of docs/suites.md).
  const id = await played(dir.path, home, ["--junit", `${home}/junit.xml`]);
  assert.match(await Deno.readTextFile(`${home}/junit.xml`), /<testsuites/);
  const regraded = await reins(["suite", "regrade", id, "--junit", dir.path], {
    home,
    cwd: dir.path,
  });
  assert.equal(regraded.code, 2, regraded.stderr);
  assert.equal(regraded.stderr.split("\n")[0], cases[0][1]);
  assert.equal([...Deno.readDirSync(`${home}/suites`)].length, 1, "no regrade suite run made");
});

/** The suite run ids under the data root, sorted. */
function suiteRuns(home: string): string[] {
  return [...Deno.readDirSync(`${home}/suites`)].map((e) => e.name).filter((n) =>
    !n.startsWith(".")
  )
    .sort();
}

Deno.test("suite compare of a suite run with itself is exit 2, not an 'unchanged' a gate passes", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  const id = await played(dir.path, home);
  // regression: exit 0, every scenario "unchanged", whatever the suite run held
  for (const args of [[id, id], [id, id.slice(0, 8)]]) {
    const compared = await reins(["suite", "compare", ...args], { home });
    assert.equal(compared.code, 2, compared.stdout + compared.stderr);
    assert.equal(
      compared.stderr.split("\n")[0],
      `reins: Cannot compare suite run ${id} with itself`,
    );
  }
});

Deno.test("suite run --reuse and --rerun --from of another suite's run are exit 2 naming both, nothing begun", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  // The other suite: the same keys, so nothing else would tell them apart.
  const other = (await Deno.readTextFile(`${dir.path}/suite.yaml`)).replace(
    "suite: hostile",
    "suite: other",
  ).replace("answer to a", "nothing like it");
  await Deno.writeTextFile(`${dir.path}/other.yaml`, other);
  const ran = await reins(["suite", "run", "other.yaml", "--no-report"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`],
  });
  assert.equal(ran.code, 1, ran.stderr);
  const id = ID.exec(ran.stderr)![1];
  // regression: --reuse played on, its keys matched to another suite's recordings; --rerun
  // failed --from replayed the other suite's failures as this file's scenarios
  for (
    const [flags, doing] of [[["--reuse", id], "reuse"], [
      ["--rerun", "failed", "--from", id],
      "rerun the failures of",
    ]] as const
  ) {
    const refused = await reins(["suite", "run", "suite.yaml", "--no-report", ...flags], {
      home,
      cwd: dir.path,
      allowRun: [`${dir.path}/agent.sh`],
    });
    assert.equal(refused.code, 2, refused.stdout + refused.stderr);
    assert.equal(
      refused.stderr.split("\n")[0],
      `reins: Cannot ${doing} suite run ${id}: it ran suite "other" (${dir.path}/other.yaml), not "hostile" (${dir.path}/suite.yaml)`,
    );
    assert.deepEqual(suiteRuns(home), [id]);
  }
});

Deno.test("suite regrade of a scenario whose run cannot be read names that run, its folder and why", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await suite(dir.path, ["a"]);
  const ran = await reins(["suite", "run", "suite.yaml", "--no-report", "--json"], {
    home,
    cwd: dir.path,
    allowRun: [`${dir.path}/agent.sh`],
  });
  assert.equal(ran.code, 0, ran.stderr);
  const first = JSON.parse(ran.stdout);
  const runId = first.scenarios[0].runIds[0];
  await Deno.remove(`${home}/runs/${runId}`, { recursive: true });
  const regraded = await reins(["suite", "regrade", first.suiteRunId, "--json"], {
    home,
    cwd: dir.path,
  });
  assert.equal(regraded.code, 1, regraded.stderr);
  const [scenario] = JSON.parse(regraded.stdout).scenarios;
  assert.equal(scenario.status, "error");
  // regression: "its recorded runs cannot be read", and nothing of which or why
  assert.match(
    scenario.reason,
    new RegExp(`^cannot be read: its run ${runId} \\(${home}/runs/${runId}\\): .+`),
  );
});

Deno.test("stats --context '' and run --model '' are exit 2 with the value quoted, not 'no runs' or a harness's own error", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const stats = await reins(["stats", "--context", ""], { home, cwd: dir.path });
  // regression: exit 3, "No runs on context """ (as if it were a name that could have runs)
  assert.equal(stats.code, 2, stats.stderr);
  assert.equal(
    stats.stderr.split("\n")[0],
    `reins: Cannot use "" as a context id: it is empty`,
  );
  for (const driver of ["loop", "claude"]) {
    const run = await reins(["run", "--driver", driver, "--model", "", "hello"], {
      home,
      cwd: dir.path,
    });
    // regression: the loop ran its demo model; claude was started with `--model ''`
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr.split("\n")[0], `reins: --model takes a model name, not ""`);
  }
  assert.deepEqual(await Array.fromAsync(Deno.readDir(`${home}/runs`)).catch(() => []), []);
});
