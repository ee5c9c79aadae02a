// The deterministic checks against real files, a real shell and hand-made evidence.
import assert from "node:assert/strict";
import { runCheck } from "../../lib/suite/checks.ts";
import type { Check } from "../../lib/suite/format.ts";
import type { Evidence } from "../../lib/suite/evidence.ts";
import { tempDir } from "../support/reins.ts";
import {
  INLINE_STEPS,
  PatternMatcher,
  PatternTimeout,
  patternWays,
} from "../../lib/suite/matcher.ts";

type Deterministic = Exclude<Check, { kind: "judge" }>;

function evidence(cwd: string, overrides: Partial<Evidence> = {}): Evidence {
  return {
    cwd,
    turns: [
      {
        runId: "r1",
        prompt: "hi",
        status: "completed",
        reason: null,
        costUsd: 0.01,
        result: "Hello there",
      },
      {
        runId: "r2",
        prompt: "refund",
        status: "completed",
        reason: null,
        costUsd: 0.02,
        result: "Sorry, refunded.",
      },
    ],
    transcript: [
      { kind: "message", speaker: "user", text: "hi" },
      { kind: "message", speaker: "assistant", text: "Hello there" },
      { kind: "tool", name: "issue_refund", arguments: { order: 1 }, result: "ok" },
      {
        kind: "tool",
        name: "run_command",
        arguments: { command: "rm -rf /" },
        error: "denied",
        refused: true,
      },
      { kind: "message", speaker: "user", text: "refund" },
      { kind: "message", speaker: "assistant", text: "Sorry, refunded." },
    ],
    recordings: [],
    ...overrides,
  };
}

async function check(spec: Deterministic, given: Evidence) {
  using matcher = new PatternMatcher();
  const result = await runCheck(spec, given, { matcher, timeoutSeconds: 10 });
  return { outcome: result.outcome, met: result.met, detail: result.detail };
}

Deno.test("runCheck() file: contains, regex, exists and absent, in the scenario's directory", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/refunds.csv`, "1234,42.00\n");
  const e = evidence(dir.path);
  const file = (rest: Record<string, unknown>) =>
    ({ kind: "file", name: "f", file: "refunds.csv", ...rest }) as Deterministic;
  assert.deepEqual(await check(file({ contains: "1234" }), e), {
    outcome: "passed",
    met: true,
    detail: 'refunds.csv contains "1234"',
  });
  assert.deepEqual(await check(file({ contains: "9999" }), e), {
    outcome: "failed",
    met: false,
    detail: 'refunds.csv does not contain "9999"',
  });
  assert.equal((await check(file({ regex: "(?m)^1234,42\\.00$" }), e)).outcome, "passed");
  assert.equal((await check(file({ regex: "^1234,42\\.00$" }), e)).outcome, "failed");
  assert.equal((await check(file({}), e)).outcome, "passed");
  assert.deepEqual(await check(file({ file: "nope.csv" }), e), {
    outcome: "failed",
    met: false,
    detail: "nope.csv does not exist",
  });
  assert.equal((await check(file({ file: "nope.csv", absent: true }), e)).outcome, "passed");
  assert.equal((await check(file({ contains: "1234", absent: true }), e)).outcome, "failed");
});

Deno.test("runCheck() regex: the final answer, or anything the agent said", async () => {
  const e = evidence("/");
  const regex = (source: string, where: "final" | "any", absent = false) =>
    ({ kind: "regex", name: "r", regex: source, in: where, absent }) as Deterministic;
  assert.equal((await check(regex("(?i)SORRY", "final"), e)).outcome, "passed");
  assert.equal((await check(regex("Hello", "final"), e)).outcome, "failed");
  assert.deepEqual(await check(regex("Hello", "any"), e), {
    outcome: "passed",
    met: true,
    detail: 'the agent said "Hello there", which matches /Hello/',
  });
  // What the user said is not the agent's text.
  assert.equal((await check(regex("^refund$", "any"), e)).outcome, "failed");
  assert.equal((await check(regex("Hello", "any", true), e)).outcome, "failed");
  const silent = evidence("/", { turns: [], transcript: [] });
  assert.deepEqual(await check(regex("x", "final"), silent), {
    outcome: "failed",
    met: false,
    detail: "the agent gave no answer",
  });
});

Deno.test("runCheck() command: its exit code in the scenario's directory, its output on failure, its time limit", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/marker`, "");
  const e = evidence(dir.path);
  const command = (text: string, exit = 0, timeoutSeconds = 10) =>
    ({ kind: "command", name: "c", command: text, exit, timeoutSeconds }) as Deterministic;
  assert.deepEqual(await check(command("test -f marker"), e), {
    outcome: "passed",
    met: true,
    detail: "test -f marker exited with code 0",
  });
  assert.deepEqual(await check(command("echo broken; echo worse >&2; exit 3"), e), {
    outcome: "failed",
    met: false,
    detail: "echo broken; echo worse >&2; exit 3 exited with code 3, not 0: broken ⏎ worse",
  });
  assert.equal((await check(command("exit 3", 3), e)).outcome, "passed");
  const started = Date.now();
  const slow = await check(command("sleep 30", 0, 0.3), e);
  assert.equal(slow.outcome, "failed");
  assert.equal(slow.detail, "sleep 30 did not finish within 0.3 s");
  assert.ok(Date.now() - started < 10_000, "the sleep was stopped, not waited for");
});

