// The suite file: what it takes, what it resolves, and every problem it refuses with its exact
// path and line.
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "yaml";
import { loadSuite, parseSuite, SuiteFileError } from "../../lib/suite/load.ts";
import { tempDir } from "../support/reins.ts";

const EXAMPLE = new URL("../../examples/suite/suite.yaml", import.meta.url).pathname;
const EXAMPLE_DIR = new URL("../../examples/suite/", import.meta.url).pathname.replace(/\/$/, "");
const encoder = new TextEncoder();

function problemsOf(file: string, text: string): string[] {
  try {
    parseSuite(file, encoder.encode(text));
  } catch (error) {
    if (error instanceof SuiteFileError) return error.lines("suite.yaml");
    throw error;
  }
  assert.fail("the file was accepted");
}

Deno.test("loadSuite() reads the example suite: defaults applied, paths made absolute, every check kind", async () => {
  const suite = await loadSuite(EXAMPLE);
  assert.equal(suite.name, "checkout-support");
  assert.equal(suite.jobs, 4);
  assert.match(suite.digest, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(suite.scenarios.map((s) => s.key), [
    "refund-late-order",
    "impatient-customer",
    "no-refund-without-asking",
    "notes-on-the-demo-model",
  ]);
  const [refund, simulated, , demo] = suite.scenarios;
  assert.equal(refund.exec, `${EXAMPLE_DIR}/agents/shop.sh`);
  assert.equal(refund.workdir, `${EXAMPLE_DIR}/shop`);
  assert.deepEqual(refund.budget, { maxUsd: 0.5, maxTurns: 20 });
  assert.equal(refund.turnSeconds, 60);
  assert.equal(refund.scenarioSeconds, 300);
  assert.equal(refund.retryErrors, 1);
  assert.deepEqual(refund.conversation, {
    kind: "scripted",
    turns: ["Where is my order 1234?", "I want a refund."],
  });
  assert.deepEqual(
    new Set(refund.checks.map((c) => c.kind)),
    new Set(["file", "regex", "command", "tool", "cost", "judge"]),
  );
  // The suite's own checks come after the scenario's.
  assert.equal(refund.checks[refund.checks.length - 1].name, "cheap");
  const judge = refund.checks.find((c) => c.kind === "judge");
  assert.equal(
    judge?.kind === "judge" && judge.judge.model,
    `mock:${EXAMPLE_DIR}/judges/resolution.json`,
  );
  assert.equal(simulated.conversation.kind, "simulated");
  assert.equal(
    simulated.conversation.kind === "simulated" && simulated.conversation.user.model,
    `mock:${EXAMPLE_DIR}/users/dana.json`,
  );
  // A scenario on another driver does not inherit the top's exec.
  assert.equal(demo.driver, "loop");
  assert.equal(demo.exec, null);
  assert.equal(demo.model, null);
});

Deno.test("parseSuite() names the issue's example path: scenarios[2].checks[0].regex", () => {
  const text = [
    "suite: s",
    "scenarios:",
    "  - {key: a, turns: [hi]}",
    "  - {key: b, turns: [hi]}",
    "  - key: c",
    "    turns: [hi]",
    "    checks:",
    '      - {regex: "(unclosed"}',
  ].join("\n");
  assert.deepEqual(problemsOf("/x/suite.yaml", text), [
    "suite.yaml:8:17: scenarios[2].checks[0].regex: invalid regular expression (/(unclosed/u: Unterminated group)",
  ]);
});

Deno.test("parseSuite() reports every problem at once, in file order, unknown keys with a suggestion", () => {
  const text = [
    "suite: checkout", //                    1
    "aprove: auto", //                       2
    "budget: {maxUsd: -1, maxTurn: 3}", //   3
    "scenarios:", //                         4
    "  - key: refund", //                    5
    "    turns: [hi]", //                    6
    "    checks:", //                        7
    '      - {regex: "x", in: anywhere}', // 8
    '  - key: "bad key"', //                 9
    "    turns: []", //                      10
    "  - key: other", //                     11
    "    turns: [hi]", //                    12
    "    checks:", //                        13
    "      - {frobnicate: 1}", //            14
    "      - {tool: x, absent: yes}", //     15
  ].join("\n");
  assert.deepEqual(problemsOf("/x/suite.yaml", text), [
    "suite.yaml:2:1: aprove: unknown key (did you mean 'approve'?)",
    "suite.yaml:3:18: budget.maxUsd: too small: expected number to be >=0",
    "suite.yaml:3:22: budget.maxTurn: unknown key (did you mean 'maxTurns'?)",
    'suite.yaml:8:26: scenarios[0].checks[0].in: invalid option: expected one of "final"|"any"',
    "suite.yaml:9:10: scenarios[1].key: must be 1 to 120 ASCII letters, digits, '_' or '-', starting with a letter or digit",
    "suite.yaml:10:12: scenarios[1].turns: needs at least one turn",
    "suite.yaml:14:9: scenarios[2].checks[0]: is not a check: give one of judge, command, tool, maxUsd, file, regex",
    "suite.yaml:15:27: scenarios[2].checks[1].absent: invalid input: expected boolean, received string",
  ]);
});

Deno.test("parseSuite() refuses what only the whole file shows: duplicate keys and names, turns and user, drivers", () => {
  const text = [
    "suite: s",
    "driver: command",
    "scenarios:",
    "  - key: a",
    "    turns: [hi]",
    "    checks: [{name: n, file: x}, {name: n, file: y}]",
    "  - key: a",
    "    turns: [hi]",
    "    user: {model: 'openai:gpt-4.1-mini'}",
    "  - key: c",
    "    driver: loop",
    "    exec: ./agent.sh",
    "  - key: d",
    "    turns: [hi]",
    "    model: sonnet",
  ].join("\n");
  assert.deepEqual(problemsOf("/x/suite.yaml", text), [
    "suite.yaml:2:9: driver: the command driver needs exec",
    'suite.yaml:6:41: scenarios[0].checks[1].name: "n" is also the name of scenarios[0].checks[0]',
    'suite.yaml:7:10: scenarios[1].key: "a" is also the key of scenarios[0]',
    "suite.yaml:9:11: scenarios[1].user: give turns or user, not both",
    "suite.yaml:10:5: scenarios[2]: needs turns (scripted user turns) or user (a simulated user)",
    "suite.yaml:12:11: scenarios[2].exec: exec goes with driver: command, not loop",
    "suite.yaml:15:12: scenarios[3].model: model does not go with driver: command",
  ]);
});

Deno.test("parseSuite() checks that workdirs and mock model files exist, from the file's folder", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/user.json`, "[]");
  const text = [
    "suite: s",
    "workdir: ./missing",
    "scenarios:",
    "  - key: a",
    "    user: {model: 'mock:user.json'}",
    "    checks: [{judge: {model: 'mock:judge.json', rubric: r}}]",
  ].join("\n");
  assert.deepEqual(problemsOf(`${dir.path}/suite.yaml`, text), [
    `suite.yaml:2:10: workdir: ${dir.path}/missing is not a directory`,
    `suite.yaml:6:30: scenarios[0].checks[0].judge.model: the mock model file ${dir.path}/judge.json does not exist`,
  ]);
});

Deno.test("parseSuite() says where YAML syntax breaks, and reads JSON with lines too", () => {
  const broken = problemsOf("/x/suite.yaml", "suite: s\nscenarios:\n  - key: a\n   turns: [hi\n");
  assert.ok(broken.length >= 1);
  for (const line of broken) assert.match(line, /^suite\.yaml:\d+:\d+: is not valid YAML: /);
  const problems = problemsOf(
    "/x/suite.json",
    '{\n  "suite": "s",\n  "scenarios": [\n    {"key": "a", "turns": ["hi"], "oops": 1}\n  ]\n}\n',
  );
  assert.deepEqual(problems, ["suite.yaml:4:35: scenarios[0].oops: unknown key"]);
  const notJson = problemsOf("/x/suite.json", "suite: s\n");
  assert.equal(notJson.length, 1);
  assert.match(notJson[0], /^suite\.yaml: is not JSON: /);
});

Deno.test("parseSuite() takes the leading inline flags of other regex dialects", () => {
  const suite = parseSuite(
    "/x/suite.yaml",
    encoder.encode(
      'suite: s\nscenarios:\n  - {key: a, turns: [hi], checks: [{regex: "(?i)SORRY"}]}\n',
    ),
  );
  const check = suite.scenarios[0].checks[0];
  assert.equal(check.kind, "regex");
  assert.equal(check.name, "final text /(?i)SORRY/");
});

Deno.test("regression: parseSuite() refuses a scenario key that is a Windows device name, in any case, and keys equal but for case", () => {
  const text = [
    "suite: s",
    "scenarios:",
    "  - {key: CON, turns: [hi]}",
    "  - {key: nul, turns: [hi]}",
    "  - {key: Com1, turns: [hi]}",
    "  - {key: lpt9, turns: [hi]}",
    "  - {key: console, turns: [hi]}",
    "  - {key: Refund, turns: [hi]}",
    "  - {key: refund, turns: [hi]}",
  ].join("\n");
  assert.deepEqual(problemsOf("/x/suite.yaml", text), [
    'suite.yaml:3:11: scenarios[0].key: "CON" is a device name on Windows (CON): give another key',
    'suite.yaml:4:11: scenarios[1].key: "nul" is a device name on Windows (NUL): give another key',
    'suite.yaml:5:11: scenarios[2].key: "Com1" is a device name on Windows (COM1): give another key',
    'suite.yaml:6:11: scenarios[3].key: "lpt9" is a device name on Windows (LPT9): give another key',
    'suite.yaml:9:11: scenarios[6].key: "refund" differs from the key of scenarios[5] ("Refund") only in case',
  ]);
});

Deno.test("regression: parseSuite() refuses a billion laughs where it grows, with its line, and takes aliases used many times", () => {
  const lines = ["suite: s", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  let previous = "a";
  for (const name of "bcdefghi") {
    lines.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(",")}]`);
    previous = name;
  }
  lines.push("scenarios: [{key: a, turns: [hi]}]");
  assert.deepEqual(problemsOf("/x/suite.yaml", lines.join("\n")), [
    "suite.yaml:8:7: g: holds more than 1,000,000 values once its aliases are expanded: anchors used over and over (a YAML bomb?)",
  ]);
  // The YAML library's own guard (maxAliasCount 1000) refused this, as "a bug in reins".
  const shared = [
    "suite: s",
    "scenarios:",
    "  - &first {key: s0, turns: [hi], checks: [{tool: t}]}",
    ...Array.from({ length: 1500 }, (_, i) => `  - {<<: *first, key: s${i + 1}}`),
  ].join("\n");
  const suite = parseSuite("/x/suite.yaml", encoder.encode(shared));
  assert.equal(suite.scenarios.length, 1501);
  assert.deepEqual(suite.scenarios[1500].checks.map((c) => c.name), ["tool t"]);
});

