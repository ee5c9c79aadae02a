// Replay of a harness run (lib/turn/harness_replay.ts) with the real CLIs (pinned in
// _install.ts): a turn recorded through the gateway against the fake model server, the fake
// stopped, then the same CLI replayed from the recording — it completes, makes every recorded
// call again with matching requests, and does the same work (out.txt written); a recording
// whose request was planted with another prompt is reported as diverging at that call; and a
// second turn of a context replays its chain in a scratch harness home.
import assert from "node:assert/strict";
import type { Settings } from "../../lib/core/config.ts";
import type { RunEvent } from "../../lib/store/contracts.ts";
import { openStore } from "../../lib/store/store.ts";
import { runTurn } from "../../lib/turn/mod.ts";
import { replayHarnessRun } from "../../lib/turn/harness_replay.ts";
import { replayDirectory } from "../../lib/session/replay.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { reins, type ReinsOptions } from "../support/reins.ts";
import { testSettings } from "../drivers/_helpers.ts";
import { ensureCli, type Installed, interopTest } from "./_install.ts";
import { makeScratch, type Scratch } from "./_scratch.ts";
import { type HarnessSpec, withDeadline } from "./_suite.ts";
import { claudeSpec, codexSpec, geminiSpec, opencodeSpec } from "./_specs.ts";

const SPECS: HarnessSpec[] = [claudeSpec, codexSpec, geminiSpec, opencodeSpec];
const installed: Record<string, Installed> = {};
for (const spec of SPECS) installed[spec.driver] = await ensureCli(spec.driver);

function settingsFor(spec: HarnessSpec, program: string, scratch: Scratch): Settings {
  return {
    ...testSettings(scratch.root, {
      [spec.driver]: { program, args: scratch.args, idleTimeoutSeconds: spec.idleTimeoutSeconds },
    }),
    home: scratch.reinsHome,
  };
}

