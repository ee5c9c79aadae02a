// `reins suite compare` as a CI gate, end to end: the same suite run three times with a command
// agent whose behaviour a file in the test's folder changes — twice as it was, once with a planted
// regression. The unchanged pair exits 0, the regression exits 1 with the check that flipped;
// --json, --markdown, --fail-on, and exit 2 for what cannot be compared.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

// Answers each prompt, saying what it cost (reins's event protocol); with "$DIR/mode" saying
// broken, refunds are refused, at a higher price in tokens and dollars.
const AGENT = `#!/bin/sh
prompt=$(cat)
mode=$(cat "$DIR/mode")
usage() {
  printf '{"type":"usage.updated","payload":{"inputTokens":100,"outputTokens":%s,"cacheReadTokens":null,"cacheWriteTokens":null,"reasoningTokens":null,"costUsd":%s,"requests":1}}\\n' "$1" "$2"
}
case "$prompt" in
  refund) if [ "$mode" = broken ]; then usage 50 0.003; echo "no refunds"; else usage 20 0.001; echo "refund issued"; fi ;;
  *) usage 20 0.001; echo "hello from $prompt" ;;
esac
`;

async function setUp(dir: string) {
  await Deno.writeTextFile(`${dir}/agent.sh`, AGENT.replaceAll("$DIR", dir));
  await Deno.chmod(`${dir}/agent.sh`, 0o755);
  await Deno.writeTextFile(`${dir}/mode`, "good\n");
  await Deno.writeTextFile(
    `${dir}/suite.yaml`,
    [
      "suite: shop",
      "driver: command",
      `exec: ${dir}/agent.sh`,
      "scenarios:",
      "  - {key: refund, turns: [refund], checks: [{name: issues-refund, regex: 'refund issued'}]}",
      "  - {key: greet, turns: [greet], checks: [{regex: 'hello'}]}",
    ].join("\n"),
  );
  await Deno.writeTextFile(
    `${dir}/other.yaml`,
    [
      "suite: other",
      "driver: command",
      `exec: ${dir}/agent.sh`,
      "scenarios:",
      "  - {key: unrelated, turns: [x], checks: [{regex: 'hello'}]}",
    ].join("\n"),
  );
}

Deno.test("reins suite compare passes an unchanged suite run (exit 0) and gates a planted regression (exit 1)", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await setUp(dir.path);
  const opts = { home, cwd: dir.path, allowRun: [`${dir.path}/agent.sh`] };
  const play = async (file = "suite.yaml") => {
    const ran = await reins(
      ["suite", "run", file, "--repeat", "4", "--no-report", "--json"],
      opts,
    );
    return JSON.parse(ran.stdout).suiteRunId as string;
  };
  const base = await play();
  const same = await play();
  await Deno.writeTextFile(`${dir.path}/mode`, "broken\n");
  const broken = await play();

  const unchanged = await reins(["suite", "compare", base, same], { home });
  assert.equal(unchanged.code, 0, unchanged.stderr + unchanged.stdout);
  const lines = unchanged.stdout.trimEnd().split("\n");
  assert.match(lines[0], /^scenario\s+verdict\s+A\s+B\s+p\s+Δ cost\s+Δ tokens\s+Δ duration$/);
  assert.match(lines[1], /^refund\s+unchanged\s+4\/4\s+4\/4\s+-\s/);
  assert.match(lines[2], /^greet\s+unchanged\s+4\/4\s+4\/4\s+-\s/);
  assert.match(lines[3], /0 regressed \(0 significant\), 0 improved, 2 unchanged, 0 flaky/);

  const gated = await reins(["suite", "compare", base, broken], { home });
  assert.equal(gated.code, 1, gated.stderr + gated.stdout);
  const gatedLines = gated.stdout.trimEnd().split("\n");
  // Each play of the broken agent spent 30 more tokens and $0.002 more.
  assert.match(
    gatedLines[1],
    /^refund\s+regressed\*\s+4\/4\s+0\/4\s+0\.014\s+\+\$0\.0020\s+\+30\s/,
  );
  assert.equal(
    gatedLines[2],
    '  check "issues-refund" (regex) met 4/4 → 0/4: B: the final answer does not match /refund issued/: "no refunds" (A: the final answer matches /refund issued/: "refund issued")',
  );
  assert.match(gatedLines[3], /^greet\s+unchanged/);

  // The other way round it is an improvement: nothing to gate.
  assert.equal((await reins(["suite", "compare", broken, base], { home })).code, 0);

  const json = await reins(["suite", "compare", base, broken, "--json"], { home });
  assert.equal(json.code, 1);
  const parsed = JSON.parse(json.stdout);
  assert.deepEqual(parsed.counts, { regressed: 1, improved: 0, unchanged: 1, flaky: 0 });
  assert.equal(parsed.exitCode, 1);
  assert.equal(parsed.scenarios[0].flipped[0].name, "issues-refund");
  assert.deepEqual([parsed.scenarios[0].a.meanTokens, parsed.scenarios[0].b.meanTokens], [
    120,
    150,
  ]);

  const markdown = await reins(["suite", "compare", base, broken, "--markdown"], { home });
  assert.equal(markdown.code, 1);
  assert.match(markdown.stdout, /^### ❌ reins suite compare: 1 regressed \(1 significant\)/);
  assert.match(markdown.stdout, /\| refund \| \*\*regressed\*\* \| 4\/4 \| 0\/4 \| 0\.014 \|/);

  // One epoch cannot show a regression is not noise: only --fail-on any gates it.
  await Deno.writeTextFile(`${dir.path}/mode`, "good\n");
  const once = JSON.parse(
    (await reins(["suite", "run", "suite.yaml", "--no-report", "--json"], opts)).stdout,
  ).suiteRunId;
  await Deno.writeTextFile(`${dir.path}/mode`, "broken\n");
  const onceBroken = JSON.parse(
    (await reins(["suite", "run", "suite.yaml", "--no-report", "--json"], opts)).stdout,
  ).suiteRunId;
  assert.equal((await reins(["suite", "compare", once, onceBroken], { home })).code, 0);
  assert.equal(
    (await reins(["suite", "compare", once, onceBroken, "--fail-on", "any"], { home })).code,
    1,
  );

  // What cannot be compared is exit 2 with one line saying why.
  const other = await play("other.yaml");
  const unknown = await reins(["suite", "compare", base, "nope"], { home });
  assert.equal(unknown.code, 2, unknown.stderr);
  assert.match(unknown.stderr, /Cannot compare suite run "nope": No suite run "nope"/);
  const apart = await reins(["suite", "compare", base, other], { home });
  assert.equal(apart.code, 2, apart.stderr);
  assert.match(
    apart.stderr,
    /\(suite shop\) with .* \(suite other\): they have no scenario in common/,
  );
  const noAgents = await reins(["suite", "compare", base, "--agent", "x", "--agent", "y"], {
    home,
  });
  assert.equal(noAgents.code, 2, noAgents.stderr);
  assert.match(noAgents.stderr, /has no agent "x"/);
  const lone = await reins(["suite", "compare", base], { home });
  assert.equal(lone.code, 2);
  assert.match(lone.stderr, /needs two agents: --agent X --agent Y/);
  const badGate = await reins(["suite", "compare", base, same, "--fail-on", "some"], { home });
  assert.equal(badGate.code, 2);
  assert.match(badGate.stderr, /--fail-on takes regressed or any, not "some"/);
});
