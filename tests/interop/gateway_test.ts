// The model gateway around the real CLIs (pinned in _install.ts) and the fake model servers: each
// CLI's turn through runTurn, its calls recorded at the wire as the fake saw them, held to
// --max-turns 1 on a prompt that makes two calls, upstream errors (500, 429 with Retry-After)
// reaching the CLI as the server sent them, and a sentinel key nowhere under the data root.
import assert from "node:assert/strict";
import type { HarnessDriver, Settings } from "../../lib/core/config.ts";
import type { RunEvent } from "../../lib/store/contracts.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn, type TurnOutcome } from "../../lib/turn/mod.ts";
import {
  apiError,
  type FakeServer,
  inOrder,
  type Script,
  text,
} from "../fixtures/fake_model_server.ts";
import { testSettings } from "../drivers/_helpers.ts";
import { ensureCli, type Installed, interopTest } from "./_install.ts";
import { makeScratch, type Scratch } from "./_scratch.ts";
import { type HarnessSpec, withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec, geminiSpec, opencodeSpec } from "./_specs.ts";

const SPECS: HarnessSpec[] = [claudeSpec, codexSpec, geminiSpec, opencodeSpec];
const installed: Record<string, Installed> = {};
for (const spec of SPECS) installed[spec.driver] = await ensureCli(spec.driver);

/** A key no test writes anywhere: the CLIs send it to the gateway, which must never keep it. */
const SENTINEL = "sk-sentinel-0f9e8d7c6b5a4f3e2d1c0b9a";

/** Puts the sentinel where each CLI takes its key from. */
async function withSentinelKey(driver: HarnessDriver, scratch: Scratch): Promise<void> {
  switch (driver) {
    case "claude":
      scratch.env.ANTHROPIC_API_KEY = SENTINEL;
      return;
    case "codex":
    case "gemini":
      scratch.env[driver === "codex" ? "OPENAI_API_KEY" : "GEMINI_API_KEY"] = SENTINEL;
      return;
    case "opencode": {
      const path = `${scratch.home}/.config/opencode/opencode.json`;
      const config = JSON.parse(await Deno.readTextFile(path));
      config.provider.fake.options.apiKey = SENTINEL;
      await Deno.writeTextFile(path, JSON.stringify(config));
      return;
    }
  }
}

interface GatewayTurn {
  outcome: TurnOutcome;
  events: RunEvent[];
  settings: Settings;
}

