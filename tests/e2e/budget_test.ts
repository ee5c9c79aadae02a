// The budget flags of `reins run` end to end: never silently ignored. A limit the agent cannot be
// held to is said on stderr before the turn starts; one reins can watch stops the agent.
import assert from "node:assert/strict";
import { startFakeChat } from "../fixtures/fake_chat.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { reins, tempDir } from "../support/reins.ts";

// regression: --max-usd with an openai: model that has no price was accepted and never held: the
// cost stayed unknown, so the budget could not be reached.
Deno.test("reins run --model openai:UNPRICED --max-usd warns that the cost is unknown before the turn", async () => {
  await using dir = await tempDir();
  await using server = startFakeChat(inOrder(text("fine")));
  const args = ["run", "--model", "openai:fake-unpriced", "--base-url", `${server.url}/v1`];
  const result = await reins([...args, "--max-usd", "0.10", "--json", "hi"], { home: dir.path });
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    /^reins: warning: the cost of openai:fake-unpriced is unknown \(no price for "fake-unpriced" in the config file's prices, nor in reins's table\): --max-usd cannot stop it; add "prices": \{"fake-unpriced": /m,
  );
  // With a price in the config file there is nothing to warn about.
  await Deno.writeTextFile(
    `${dir.path}/config.json`,
    JSON.stringify({ prices: { "fake-unpriced": { inputPerMillion: 1, outputPerMillion: 2 } } }),
    { mode: 0o600 },
  );
  const priced = await reins([...args, "--max-usd", "0.10", "--json", "hi"], { home: dir.path });
  assert.equal(priced.code, 0, priced.stderr);
  assert.doesNotMatch(priced.stderr, /warning/);
  assert.ok(JSON.parse(priced.stdout).costUsd > 0, "the cost is now known");
});

// A command agent that reports its usage as it goes, a step at a time, without end.
const SPENDER = `#!/bin/sh
i=0
while [ $i -lt 100 ]; do
  i=$((i+1))
  echo '{"type":"usage.updated","payload":{"inputTokens":'$((i*100))',"outputTokens":0,"cacheReadTokens":null,"cacheWriteTokens":null,"reasoningTokens":null,"costUsd":null,"requests":'$i'}}'
  sleep 0.05
done
`;

Deno.test("reins run --driver command --max-turns stops the program once its reported usage crosses it", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/spender.sh`, SPENDER);
  const result = await reins(
    ["run", "--driver", "command", "--exec", "sh spender.sh", "--max-turns", "3", "--json", "go"],
    { home: dir.path, allowRun: ["sh"] },
  );
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^reins: warning: --driver command: the budget holds only through/m);
  const summary = JSON.parse(result.stdout);
  assert.equal(summary.status, "failed");
  assert.equal(
    summary.reason,
    "budget exhausted: --max-turns 3 (3 of 3 model calls)",
  );
  assert.equal(summary.usage.requests, 3);
});
