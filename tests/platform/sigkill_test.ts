// Crash safety: 50 `reins report` processes, each SIGKILLed at a random point of its report —
// just before or just after the platform applies one of its requests, or at a random moment once
// its first request is out (mid-write of an acknowledgement, between requests). Then one
// `reins report --pending` must leave every run reported exactly once, recordings included.
import assert from "node:assert/strict";
import { listEntryIds } from "../../lib/platform/outbox.ts";
import { readReported } from "../../lib/platform/reported.ts";
import { scenarioKeyOf } from "../../lib/platform/run_outcome.ts";
import { type SeenRequest, startFakePlatform } from "../fixtures/fake_platform.ts";
import { reins, spawnReins, tempDir } from "../support/reins.ts";
import { makeRun } from "./_runs.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

const REPORTS = 50;
const CONCURRENCY = 2;

/** A small deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Plan {
  runId: string;
  /** Kill at this request of the run's report (1-based), before or after it is applied... */
  at: number;
  when: "before" | "after" | "timer";
  /** ...or, for "timer", this many ms after its first request arrived. */
  delayMs: number;
  seen: number;
  child: Deno.ChildProcess | null;
  killed: boolean;
}

Deno.test("reins report --pending reports each of 50 runs exactly once after SIGKILLs at random points", async () => {
  const seed = Number(Deno.env.get("REINS_TEST_SEED") ?? Date.now() % 1_000_000);
  const random = prng(seed);
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const wav = `${dir.path}/call.wav`;
  await Deno.writeFile(wav, new Uint8Array(64 * 1024).fill(7));

  const plans = new Map<string, Plan>();
  const byKey = new Map<string, Plan>();
  for (let i = 0; i < REPORTS; i++) {
    const { record } = await makeRun(home, {
      goal: `Task ${i}: fix bug ${i}`,
      attach: i % 3 === 0 ? [wav] : [],
    });
    const requests = i % 3 === 0 ? 6 : 5;
    const kind = random();
    const plan: Plan = {
      runId: record.id,
      at: 1 + Math.floor(random() * requests),
      when: kind < 0.2 ? "timer" : kind < 0.6 ? "before" : "after",
      delayMs: Math.floor(random() * 40),
      seen: 0,
      child: null,
      killed: false,
    };
    plans.set(record.id, plan);
    byKey.set(scenarioKeyOf(record), plan);
  }

  const kill = async (plan: Plan) => {
    if (plan.killed || plan.child === null) return;
    plan.killed = true;
    try {
      plan.child.kill("SIGKILL");
    } catch { /* exited already */ }
    await plan.child.status;
  };
  const planOf = (seen: SeenRequest) => {
    const [key] = platform.scenarioKeysOf(seen);
    return key === undefined ? undefined : byKey.get(key);
  };
  const platform = startFakePlatform({
    latencyMs: () => Math.floor(random() * 3),
    intercept: async (seen) => {
      const plan = planOf(seen);
      if (!plan || plan.killed) return;
      plan.seen++;
      if (plan.when === "timer" && plan.seen === 1) {
        setTimeout(() => kill(plan), plan.delayMs);
      } else if (plan.when === "before" && plan.seen === plan.at) {
        await kill(plan);
        return new Response("killed", { status: 599 });
      }
    },
    afterHandle: async (seen) => {
      const plan = planOf(seen);
      if (plan?.when === "after" && !plan.killed && plan.seen === plan.at) await kill(plan);
    },
  });
  const env = {
    HARNESS_PLATFORM_URL: platform.url,
    HARNESS_PLATFORM_API_KEY: platform.apiKey,
    HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
  };
  try {
    const queue = [...plans.values()];
    const failures: string[] = [];
    const worker = async () => {
      for (let plan = queue.shift(); plan; plan = queue.shift()) {
        for (let attempt = 1; attempt <= 2; attempt++) {
          plan.child = spawnReins(["report", plan.runId], { home, env });
          const output = await plan.child.output();
          if (plan.killed || output.code === 0) break;
          const stderr = new TextDecoder().decode(output.stderr);
          // Seen about once in 150 children while siblings are being SIGKILLed: Deno asks for
          // read access to one of our own source files as it loads the lazily imported command
          // module (never in a compiled binary, whose modules are embedded). The child did
          // nothing yet, so it is started again; anything else fails the test.
          if (attempt === 1 && /Requires read access to ".*\/lib\/.*\.ts"/.test(stderr)) {
            console.warn(
              `restarted ${plan.runId} after a module-loading refusal: ${stderr.trim()}`,
            );
            continue;
          }
          failures.push(`${plan.runId} exited ${output.code}: ${stderr}`);
          break;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    assert.deepEqual(failures, [], `seed ${seed}: reports that failed without being killed`);
    const killed = [...plans.values()].filter((p) => p.killed).length;
    assert.ok(killed >= REPORTS * 0.6, `seed ${seed}: only ${killed} of ${REPORTS} were killed`);

    const resumed = await reins(["report", "--pending", "--json"], { home, env });
    assert.deepEqual(resumed.code, 0, `seed ${seed}: ${resumed.stderr}`);

    const results = platform.resultsByRun();
    for (const plan of plans.values()) {
      const label = `seed ${seed}, run ${plan.runId} (${plan.when} #${plan.at})`;
      assert.deepEqual(results.get(plan.runId)?.length, 1, label);
    }
    assert.deepEqual(results.size, REPORTS, `seed ${seed}`);
    for (const [i, plan] of [...plans.values()].entries()) {
      const calls = [...platform.calls.values()].filter((call) =>
        call.results.some((r) => r.call_metadata.reins_run_id === plan.runId)
      );
      const recordings = calls.flatMap((call) => call.recordings);
      assert.deepEqual(recordings.length, i % 3 === 0 ? 1 : 0, `seed ${seed}: ${plan.runId}`);
    }
    using root = new DataRoot(home);
    assert.deepEqual(listEntryIds(root), [], `seed ${seed}: the outbox is empty`);
    const remembered = readReported(root);
    for (const plan of plans.values()) {
      assert.deepEqual(remembered.runs[plan.runId]?.length, 1, `seed ${seed}: ${plan.runId}`);
    }
  } finally {
    for (const plan of plans.values()) {
      if (plan.child && !plan.killed) {
        try {
          plan.child.kill("SIGKILL");
        } catch { /* exited */ }
      }
    }
    await platform.close();
  }
});
