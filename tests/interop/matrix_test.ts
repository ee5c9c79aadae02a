// A matrix on the real CLIs, offline: a suite file with three agents — Claude Code on two models
// and Codex — × 3 epochs, against the fake Anthropic and Responses servers and the platform stub on
// Python's http.server, under the binary's sandbox. Each agent's model reaches its CLI (the fake
// servers see the model each agent names), the model the fake answers wrongly fails its agent's
// scenario in every epoch, and the per-agent results come out: the table's block per agent, the
// JSON's totals per agent, a JUnit testsuite per agent, and one platform test per agent with an
// execution per epoch; each agent's pass^k with its interval, and `reins suite compare` of two agents as
// a gate: exit 1 on haiku's planted regression, exit 0 on codex, which is unchanged.
import assert from "node:assert/strict";
import { type RecordedRequest, text } from "../fixtures/fake_model_server.ts";
import { startFakeAnthropic } from "../fixtures/fake_anthropic.ts";
import { startFakeResponses } from "../fixtures/fake_responses.ts";
import { hasPython, startPythonPlatform } from "../fixtures/python_platform.ts";
import { reins } from "../support/reins.ts";
import { ensureCli, interopTest } from "./_install.ts";
import { makeScratch } from "./_scratch.ts";
import { withDeadline } from "./_suite.ts";

const claude = await ensureCli("claude");
const codex = await ensureCli("codex");
// Both CLIs or neither: the matrix is of two harnesses.
const installed = claude.skip !== null ? claude : codex.skip !== null ? codex : claude;
if (!hasPython()) console.warn("interop matrix: python3 missing, the platform part is left out");

const EPOCHS = 3;

/** What the fake answers: the capital right for everyone; the reversal wrong for haiku. */
function answer(model: string, request: RecordedRequest): string {
  const body = JSON.stringify(request.body);
  if (body.includes("ZQX-reverse")) return model.includes("haiku") ? "kiwi" : "It is iwik.";
  if (body.includes("ZQX-capital")) return "The capital is Paris.";
  return "ok";
}