async function recordTurn(
  spec: HarnessSpec,
  settings: Settings,
  scratch: Scratch,
  signal: AbortSignal,
  contextId: string | null = null,
  prompt = "write the file",
) {
  using store = openStore(scratch.reinsHome);
  const outcome = await runTurn(store, settings, {
    agent: { kind: "harness", driver: spec.driver, idleTimeoutSeconds: null },
    prompt,
    cwd: scratch.cwd,
    contextId,
    approval: "auto",
    budget: {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "api",
    env: scratch.env,
  }, { stop: signal, kill: new AbortController().signal });
  assert.equal(outcome.summary.status, "completed", outcome.summary.reason ?? "");
  return outcome.summary.runId;
}

async function replay(settings: Settings, scratch: Scratch, runId: string, signal: AbortSignal) {
  using store = openStore(scratch.reinsHome);
  const original = store.resolveRun(runId);
  const chainStart = original;
  const where = await replayDirectory(store, chainStart);
  const result = await replayHarnessRun(store, settings, original, {
    cwd: where.cwd,
    env: scratch.env,
    timeoutSeconds: null,
    signals: { stop: signal, kill: new AbortController().signal },
    hooks: {},
  });
  const events: RunEvent[] = store.readEvents(result.summary.runId).events;
  return { result, events, cwd: where.cwd };
}

for (const spec of SPECS) {
  const name = (what: string) => `replay ${what} (real ${spec.cli})`;

  interopTest(
    installed[spec.driver],
    name("of a run serves its calls from the recording, the fake server stopped"),
    async (program) => {
      await withDeadline(240, async (signal) => {
        await using scratch = await makeScratch(spec.driver, "http://127.0.0.1:9");
        const settings = settingsFor(spec, program, scratch);
        let runId: string;
        {
          await using server = spec.serve(inOrder(spec.shellTool, text("The file is written.")));
          // The scratch's config points the CLI at this server; rewritten for it.
          await pointAt(scratch, server.url);
          runId = await recordTurn(spec, settings, scratch, signal);
        }
        // The server is gone: a call that reached for it would fail.
        const { result, events, cwd } = await replay(settings, scratch, runId, signal);
        assert.equal(result.summary.status, "completed", result.summary.reason ?? "");
        assert.equal(result.summary.result, "The file is written.");
        assert.deepEqual(result.verdict.divergences, [], JSON.stringify(result.verdict));
        assert.equal(result.verdict.diverged, false);
        const { recorded, served, matching } = result.verdict.modelCalls;
        assert.ok(recorded >= 2, JSON.stringify(result.verdict.modelCalls));
        assert.equal(served, recorded);
        assert.equal(matching, recorded);
        assert.equal(await Deno.readTextFile(`${cwd}/out.txt`), "tool-ran\n");
        const completed = events.filter((e) => e.type === "model.call.completed");
        assert.ok(
          completed.every((e) => e.type === "model.call.completed" && e.payload.outcome === "ok"),
        );
      });
    },
  );

  interopTest(
    installed[spec.driver],
    name("reports a request that differs from the recording's"),
    async (program) => {
      await withDeadline(240, async (signal) => {
        await using scratch = await makeScratch(spec.driver, "http://127.0.0.1:9");
        const settings = settingsFor(spec, program, scratch);
        let runId: string;
        {
          await using server = spec.serve(inOrder(spec.shellTool, text("The file is written.")));
          await pointAt(scratch, server.url);
          runId = await recordTurn(spec, settings, scratch, signal);
        }
        // Planted: the recording's requests say another prompt than the one replayed.
        let planted = 0;
        const wire = `${scratch.reinsHome}/runs/${runId}/wire`;
        for await (const entry of Deno.readDir(wire)) {
          const path = `${wire}/${entry.name}`;
          const body = await Deno.readTextFile(path);
          if (body.includes("write the file") && !body.startsWith("event:")) {
            await Deno.writeTextFile(path, body.replaceAll("write the file", "write no file"));
            planted++;
          }
        }
        assert.ok(planted > 0);
        const { result } = await replay(settings, scratch, runId, signal);
        assert.equal(result.verdict.diverged, true);
        const first = result.verdict.divergences[0];
        assert.equal(first.kind, "request", JSON.stringify(result.verdict.divergences));
        assert.ok(first.kind === "request" && first.fields.includes("messages"));
      });
    },
  );
}

/** How `reins` is run for one CLI: its scratch world in the environment, the CLI allowed. */
async function reinsFor(
  spec: HarnessSpec,
  program: string,
  scratch: Scratch,
): Promise<ReinsOptions> {
  await Deno.mkdir(scratch.reinsHome, { recursive: true });
  await Deno.writeTextFile(
    `${scratch.reinsHome}/config.json`,
    JSON.stringify({
      drivers: {
        [spec.driver]: { args: scratch.args, idleTimeoutSeconds: spec.idleTimeoutSeconds },
      },
    }),
  );
  return {
    home: scratch.reinsHome,
    cwd: scratch.cwd,
    env: { ...scratch.env, [`REINS_${spec.driver.toUpperCase()}_BIN`]: program },
    allowRun: [program],
  };
}

for (const spec of SPECS) {
  interopTest(
    installed[spec.driver],
    `reins replay of a context's second turn replays the chain in a scratch home, offline (real ${spec.cli})`,
    async (program) => {
      await withDeadline(300, async () => {
        await using scratch = await makeScratch(spec.driver, "http://127.0.0.1:9");
        const ids: string[] = [];
        {
          await using server = spec.serve(
            inOrder(spec.shellTool, text("The file is written."), text("Second answer.")),
          );
          await pointAt(scratch, server.url);
          const options = await reinsFor(spec, program, scratch);
          for (const prompt of ["write the file", "and now say something"]) {
            const result = await reins(
              ["run", "--driver", spec.driver, "--context", "ticket-9", "--json", prompt],
              options,
            );
            assert.equal(result.code, 0, result.stderr);
            ids.push(JSON.parse(result.stdout).runId);
          }
        }
        // The fake is gone; the harness's own sessions are moved away, so none can be borrowed.
        await Deno.rename(scratch.home, `${scratch.home}-gone`);
        await Deno.mkdir(scratch.home);
        for (
          const kept of [
            ".codex/config.toml",
            ".config/opencode/opencode.json",
            ".gemini/settings.json",
          ]
        ) {
          const from = `${scratch.home}-gone/${kept}`;
          if (await Deno.stat(from).then(() => true, () => false)) {
            await Deno.mkdir(`${scratch.home}/${kept.slice(0, kept.lastIndexOf("/"))}`, {
              recursive: true,
            });
            await Deno.copyFile(from, `${scratch.home}/${kept}`);
          }
        }
        const options = await reinsFor(spec, program, scratch);
        const replayed = await reins(["replay", ids[1], "--json"], options);
        assert.equal(replayed.code, 0, `${replayed.stdout}\n${replayed.stderr}`);
        const verdict = JSON.parse(replayed.stdout);
        assert.equal(verdict.status, "completed");
        assert.equal(verdict.diverged, false, JSON.stringify(verdict.divergences));
        assert.deepEqual(verdict.chain.map((link: { replayOf: string }) => link.replayOf), ids);
        assert.ok(verdict.harnessHome.startsWith(`${scratch.reinsHome}/tmp/`), verdict.harnessHome);
        assert.equal(verdict.modelCalls.matching, verdict.modelCalls.recorded);
        assert.equal(await Deno.readTextFile(`${verdict.cwd}/out.txt`), "tool-ran\n");
        // The plain report says so too.
        const plain = await reins(["replay", ids[1]], options);
        assert.equal(plain.code, 0, plain.stderr);
        assert.match(plain.stdout, /reproduced the recording: (\d+) of \1 recorded model calls/);
      });
    },
  );
}

/** Points the scratch's CLI at `url` (the scratch was made before the server). */
async function pointAt(scratch: Scratch, url: string): Promise<void> {
  const dead = "http://127.0.0.1:9";
  for (const [key, value] of Object.entries(scratch.env)) {
    if (value.startsWith(dead)) scratch.env[key] = value.replace(dead, url);
  }
  for (
    const path of [
      `${scratch.home}/.codex/config.toml`,
      `${scratch.home}/.config/opencode/opencode.json`,
    ]
  ) {
    const text = await Deno.readTextFile(path).catch(() => null);
    if (text !== null) await Deno.writeTextFile(path, text.replaceAll(dead, url));
  }
}