Deno.test("parseSuite() refuses an alias inside the value it names, NUL characters, and JSON's duplicate keys, each where it is", () => {
  assert.deepEqual(problemsOf("/x/suite.yaml", "suite: s\npersona: &p [1, *p]\nscenarios: []"), [
    "suite.yaml:2:17: the alias *p is used inside the value it names: it would never end",
  ]);
  const nul = [
    "suite: s",
    'workdir: "./shop\\0"',
    "scenarios:",
    '  - {key: a, turns: [hi], env: {A: "x\\0y"}}',
  ].join("\n");
  assert.deepEqual(problemsOf("/x/suite.yaml", nul), [
    "suite.yaml:2:10: workdir: holds a NUL character (\\0)",
    "suite.yaml:4:36: scenarios[0].env.A: holds a NUL character (\\0)",
  ]);
  const json = '{\n  "suite": "s",\n  "scenarios": [],\n  "suite": "t"\n}\n';
  assert.deepEqual(problemsOf("/x/suite.json", json), [
    "suite.yaml:4:3: is not usable JSON: Map keys must be unique",
  ]);
});

// A scenario arbitrary enough to exercise keys, persona values and turn texts.
const scenarioArb = fc.record({
  // Not a Windows device name (a key names its state file).
  key: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/).filter((key) =>
    !/^(con|prn|aux|nul|com[1-9]|lpt[1-9])$/i.test(key)
  ),
  persona: fc.dictionary(
    fc.stringMatching(/^[a-z]{1,8}$/),
    fc.oneof(fc.string(), fc.integer(), fc.boolean()),
    { maxKeys: 3 },
  ),
  instruction: fc.string(),
  turns: fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 3 }),
});