interopTest(
  installed,
  "reins suite run of a matrix: Claude Code on two models and Codex × 3 epochs, results per agent (real Claude Code and Codex)",
  async () => {
    await withDeadline(900, async () => {
      const models: string[] = [];
      await using anthropic = startFakeAnthropic((request) => {
        const model = String((request.body as { model?: string }).model);
        models.push(model);
        return text(answer(model, request));
      });
      await using openai = startFakeResponses((request) => {
        const model = String((request.body as { model?: string }).model);
        models.push(model);
        return text(answer(model, request));
      });
      await using scratch = await makeScratch("claude", anthropic.url);
      await using codexScratch = await makeScratch("codex", openai.url);
      await Deno.mkdir(scratch.reinsHome, { recursive: true });
      await Deno.writeTextFile(
        `${scratch.reinsHome}/config.json`,
        JSON.stringify({
          drivers: {
            claude: { idleTimeoutSeconds: 120 },
            codex: { args: codexScratch.args, idleTimeoutSeconds: 120 },
          },
          // Codex reports no cost: a price for the model it is told, so its cost is known.
          prices: { "gpt-5.5": { inputPerMillion: 1, outputPerMillion: 2 } },
        }),
      );
      await Deno.writeTextFile(
        `${scratch.cwd}/suite.yaml`,
        [
          "suite: matrix-interop",
          `epochs: ${EPOCHS}`,
          "timeouts: {turnSeconds: 180}",
          "agents:",
          "  sonnet: {driver: claude, model: claude-sonnet-4-5}",
          "  haiku: {driver: claude, model: claude-haiku-4-5}",
          "  codex: {driver: codex, model: gpt-5.5}",
          "scenarios:",
          "  - key: capital",
          "    persona: {name: Ann}",
          "    turns: ['ZQX-capital: what is the capital of France?']",
          "    checks: [{name: paris, regex: Paris}]",
          "  - key: reverse",
          "    persona: {name: Bob}",
          "    turns: ['ZQX-reverse: spell kiwi backwards']",
          "    checks: [{name: reversed, regex: iwik}]",
        ].join("\n"),
      );
      await using platform = hasPython() ? await startPythonPlatform() : null;
      const result = await reins(
        ["suite", "run", "suite.yaml", "--jobs", "3", "--json", "--junit", "junit.xml"],
        {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
          env: {
            ...codexScratch.env,
            ...scratch.env,
            ...(platform?.env ?? {}),
            REINS_CLAUDE_BIN: claude.program!,
            REINS_CODEX_BIN: codex.program!,
          },
          allowRun: [claude.program!, codex.program!],
          allowPaths: [codexScratch.root],
        },
      );
      assert.equal(result.code, 1, `exit ${result.code}: ${result.stderr}\n${result.stdout}`);
      const run = JSON.parse(result.stdout);

      // Per agent: every epoch of every scenario, as the fake answered each model.
      const perAgent = Object.fromEntries(
        run.agents.map((a: { agent: string; totals: { passed: number; failed: number } }) => [
          a.agent,
          `${a.totals.passed} passed, ${a.totals.failed} failed`,
        ]),
      );
      console.log("per-agent pass counts:", JSON.stringify(perAgent));
      assert.deepEqual(perAgent, {
        sonnet: "6 passed, 0 failed",
        haiku: "3 passed, 3 failed",
        codex: "6 passed, 0 failed",
      });
      const passes = (agent: string, key: string) =>
        run.scenarios.filter((s: { agent: string; key: string; status: string }) =>
          s.agent === agent && s.key === key && s.status === "passed"
        ).length;
      for (const agent of ["sonnet", "haiku", "codex"]) {
        console.log(
          `${agent}: capital ${passes(agent, "capital")}/${EPOCHS}, reverse ${
            passes(agent, "reverse")
          }/${EPOCHS}`,
        );
      }
      assert.equal(passes("haiku", "reverse"), 0);
      assert.equal(passes("haiku", "capital"), EPOCHS);
      // Each agent's model reached its CLI.
      for (const model of ["claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5.5"]) {
        assert.ok(models.some((seen) => seen.startsWith(model)), `${model} in ${models}`);
      }
      const epochs = run.scenarios.map((s: { epoch: number }) => s.epoch);
      assert.deepEqual([...new Set(epochs)].sort(), [1, 2, 3]);
      // Every cell its own context.
      const contexts = new Set<string>();
      for (const scenario of run.scenarios as { runIds: string[] }[]) {
        const record = JSON.parse(
          await Deno.readTextFile(`${scratch.reinsHome}/runs/${scenario.runIds[0]}/run.json`),
        );
        contexts.add(record.contextId);
      }
      assert.equal(contexts.size, 2 * 3 * EPOCHS);

      const junit = await Deno.readTextFile(`${scratch.cwd}/junit.xml`);
      assert.deepEqual(
        [...junit.matchAll(/<testsuite name="([^"]+)" tests="(\d+)" failures="(\d+)"/g)]
          .map((m) => `${m[1]}: ${m[3]}/${m[2]} failed`),
        [
          "sonnet · matrix-interop: 0/6 failed",
          "haiku · matrix-interop: 3/6 failed",
          "codex · matrix-interop: 0/6 failed",
        ],
      );
      const table = await reins(["suite", "show", run.suiteRunId], {
        home: scratch.reinsHome,
        cwd: scratch.cwd,
      });
      console.log(table.stdout);
      assert.match(table.stdout, /^haiku: 6 scenarios: 3 passed, 3 failed/m);
      // Each agent's pass^k over the epochs, with its interval: haiku passes one of two always.
      assert.match(table.stdout, /^sonnet: pass\^3 1\.00 \[[\d.]+, 1\.00\] · pass@3 1\.00/m);
      assert.match(table.stdout, /^haiku: pass\^3 0\.50 \[0\.09, 0\.91\] · pass@3 0\.50/m);
      assert.match(table.stdout, /^codex: pass\^3 1\.00 \[/m);

      // The gate: haiku against sonnet is a regression (3/3 → 0/3, p = 0.05), codex is not.
      const compare = (b: string) =>
        reins(["suite", "compare", run.suiteRunId, "--agent", "sonnet", "--agent", b, "--json"], {
          home: scratch.reinsHome,
          cwd: scratch.cwd,
        });
      const regressed = await compare("haiku");
      assert.equal(regressed.code, 1, regressed.stderr);
      const verdicts = (out: string) =>
        Object.fromEntries(
          JSON.parse(out).scenarios.map((
            s: { scenario: string; verdict: string; significant: boolean },
          ) => [s.scenario, `${s.verdict}${s.significant ? " (significant)" : ""}`]),
        );
      assert.deepEqual(verdicts(regressed.stdout), {
        capital: "unchanged",
        reverse: "regressed (significant)",
      });
      const unchanged = await compare("codex");
      assert.equal(unchanged.code, 0, unchanged.stderr);
      assert.deepEqual(verdicts(unchanged.stdout), { capital: "unchanged", reverse: "unchanged" });

      if (platform !== null) {
        const log = await platform.log();
        const names = Object.values(log.tests).map((t) => String(t.body.name)).sort();
        assert.deepEqual(names, [
          "codex · matrix-interop",
          "haiku · matrix-interop",
          "sonnet · matrix-interop",
        ]);
        for (const test of Object.values(log.tests)) {
          const executions = Object.values(log.executions).filter((e) => e.run_test_id === test.id);
          assert.equal(executions.length, EPOCHS, `${test.body.name}: an execution per epoch`);
        }
        assert.equal(Object.values(log.calls).filter((call) => call.result).length, 18);
      }
    });
  },
);

interopTest(
  claude,
  "reins replay of a Claude Code run started with --model M runs the replay on M again (real Claude Code)",
  async (program) => {
    await withDeadline(300, async () => {
      const seen: string[] = [];
      await using server = startFakeAnthropic((request) => {
        seen.push(String((request.body as { model?: string }).model));
        return text("Replayed hello.");
      });
      await using scratch = await makeScratch("claude", server.url);
      await Deno.mkdir(scratch.reinsHome, { recursive: true });
      const options = {
        home: scratch.reinsHome,
        cwd: scratch.cwd,
        env: { ...scratch.env, REINS_CLAUDE_BIN: program },
        allowRun: [program],
      };
      const ran = await reins(
        ["run", "--driver", "claude", "--model", "claude-haiku-4-5", "--json", "say hello"],
        options,
      );
      assert.equal(ran.code, 0, ran.stderr);
      const { runId } = JSON.parse(ran.stdout);
      const replayed = await reins(["replay", runId, "--json"], options);
      assert.equal(replayed.code, 0, `${replayed.stderr}\n${replayed.stdout}`);
      const verdict = JSON.parse(replayed.stdout);
      assert.equal(verdict.diverged, false, JSON.stringify(verdict.divergences));
      const shown = await reins(["show", verdict.runId, "--json"], options);
      const events = JSON.parse(shown.stdout).events as {
        type: string;
        payload: { model?: string | null; agent?: { perRun?: unknown } };
      }[];
      const started = events.find((event) => event.type === "run.started")!;
      assert.deepEqual(started.payload.agent?.perRun, { model: "claude-haiku-4-5" });
      const calls = events.filter((event) => event.type === "model.call.started");
      assert.ok(calls.length > 0);
      for (const call of calls) assert.match(String(call.payload.model), /^claude-haiku-4-5/);
      assert.ok(seen.every((model) => model.startsWith("claude-haiku-4-5")), seen.join(", "));
    });
  },
);