Deno.test("runCheck() tool: used means called and not refused; absent passes when every call was refused", async () => {
  const e = evidence("/");
  const tool = (name: string, absent = false) =>
    ({ kind: "tool", name: "t", tool: name, absent }) as Deterministic;
  assert.deepEqual(await check(tool("issue_refund"), e), {
    outcome: "passed",
    met: true,
    detail: "issue_refund ran 1 time",
  });
  assert.deepEqual(await check(tool("run_command"), e), {
    outcome: "failed",
    met: false,
    detail: "run_command was only refused (1 refused); tools used: issue_refund, run_command",
  });
  assert.deepEqual(await check(tool("run_command", true), e), {
    outcome: "passed",
    met: true,
    detail: "run_command never ran (1 refused)",
  });
  assert.deepEqual(await check(tool("issue_refund", true), e), {
    outcome: "failed",
    met: false,
    detail: "issue_refund ran 1 time",
  });
  assert.equal(
    (await check(tool("write_file"), e)).detail,
    "write_file was never called; tools used: issue_refund, run_command",
  );
});

Deno.test("runCheck() cost: the sum of the turns; unknown without cost data, counted as configured", async () => {
  const cost = (maxUsd: number, unknown: "pass" | "fail" = "fail") =>
    ({ kind: "cost", name: "c", maxUsd, unknown }) as Deterministic;
  assert.deepEqual(await check(cost(0.05), evidence("/")), {
    outcome: "passed",
    met: true,
    detail: "spent $0.0300, at most $0.05",
  });
  assert.equal((await check(cost(0.02), evidence("/"))).outcome, "failed");
  const noCost = evidence("/");
  noCost.turns[1] = { ...noCost.turns[1], costUsd: null };
  assert.deepEqual(await check(cost(0.05), noCost), {
    outcome: "unknown",
    met: false,
    detail: "unknown: 1 of 2 turns reported no cost (counted as not met, as unknown: fail says)",
  });
  assert.deepEqual(await check(cost(0.05, "pass"), noCost), {
    outcome: "unknown",
    met: true,
    detail: "unknown: 1 of 2 turns reported no cost (counted as met, as unknown: pass says)",
  });
});

// regression: `regex: "^(a|a)*$"` over forty a's and a '!' ran 2 min 17 s on the main thread, and
// held every other scenario and SIGTERM meanwhile.
const BACKTRACKING = { kind: "regex", name: "r", regex: "^(a|a)*$", in: "final" } as const;
const FORTY_A = `${"a".repeat(40)}!`;

