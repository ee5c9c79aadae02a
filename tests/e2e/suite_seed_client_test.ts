// reins suite's reporting against the seed kit's own client (its platform.py, run by CPython):
// both report the same suite run to a fresh fake platform each, and the requests must match —
// the same sequence (provision, start, batch, then ONGOING and result per scenario), the same
// personas and selectors, the same result shapes and call_metadata. The seed's file is read from
// the seeds folder at run time, never copied here; without it (or without python3) the test is
// skipped, and says so.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import { hasPython, startPythonPlatform, type StubRequest } from "../fixtures/python_platform.ts";
import { loadSuite } from "../../lib/suite/load.ts";
import type { ResultBody } from "../../lib/platform/wire.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const EXAMPLE_DIR = `${REPO}examples/suite/`;
const SHOP_AGENT = `${EXAMPLE_DIR}agents/shop.sh`;
const DRIVER = `${REPO}tests/fixtures/seed_client_driver.py`;

function findSeed(): string | null {
  const dirs = [Deno.env.get("REINS_SEEDS_DIR"), `${REPO}../shared/seeds`, "/work/shared/seeds"];
  for (const dir of dirs) {
    if (!dir) continue;
    try {
      for (const entry of Deno.readDirSync(dir)) {
        if (/^000_.*\.txt$/.test(entry.name)) return `${dir}/${entry.name}`;
      }
    } catch { /* not here */ }
  }
  return null;
}

const SEED = findSeed();
const PYTHON = hasPython();
if (!SEED || !PYTHON) {
  console.error(
    `SKIPPED: the comparison with the seed's platform client needs ${
      !SEED ? "the seed text (set REINS_SEEDS_DIR to the seeds folder)" : "python3"
    }`,
  );
}

/** The seed's platform.py out of the seed text (a wheel diff: its lines start with "+"). */
function extractPlatformPy(seedText: string): string {
  const lines = seedText.split("\n");
  const start = lines.findIndex((line) => line.startsWith("@@ "));
  return lines.slice(start + 1).filter((line) => line.startsWith("+")).map((line) => line.slice(1))
    .join("\n");
}

function envFor(platform: { env: Record<string, string> }) {
  return { ...platform.env, ALK_HARNESS_JOB_ID: "job-seed-1" };
}