/** One turn of the real CLI through the engine (and so through the gateway). */
async function gatewayTurn(
  spec: HarnessSpec,
  program: string,
  scratch: Scratch,
  options: { budget?: { maxTurns?: number }; prompt?: string; signal: AbortSignal },
): Promise<GatewayTurn> {
  const settings = testSettings(scratch.root, {
    [spec.driver]: { program, args: scratch.args, idleTimeoutSeconds: spec.idleTimeoutSeconds },
  });
  using store = openStore(scratch.reinsHome);
  const outcome = await runTurn(store, { ...settings, home: scratch.reinsHome }, {
    agent: { kind: "harness", driver: spec.driver, idleTimeoutSeconds: null },
    prompt: options.prompt ?? "write the file",
    cwd: scratch.cwd,
    contextId: null,
    approval: "auto",
    budget: options.budget ?? {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "api",
    env: scratch.env,
  }, { stop: options.signal, kill: new AbortController().signal });
  return { outcome, events: store.readEvents(outcome.summary.runId).events, settings };
}

function calls(events: RunEvent[]) {
  return {
    started: events.flatMap((e) => e.type === "model.call.started" ? [e.payload] : []),
    completed: events.flatMap((e) => e.type === "model.call.completed" ? [e.payload] : []),
  };
}

/** Every file under `dir` that holds `needle` (as text). */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string) => {
    for await (const entry of Deno.readDir(at)) {
      const path = `${at}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile) {
        const bytes = await Deno.readFile(path);
        if (new TextDecoder().decode(bytes).includes(needle)) found.push(path);
      }
    }
  };
  await walk(dir);
  return found;
}

for (const spec of SPECS) {
  const name = (what: string) => `gateway ${what} (real ${spec.cli})`;
  const serve = (script: Script): FakeServer => spec.serve(script);

  interopTest(
    installed[spec.driver],
    name("records every call the fake saw, counts them, and keeps no key"),
    async (program) => {
      await withDeadline(180, async (signal) => {
        await using server = serve(inOrder(spec.shellTool, text("The file is written.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        await withSentinelKey(spec.driver, scratch);
        const { outcome, events } = await gatewayTurn(spec, program, scratch, { signal });
        assert.equal(outcome.summary.status, "completed", outcome.summary.reason ?? "");
        assert.equal(outcome.summary.result, "The file is written.");
        const started = events.find((e) => e.type === "run.started")!;
        assert.deepEqual((started.payload as { gateway?: unknown }).gateway, { enabled: true });
        const { started: asked, completed } = calls(events);
        // Every request the fake saw came through the gateway, and each is recorded once.
        assert.equal(
          asked.length,
          server.requests.length,
          JSON.stringify(server.requests.map((r) => r.path)),
        );
        assert.equal(
          asked.filter((call) => call.generates).length,
          server.modelCalls().length,
        );
        assert.equal(completed.length, asked.length);
        assert.ok(completed.every((call) => call.outcome === "ok"), JSON.stringify(completed));
        const turnCalls = completed.filter((call) => call.usage !== null);
        assert.ok(
          turnCalls.length >= 2 && turnCalls.every((call) => (call.usage?.outputTokens ?? 0) > 0),
        );
        // Each body is on disk under the run, named by its digest.
        for (const call of [...asked, ...completed]) {
          if (call.body === null) continue;
          const path =
            `${scratch.reinsHome}/runs/${outcome.summary.runId}/wire/${call.body.sha256}`;
          assert.equal((await Deno.stat(path)).size, call.body.bytes);
        }
        assert.deepEqual(await filesHolding(scratch.reinsHome, SENTINEL), []);
      });
    },
  );

  interopTest(
    installed[spec.driver],
    name("holds --max-turns 1 to one model call on a prompt that makes two"),
    async (program) => {
      await withDeadline(180, async (signal) => {
        await using server = serve(inOrder(spec.shellTool, text("The file is written.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        const { outcome, events } = await gatewayTurn(spec, program, scratch, {
          budget: { maxTurns: 1 },
          signal,
        });
        assert.equal(
          server.modelCalls().length,
          1,
          JSON.stringify(server.requests.map((r) => r.path)),
        );
        assert.deepEqual(
          [outcome.summary.status, outcome.summary.reason],
          ["failed", "budget exhausted: --max-turns 1 (1 of 1 model calls)"],
        );
        const terminal = events.at(-1)!;
        assert.equal(terminal.type, "failed");
        assert.equal((terminal.payload as { code?: string }).code, "budget_exhausted");
        const refused = calls(events).completed.filter((call) => call.outcome === "refused");
        assert.ok(refused.length >= 1);
      });
    },
  );

  for (const status of spec.fatalStatuses) {
    interopTest(
      installed[spec.driver],
      name(`passes an upstream ${status} on to the CLI as the server sent it`),
      async (program) => {
        await withDeadline(150, async (signal) => {
          await using server = serve(inOrder(apiError(status, `the fake says no (${status})`)));
          await using scratch = await makeScratch(spec.driver, server.url);
          const { outcome, events } = await gatewayTurn(spec, program, scratch, {
            prompt: "say hello",
            signal,
          });
          assert.equal(outcome.summary.status, "failed");
          if (!(spec.driver === "codex" && status >= 500)) {
            assert.match(outcome.summary.reason ?? "", new RegExp(`the fake says no|${status}`));
          }
          const answered = calls(events).completed.filter((call) => call.status === status);
          assert.ok(answered.length >= 1, JSON.stringify(calls(events).completed));
          assert.equal(answered[0].outcome, "error");
        });
      },
    );
  }

  interopTest(
    installed[spec.driver],
    name("passes a 429 with its Retry-After on, and the CLI's retry through"),
    async (program) => {
      await withDeadline(150, async (signal) => {
        await using server = serve(inOrder(
          apiError(429, "slow down", { "retry-after": "1" }),
          text("Hello after the wait."),
        ));
        await using scratch = await makeScratch(spec.driver, server.url);
        // Each CLI's retries are off in its scratch config: a 429 ends the turn, as it would
        // without the gateway; the header reached it either way (recorded as it passed).
        const { events } = await gatewayTurn(spec, program, scratch, {
          prompt: "say hello",
          signal,
        });
        const limited = calls(events).completed.find((call) => call.status === 429);
        assert.ok(limited, JSON.stringify(calls(events).completed));
        assert.equal(limited.headers["retry-after"], "1");
      });
    },
  );
}

interopTest(
  installed.opencode,
  "regression: gateway ends an opencode turn that retries an upstream 500 without end, at once rather than at the idle timeout (real opencode)",
  async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = opencodeSpec.serve(inOrder(apiError(500, "the fake is down")));
      await using scratch = await makeScratch("opencode", server.url);
      const started = performance.now();
      const { outcome, events } = await gatewayTurn(opencodeSpec, program, scratch, {
        prompt: "say hello",
        signal,
      });
      assert.equal(outcome.summary.status, "failed");
      assert.match(
        outcome.summary.reason ?? "",
        /^the model server failed 4 calls in a row \(the last: 500 the fake is down\), and opencode retries without end: reins stopped it/,
      );
      // Each failure was said as it happened, not only at the end.
      const said = events.filter((e) => e.type === "problem" && e.payload.source === "gateway");
      assert.ok(said.length >= 4, JSON.stringify(said));
      // Well before the 90 s idle timeout the turn had without the gateway.
      assert.ok(performance.now() - started < 60_000);
    });
  },
);