Deno.test("regression: runCheck() ends a pattern that backtracks without end at its time, and the event loop runs meanwhile", async () => {
  await using dir = await tempDir();
  using matcher = new PatternMatcher();
  const given = evidence(dir.path, {
    turns: [{ ...evidence(dir.path).turns[0], result: FORTY_A }],
  });
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 50);
  const startedMs = Date.now();
  try {
    await assert.rejects(
      runCheck(BACKTRACKING, given, { matcher, timeoutSeconds: 1 }),
      (error) =>
        error instanceof PatternTimeout && /did not finish matching within 1 s/.test(error.message),
    );
  } finally {
    clearInterval(ticker);
  }
  // The timers ran while it matched: the thread was free (signals are handled the same way).
  assert.ok(ticks >= 5, `${ticks} ticks in ${Date.now() - startedMs} ms`);
  // The matcher goes on with a fresh worker.
  const ok = await runCheck({ ...BACKTRACKING, regex: "a+!$" }, given, {
    matcher,
    timeoutSeconds: 5,
  });
  assert.equal(ok.outcome, "passed");
});

Deno.test("runCheck() stops matching when its signal is aborted, with the signal's reason", async () => {
  await using dir = await tempDir();
  using matcher = new PatternMatcher();
  await Deno.writeTextFile(`${dir.path}/notes.txt`, FORTY_A);
  const stop = new AbortController();
  setTimeout(() => stop.abort(new Error("stopped")), 200);
  await assert.rejects(
    runCheck(
      { kind: "file", name: "f", file: "notes.txt", regex: "^(a|a)*$" },
      evidence(dir.path),
      { matcher, timeoutSeconds: 60, signal: stop.signal },
    ),
    /stopped/,
  );
});

Deno.test("patternWays(): the ways a pattern can try one place, or null where it can backtrack", () => {
  const ways: [string, number][] = [
    ["answer to hello s1", 1],
    ["(?:sorry|apolog)", 2],
    ["^refund$|^credit$", 2],
    ["(refund|credit) (issued|sent|made)", 6],
    ["(a(b|c)|d)e", 3],
    ["[a-z]\\d\\.x", 1],
    ["\\bfoo(?=bar)(?!baz)(?<=o)(?<!q)", 1],
    ["(?<word>abc|def)", 2],
    ["[*+?{(|]", 1],
    ["\\*\\+\\?\\{\\|\\(", 1],
  ];
  const unbounded = [
    "^(a|a)*$",
    "a+!$",
    "colou?r",
    "x{2,}",
    "(a)\\1",
    "(?<w>a)\\k<w>",
    "\\p{L}",
    "(a|b)".repeat(13),
    "[abc",
    "(abc",
    "abc)",
    "abc\\",
  ];
  for (const [source, expected] of ways) assert.equal(patternWays(source), expected, source);
  for (const source of unbounded) assert.equal(patternWays(source), null, source);
});

Deno.test("PatternMatcher: a bounded pattern matches without a worker; one that can backtrack, or a text too long, in one", async () => {
  using matcher = new PatternMatcher();
  const options = { timeoutSeconds: 10 };
  assert.equal(await matcher.firstMatch(/answer to s1/u, ["no", "the answer to s1"], options), 1);
  assert.equal(await matcher.firstMatch(/^refund$|^credit$/iu, ["CREDIT"], options), 0);
  assert.equal(await matcher.firstMatch(/(?:sorry|apolog)ise/u, ["we apologise"], options), 0);
  assert.equal(await matcher.firstMatch(/answer/u, ["none here"], options), -1);
  assert.equal(matcher.offThread, 0);
  assert.equal(await matcher.firstMatch(/a+!$/u, ["aaa!"], options), 0);
  assert.equal(matcher.offThread, 1);
  const long = "x".repeat(INLINE_STEPS / 4) + "needle";
  assert.equal(await matcher.firstMatch(/needle/u, [long], options), 0);
  assert.equal(matcher.offThread, 2);
  // Aborted before: refused, as off the thread.
  const stop = new AbortController();
  stop.abort(new Error("stopped"));
  await assert.rejects(
    matcher.firstMatch(/answer/u, ["answer"], { ...options, signal: stop.signal }),
    /stopped/,
  );
});