/** What the seed kit's ScenarioResult would carry for one of our results. */
function seedResultOf(body: ResultBody) {
  const rows = body.transcript;
  const exchanges = rows.filter((r) => r.speaker_role === "user" || r.speaker_role === "assistant")
    .map((r) => ({ speaker: r.speaker_role, text: r.content }));
  const calls_detail = [];
  for (let i = 0; i < rows.length; i++) {
    if (rows[i].speaker_role !== "tool_calls") continue;
    const call = /^([^(]*)\((.*)\)$/s.exec(rows[i].content)!;
    const outcome = rows[i + 1]?.content ?? "";
    const refused = outcome.startsWith("refused: ");
    calls_detail.push({
      name: call[1],
      arguments: JSON.parse(call[2]),
      result: refused ? outcome.slice(9) : outcome,
      refused,
    });
  }
  const metadata = body.call_metadata;
  const evaluations = metadata.harness_evaluations;
  return {
    scenario: metadata.harness_scenario,
    exchanges,
    calls_detail,
    checkpoints: metadata.harness_checkpoints.map((check) => {
      const evaluation = evaluations.find((e) => e.name === check.name && e.kind !== "metric");
      const by = evaluation && "decided_by" in evaluation ? evaluation.decided_by : "";
      const grading = evaluation && "grading_error" in evaluation && evaluation.grading_error;
      return { ...check, by, ...(grading ? { grading_error: true } : {}) };
    }),
    metrics: evaluations.filter((e) => e.kind === "metric").map((e) => ({
      name: e.name,
      score: "score" in e ? e.score : 0,
      reason: e.reason,
    })),
    problems: body.error_message ? [body.error_message] : [],
    grading_failures: metadata.harness_failure_classification ? ["grading failed"] : [],
    ended: body.ended_reason,
    line: body.call_summary,
    passed: metadata.harness_passed,
    met: metadata.harness_met,
    spent_usd: metadata.harness_spent_usd,
    seconds: body.duration_seconds,
  };
}

/** A JSON value's shape: its keys (recursively) and the types of its leaves. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, shape(v)]),
    );
  }
  return value === null ? "null" : typeof value;
}

function withoutReinsKeys(body: ResultBody) {
  const metadata = Object.fromEntries(
    Object.entries(body.call_metadata).filter(([key]) => !key.startsWith("reins_")),
  );
  const { result_digest: _, ...rest } = { ...body, call_metadata: metadata };
  return rest;
}

/** The id in a request's path (run test, execution or call), if any. */
function idOf(request: StubRequest): string | undefined {
  if (request.route === "provision") return undefined;
  return /\/(?:run-tests|test-executions|call-executions)\/([^/]+)\//.exec(request.target)?.[1];
}

/** The requests of a report with the platform's own ids replaced by their order of first sight. */
function normalized(requests: readonly StubRequest[]) {
  const ids = new Map<string, string>();
  const name = (id: string) => {
    if (!ids.has(id)) ids.set(id, `id${ids.size + 1}`);
    return ids.get(id)!;
  };
  return requests.map((request) => {
    const body = JSON.parse(
      JSON.stringify(
        request.body ?? null,
        (key, value) => key === "scenario_ids" ? (value as string[]).map(name) : value,
      ),
    );
    const id = idOf(request);
    return {
      route: request.route,
      method: request.method,
      status: request.status,
      target: id === undefined ? null : name(id),
      body,
    };
  });
}

Deno.test({
  name: "reins suite reports what the seed's own client sends for the same suite run",
  ignore: !SEED || !PYTHON,
  fn: async () => {
    await using dir = await tempDir();
    await using ours = await startPythonPlatform();
    await using theirs = await startPythonPlatform();
    {
      const run = await reins(["suite", "run", "suite.yaml", "--jobs", "1", "--json"], {
        home: `${dir.path}/home`,
        cwd: EXAMPLE_DIR,
        allowRun: [SHOP_AGENT, "sh"],
        env: envFor(ours),
      });
      assert.equal(run.code, 0, run.stderr);

      const suite = await loadSuite(`${EXAMPLE_DIR}suite.yaml`);
      const oursSeen = (await ours.log()).requests;
      const results = oursSeen.filter((r) => r.route === "result").map((r) =>
        r.body as unknown as ResultBody
      );
      const input = {
        name: suite.name,
        scenarios: suite.scenarios.map((spec) => ({
          name: spec.key,
          scenario_key: spec.key,
          ...(spec.name !== spec.key ? { use_case: spec.name } : {}),
          tests: spec.tests,
          instruction: spec.instruction,
          persona: spec.persona,
        })),
        results: results.map(seedResultOf),
      };
      await Deno.writeTextFile(
        `${dir.path}/platform_seed.py`,
        extractPlatformPy(await Deno.readTextFile(SEED!)),
      );
      await Deno.writeTextFile(`${dir.path}/input.json`, JSON.stringify(input));
      const seed = await new Deno.Command("python3", {
        args: [DRIVER, `${dir.path}/platform_seed.py`, `${dir.path}/input.json`],
        env: envFor(theirs),
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(seed.code, 0, new TextDecoder().decode(seed.stderr));
      const seedReport = JSON.parse(new TextDecoder().decode(seed.stdout));
      assert.deepEqual(seedReport.problems, []);

      const theirsSeen = (await theirs.log()).requests;
      const a = normalized(oursSeen);
      const b = normalized(theirsSeen);
      // Every request of both was accepted (the stub checks shapes, auth and digests with Python).
      assert.deepEqual([...new Set(a.map((r) => r.status! < 300))], [true]);
      assert.deepEqual([...new Set(b.map((r) => r.status! < 300))], [true]);
      // The same requests in the same order: provision, start, batch, then per scenario its
      // ONGOING ping and its result.
      assert.deepEqual(
        a.map((r) => [r.method, r.route, r.target]),
        b.map((r) => [r.method, r.route, r.target]),
      );
      assert.deepEqual(
        a.map((r) => r.route),
        ["provision", "start", "batch", ...suite.scenarios.flatMap(() => ["status", "result"])],
      );
      // Provision, start, batch and the pings, byte for byte (the platform's ids aside).
      for (const route of ["provision", "start", "batch", "status"]) {
        assert.deepEqual(
          a.filter((r) => r.route === route).map((r) => r.body),
          b.filter((r) => r.route === route).map((r) => r.body),
          route,
        );
      }
      // Results: the same shape and the same values, but for the reins_* metadata the seed has no
      // notion of, and the transcript's order: the seed lists tool calls after all messages,
      // reins where they happened.
      const theirResults = theirsSeen.filter((r) => r.route === "result").map((r) =>
        r.body as unknown as ResultBody
      );
      assert.equal(theirResults.length, results.length);
      results.forEach((mine, i) => {
        const seedBody = theirResults[i];
        const mineBare = withoutReinsKeys(mine);
        const seedBare = withoutReinsKeys(seedBody);
        assert.deepEqual(
          shape({ ...mineBare, transcript: [] }),
          shape({ ...seedBare, transcript: [] }),
        );
        assert.deepEqual({ ...mineBare, transcript: [] }, { ...seedBare, transcript: [] });
        const split = (rows: ResultBody["transcript"]) => ({
          said: rows.filter((r) => r.speaker_role === "user" || r.speaker_role === "assistant"),
          tools: rows.filter((r) => r.speaker_role.startsWith("tool_")),
        });
        assert.deepEqual(split(mine.transcript), split(seedBody.transcript));
        assert.ok(
          Object.keys(mine.call_metadata).every((key) =>
            key.startsWith("harness_") || key.startsWith("reins_")
          ),
        );
      });
    }
  },
});
