// A run's own model and arguments (`reins run --model M --arg X`, a suite agent's model and args):
// each harness driver passes the model with its CLI's own flag, over the config's, and appends the
// arguments after the config's; the facts recorded on run.started say what was asked of this run;
// a CLI that reports no cost on a model reins cannot price is said so before it starts.
import assert from "node:assert/strict";
import { claudeArgs, createClaudeDriver } from "../../lib/drivers/claude.ts";
import { codexArgs, codexModel, createCodexDriver } from "../../lib/drivers/codex.ts";
import { createGeminiDriver, geminiArgs } from "../../lib/drivers/gemini.ts";
import { opencodeArgs, opencodeFacts } from "../../lib/drivers/opencode.ts";
import { DEFAULT_PRICES, unpricedNotes } from "../../lib/drivers/prices.ts";
import type { HarnessDriver } from "../../lib/core/config.ts";
import { driverInput, scratchDir, testSettings } from "./_helpers.ts";

function agent(driver: HarnessDriver, model?: string, args?: string[]) {
  return {
    kind: "harness" as const,
    driver,
    idleTimeoutSeconds: null,
    ...(model ? { model } : {}),
    ...(args ? { args } : {}),
  };
}

/** The value after `flag` in `args` (the last one, as the CLIs read it). */
function valueOf(args: string[], flag: string): string | undefined {
  const at = args.lastIndexOf(flag);
  return at < 0 ? undefined : args[at + 1];
}

Deno.test("each harness driver passes the run's model with its CLI's own flag, over the config's", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, {
    claude: { model: "claude-haiku-4-5", args: ["--from-config"] },
    codex: { model: "gpt-5", args: ["--from-config"] },
    gemini: { model: "gemini-2.5-flash", args: ["--from-config"] },
    opencode: { model: "fake/config-model", args: ["--from-config"] },
  });
  const cases: [
    HarnessDriver,
    (input: ReturnType<typeof driverInput>) => string[],
    string,
    string,
  ][] = [
    ["claude", claudeArgs, "--model", "claude-sonnet-4-5"],
    ["codex", codexArgs, "-m", "gpt-5-mini"],
    ["gemini", geminiArgs, "--model", "gemini-2.5-pro"],
    ["opencode", opencodeArgs, "--model", "fake/run-model"],
  ];
  for (const [driver, argsOf, flag, model] of cases) {
    const configured = argsOf(driverInput({ settings, cwd: dir.path, agent: agent(driver) }));
    assert.equal(valueOf(configured, flag), settings.drivers[driver].model, driver);
    const given = argsOf(
      driverInput({ settings, cwd: dir.path, agent: agent(driver, model, ["--x", "1"]) }),
    );
    assert.equal(valueOf(given, flag), model, `${driver}: the run's model`);
    assert.equal(given.filter((arg) => arg === flag).length, 1, `${driver}: one model flag`);
    // The run's arguments come after the config's, so a CLI that lets the last flag win takes them.
    const fromConfig = given.indexOf("--from-config");
    const fromRun = given.indexOf("--x");
    assert.ok(fromConfig >= 0 && fromRun > fromConfig, `${driver}: ${given.join(" ")}`);
    assert.equal(given[fromRun + 1], "1");
  }
});

Deno.test("a resumed turn passes the run's model and arguments too", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path);
  const resume = { sessionId: "s-1", nativeSessionId: "native-1" };
  const claude = claudeArgs(
    driverInput({ settings, cwd: dir.path, resume, agent: agent("claude", "opus", ["--y"]) }),
  );
  assert.equal(valueOf(claude, "--resume"), "native-1");
  assert.equal(valueOf(claude, "--model"), "opus");
  assert.ok(claude.includes("--y"));
  const codex = codexArgs(
    driverInput({ settings, cwd: dir.path, resume, agent: agent("codex", "gpt-5", ["--y"]) }),
  );
  assert.deepEqual(codex.slice(0, 2), ["exec", "resume"]);
  assert.equal(valueOf(codex, "-m"), "gpt-5");
  assert.deepEqual(codex.slice(-3), ["--y", "native-1", "-"], "the thread and the prompt last");
});

Deno.test("codexModel() prices the run's model, else one in the run's arguments", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, { codex: { model: "gpt-5" } });
  assert.equal(codexModel({ settings, agent: agent("codex", "o3") }), "o3");
  const bare = testSettings(dir.path);
  assert.equal(
    codexModel({ settings: bare, agent: agent("codex", undefined, ["-m", "o4-mini"]) }),
    "o4-mini",
  );
  assert.equal(codexModel({ settings, agent: agent("codex") }), "gpt-5");
});

Deno.test("the facts on run.started name the run's model and keep what it was given (perRun)", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path, { claude: { model: "claude-haiku-4-5" } });
  const claude = createClaudeDriver();
  assert.deepEqual(claude.agentFacts!({ settings, agent: agent("claude") }), {
    provider: "anthropic",
    model: "claude-haiku-4-5",
    inputExcludesCache: true,
    inProcess: false,
  });
  assert.deepEqual(
    claude.agentFacts!({ settings, agent: agent("claude", "claude-opus-4-5", ["--a"]) }),
    {
      provider: "anthropic",
      model: "claude-opus-4-5",
      inputExcludesCache: true,
      inProcess: false,
      perRun: { model: "claude-opus-4-5", args: ["--a"] },
    },
  );
  // opencode's PROVIDER/MODEL is split for the facts, and kept whole as given.
  assert.deepEqual(opencodeFacts({ settings, agent: agent("opencode", "openai/gpt-5-mini") }), {
    provider: "openai",
    model: "gpt-5-mini",
    inputExcludesCache: true,
    inProcess: false,
    perRun: { model: "openai/gpt-5-mini" },
  });
});

Deno.test("unpricedNotes() says a model has no price, and only then", () => {
  assert.deepEqual(unpricedNotes(null, {}, "Codex"), []);
  assert.deepEqual(unpricedNotes("gpt-5-mini", {}, "Codex"), []);
  const own = { inputPerMillion: 1, outputPerMillion: 2 };
  assert.deepEqual(unpricedNotes("gpt-5.5", { "gpt-5.5": own }, "Codex"), []);
  const [note, ...rest] = unpricedNotes("gpt-5.5", {}, "Codex");
  assert.deepEqual(rest, []);
  assert.match(note, /^no price is known for the model "gpt-5\.5" .*add it under prices/);
});

Deno.test("codex and gemini note an unpriced model before the turn; claude reports its own cost", async () => {
  await using dir = await scratchDir();
  const settings = testSettings(dir.path);
  assert.equal(
    createCodexDriver().costNotes!({ settings, agent: agent("codex", "gpt-9-unknown") }).length,
    1,
  );
  assert.deepEqual(
    createCodexDriver().costNotes!({ settings, agent: agent("codex", "gpt-5") }),
    [],
  );
  assert.equal(
    createGeminiDriver().costNotes!({ settings, agent: agent("gemini", "gemini-9") }).length,
    1,
  );
  assert.equal(createClaudeDriver().costNotes, undefined);
});

Deno.test("the price table knows the models the docs name (but gpt-5.5, whose price is the config's)", () => {
  for (
    const model of [
      "claude-sonnet-4-5",
      "gpt-4.1-mini",
      "gpt-4o-mini",
      "gpt-5-mini",
      "gemini-2.5-flash",
      "gemini-2.5-pro",
    ]
  ) {
    assert.ok(DEFAULT_PRICES[model], model);
  }
  assert.equal(DEFAULT_PRICES["gpt-5.5"], undefined);
});
