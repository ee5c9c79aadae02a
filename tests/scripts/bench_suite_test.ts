// `deno task bench suite`'s `--cli` child stands for `reins suite run` as a whole process, so it
// must end as the CLI does: at once when runCli returns (main.ts and the binary's entry call
// Deno.exit), not once the last one-shot deadline a run left armed comes due.
import assert from "node:assert/strict";
import { tempDir } from "../support/reins.ts";

const BENCH = new URL("../../scripts/bench/suite.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const SCENARIOS = 24;

// regression: the child let the event loop drain, so it waited out a turn's 2 s pipe grace
// (onceAfter's timer holds the loop until due) and the bench timed reins ~2 s slower than it is
Deno.test("the suite bench's --cli child exits when the suite has run, not after the armed timers", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir.path}/agent.sh`,
    '#!/bin/sh\nprompt=$(cat)\necho "answer to $prompt"\n',
  );
  await Deno.chmod(`${dir.path}/agent.sh`, 0o755);
  const lines = ["suite: bench", "driver: command", "exec: ./agent.sh", "scenarios:"];
  for (let i = 0; i < SCENARIOS; i++) {
    lines.push(`  - {key: s${i}, turns: ['hello s${i}'], checks: [{regex: 'answer to hello'}]}`);
  }
  await Deno.writeTextFile(`${dir.path}/suite.yaml`, lines.join("\n") + "\n");
  const out = `${dir.path}/told.json`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      "--config",
      CONFIG,
      BENCH,
      "--cli",
      `${dir.path}/suite.yaml`,
      out,
    ],
    env: { REINS_HOME: `${dir.path}/home` },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const output = await child.output();
  const exitedAt = Date.now();
  assert.ok(output.success, new TextDecoder().decode(output.stderr).slice(-800));
  // The file's last write is the child's last act before it exits (or waits out its timers).
  const told = await Deno.stat(out);
  const lingered = exitedAt - told.mtime!.getTime();
  const { heapKiB, peakKiB } = JSON.parse(await Deno.readTextFile(out));
  assert.ok(heapKiB > 0 && peakKiB > 0, JSON.stringify({ heapKiB, peakKiB }));
  assert.ok(lingered < 1_000, `the child lived ${Math.round(lingered)} ms after the suite had run`);
});
