// The views of a suite run: the table, its totals and exit code, and JUnit XML read back by
// Python's own XML parser (what CI systems' parsers are like: strict about well-formedness).
import assert from "node:assert/strict";
import { exitCodeOf, formatTable, rowOf, totalsOf } from "../../lib/suite/table.ts";
import { junitXml, writeJunitFile, xmlEscape } from "../../lib/suite/junit.ts";
import { checkResult, stateOf } from "./_states.ts";

const STATES = [
  stateOf("refund", "passed", {
    checks: [
      checkResult("a", "passed"),
      checkResult("b", "passed"),
      checkResult("judge", "passed", { kind: "judge", checkpoint: false, score: 0.9 }),
    ],
    turns: 2,
    costUsd: 0.015,
    durationMs: 4200,
    runIds: ["r1", "r2"],
  }),
  stateOf("late", "failed", {
    checks: [
      checkResult("a", "passed"),
      checkResult("apologised", "failed", {
        kind: "regex",
        detail: 'the final answer does not match /sorry/: "No."',
      }),
      checkResult("cheap", "unknown", {
        kind: "cost",
        met: true,
        detail: "unknown: 1 of 1 turns reported no cost",
      }),
      checkResult("tone", "grading_error", {
        kind: "judge",
        detail: "the judge answered without a grade",
      }),
    ],
    turns: 1,
    durationMs: 61_500,
  }, 1),
  stateOf("broken", "error", {
    reason: 'setup "exit 3" exited with code 3',
    durationMs: 10,
    attempts: [
      {
        attempt: 1,
        startedAt: "2026-01-05T14:03:00.000Z",
        endedAt: "2026-01-05T14:03:01.000Z",
        status: "error",
        reason: 'setup "exit 3" exited with code 3',
        runIds: [],
        workdir: "/tmp/x",
      },
    ],
  }, 2),
  stateOf("later", "skipped", { reason: "not ready <yet> & \u0007bell" }, 3),
];

Deno.test("rowOf() shows checkpoints met of all (judges without pass: and grading errors left out), and the first failing check", () => {
  assert.deepEqual(rowOf(STATES[0]), {
    scenario: "refund",
    status: "passed",
    checks: "2/2",
    turns: "2",
    cost: "$0.0150",
    duration: "4.2s",
    note: "",
  });
  assert.deepEqual(rowOf(STATES[1], { noteWidth: 200 }), {
    scenario: "late",
    status: "failed",
    checks: "2/3",
    turns: "1",
    cost: "-",
    duration: "1m02s",
    note: 'apologised: the final answer does not match /sorry/: "No."; grading error: tone',
  });
  assert.equal(rowOf(STATES[2]).note, 'setup "exit 3" exited with code 3');
  // Long notes are cut to the table's width.
  assert.equal(rowOf(STATES[1]).note.length, 70);
  assert.ok(rowOf(STATES[1]).note.endsWith("…"));
  assert.equal(rowOf(STATES[2]).checks, "-");
});

Deno.test("formatTable() aligns the columns and ends with the totals; exitCodeOf() is 1 for a failure, an error or unfinished work", () => {
  const lines = formatTable(STATES, { elapsedMs: 70_000 });
  assert.deepEqual(lines.slice(0, 2), [
    "scenario  status   checks  turns  cost     duration  first failing check",
    "refund    passed   2/2     2      $0.0150  4.2s",
  ]);
  assert.equal(
    lines[lines.length - 1],
    "4 scenarios: 1 passed, 1 failed, 1 error, 1 skipped in 1m10s · $0.0150",
  );
  assert.equal(exitCodeOf(totalsOf(STATES)), 1);
  assert.equal(exitCodeOf(totalsOf([STATES[0], STATES[3]])), 0);
  assert.equal(exitCodeOf(totalsOf([STATES[0], stateOf("x", "running")])), 1);
  assert.equal(totalsOf(STATES).gradingErrors, 1);
});

async function parsedByPython(xml: string): Promise<unknown> {
  const script = [
    "import json, sys, xml.etree.ElementTree as ET",
    "root = ET.fromstring(sys.stdin.buffer.read())",
    "def walk(e): return {'tag': e.tag, 'attrib': e.attrib, 'text': (e.text or '').strip(), 'children': [walk(c) for c in e]}",
    "print(json.dumps(walk(root)))",
  ].join("\n");
  const child = new Deno.Command("python3", {
    args: ["-c", script],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(xml));
  await writer.close();
  const output = await child.output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

type Node = { tag: string; attrib: Record<string, string>; text: string; children: Node[] };

Deno.test("junitXml() parses as XML: one testcase per scenario, failure with the failing checks, error with the reason, skipped", async () => {
  const root = await parsedByPython(
    junitXml("checkout <support>", STATES, { timestamp: "2026-01-05T14:03:00Z" }),
  ) as Node;
  assert.equal(root.tag, "testsuites");
  assert.deepEqual(root.attrib, {
    name: "checkout <support>",
    tests: "4",
    failures: "1",
    errors: "1",
    skipped: "1",
    time: "65.710",
  });
  const [suite] = root.children;
  assert.equal(suite.attrib.timestamp, "2026-01-05T14:03:00Z");
  const cases = suite.children;
  assert.deepEqual(cases.map((c) => c.attrib.name), ["refund", "late", "broken", "later"]);
  assert.deepEqual(cases.map((c) => c.children.map((k) => k.tag)), [
    ["system-out"],
    ["failure", "system-out"],
    ["error", "system-out"],
    ["skipped", "system-out"],
  ]);
  const failure = cases[1].children[0];
  assert.equal(
    failure.attrib.message,
    'apologised: the final answer does not match /sorry/: "No."',
  );
  assert.equal(failure.attrib.type, "regex");
  assert.equal(
    failure.text,
    '2/3 checks met\napologised (regex): the final answer does not match /sorry/: "No."',
  );
  assert.equal(cases[2].children[0].attrib.message, 'setup "exit 3" exited with code 3');
  // A control character XML cannot hold is replaced, the rest escaped and read back as written.
  assert.equal(cases[3].children[0].attrib.message, "not ready <yet> & \ufffdbell");
  assert.equal(cases[0].attrib.time, "4.200");
});

Deno.test("xmlEscape() escapes markup and replaces what XML 1.0 forbids", () => {
  assert.equal(
    xmlEscape(`<a href="x">'&'</a>\u0000\ud800`),
    "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;\ufffd\ufffd",
  );
});

Deno.test("regression: writeJunitFile() keeps a failed {tool: reset_password} check's words (redaction took them for a password)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "reins-junit-" });
  try {
    const detail = "reset_password was never called; tools used: lookup_order";
    const states = [
      stateOf("reset", "failed", {
        checks: [checkResult("tool reset_password", "failed", { kind: "tool", detail })],
      }),
    ];
    await writeJunitFile(`${dir}/junit.xml`, "s", states, {});
    const xml = await Deno.readTextFile(`${dir}/junit.xml`);
    assert.ok(xml.includes(`message="tool reset_password: ${detail}"`), xml);
    assert.ok(!xml.includes("[redacted]"), xml);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