Deno.test("parseSuite() resolves the same suite from YAML and from JSON (property)", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(scenarioArb, {
        minLength: 1,
        maxLength: 4,
        selector: (s) => s.key.toLowerCase(),
      }),
      (scenarios) => {
        const file = { suite: "prop", driver: "loop", scenarios };
        const fromJson = parseSuite("/x/s.json", encoder.encode(JSON.stringify(file)));
        const fromYaml = parseSuite("/x/s.yaml", encoder.encode(stringify(file)));
        assert.deepEqual(fromYaml.scenarios, fromJson.scenarios);
        assert.deepEqual(
          fromJson.scenarios.map((s) => [s.key, s.persona, s.instruction, s.conversation]),
          scenarios.map((
            s,
          ) => [s.key, { ...s.persona }, s.instruction, { kind: "scripted", turns: s.turns }]),
        );
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("regression: loadSuite() refuses a file past 4 MiB unread, a FIFO, and a workdir that is a loop of links, each a problem of the file", async () => {
  await using dir = await tempDir();
  const big = `${dir.path}/big.yaml`;
  await Deno.writeTextFile(big, `suite: s\ndescription: ${"x".repeat(5 * 1024 * 1024)}\n`);
  const problems = async (path: string) => {
    try {
      await loadSuite(path);
    } catch (error) {
      if (error instanceof SuiteFileError) return error.lines("suite.yaml");
      throw error;
    }
    assert.fail("the file was accepted");
  };
  assert.deepEqual(await problems(big), [
    "suite.yaml: is 5.0 MiB: a suite file may be at most 4 MiB (split it, or let scenarios share settings at the top)",
  ]);
  const fifo = `${dir.path}/fifo.yaml`;
  const made = await new Deno.Command("mkfifo", { args: [fifo] }).output().catch(() => null);
  if (made?.success) assert.deepEqual(await problems(fifo), ["suite.yaml: is not a regular file"]);
  else console.error("SKIPPED: the FIFO case needs mkfifo");

  await Deno.symlink("loop", `${dir.path}/loop`);
  const suite = `${dir.path}/suite.yaml`;
  await Deno.writeTextFile(
    suite,
    "suite: s\nworkdir: ./loop\nscenarios: [{key: a, turns: [hi]}]\n",
  );
  assert.deepEqual(await problems(suite), [
    `suite.yaml:2:10: workdir: ${dir.path}/loop cannot be read: too many levels of symbolic links`,
  ]);
});

Deno.test("parseSuite() takes a harness's model and args per scenario, over the suite's, and refuses them elsewhere", () => {
  const suite = parseSuite(
    "/x/suite.yaml",
    encoder.encode([
      "suite: s",
      "driver: codex",
      "model: gpt-5",
      "args: ['-c', 'x=1']",
      "scenarios:",
      "  - {key: a, turns: [hi]}",
      "  - {key: b, turns: [hi], model: gpt-5-mini, args: ['--ephemeral']}",
      "  - {key: c, turns: [hi], driver: opencode, model: fake/m}",
    ].join("\n")),
  );
  assert.deepEqual(
    suite.scenarios.map((s) => [s.key, s.driver, s.model, s.args]),
    [
      ["a", "codex", "gpt-5", ["-c", "x=1"]],
      ["b", "codex", "gpt-5-mini", ["--ephemeral"]],
      // Another driver takes none of the top's model and args.
      ["c", "opencode", "fake/m", []],
    ],
  );
  assert.deepEqual(
    problemsOf(
      "/x/suite.yaml",
      [
        "suite: s",
        "scenarios:",
        "  - {key: a, turns: [hi], args: [x]}",
        "  - {key: b, turns: [hi], driver: opencode, model: gpt-5}",
      ].join("\n"),
    ),
    [
      "suite.yaml:3:33: scenarios[0].args: args go with a harness driver (claude, codex, gemini, opencode), not loop",
      "suite.yaml:4:52: scenarios[1].model: opencode's model must be PROVIDER/MODEL",
    ],
  );
});
