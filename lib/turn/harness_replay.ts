// Replaying a harness run (Claude Code, Codex, Gemini CLI, opencode): the same harness started
// again with the recorded prompt, in the restored working directory, its model gateway's routes
// pointed at the recording (lib/gateway/replay_server.ts) so that each model call is answered as
// it was — no network, no key — and the verdict: the calls whose requests differ in what matters
// (lib/gateway/replay_rules.ts), recorded calls never made, another outcome. A turn of a context
// replays the context's chain from its first turn, each a run of its own on a scratch context,
// in a scratch harness home under the data root's tmp/, so the harness's session store is
// rebuilt by the replay, not borrowed from the recorded one. With `upstream`, the calls go to the
// real model instead, and the requests are compared afterwards all the same.
import type { Settings } from "../core/mod.ts";
import { HARNESS_DRIVERS, type HarnessDriver } from "../core/config.ts";
import { NotFoundError } from "../core/errors.ts";
import { newId } from "../core/ids.ts";
import { importLazily } from "../core/lazy_import.ts";
import { joinPath } from "../core/paths.ts";
import type { RunEvent, RunRecord, Store } from "../store/mod.ts";
import { replayPlan, terminalOutcome } from "../session/replay.ts";
import type { CallDivergence, RecordedCall, ReplayPaths } from "../gateway/mod.ts";
import { runTurn } from "./run_turn.ts";
import { perRunOfEvents } from "./agent.ts";
import type { RunSummary, TurnHooks, TurnSignals } from "./types.ts";

export interface HarnessReplayOptions {
  /** Where the (last) turn replays: the run's directory restored (replayDirectory). */
  cwd: string;
  /** Variables for the harness besides reins's own (the CLI's: none; a test's: its scratch's). */
  env?: Record<string, string>;
  /** Send the calls to the real model instead of answering them from the recording. */
  upstream?: boolean;
  timeoutSeconds: number | null;
  signals: TurnSignals;
  hooks: TurnHooks;
}

/** Where a harness replay differs from its recording. */
export type HarnessDivergence =
  | ({ kind: "request"; replayOf: string } & CallDivergence)
  | { kind: "unused-calls"; replayOf: string; recorded: number; served: number }
  | { kind: "outcome"; replayOf: string; recorded: string; replayed: string };

export interface HarnessVerdict {
  diverged: boolean;
  divergences: HarnessDivergence[];
  /** Over the chain: recorded generation calls, served again (or re-sent), and matching. */
  modelCalls: { recorded: number; served: number; matching: number };
}

export interface HarnessReplayResult {
  summary: RunSummary;
  error: unknown;
  /** The replays, the chain's earlier turns first: [replay run id, recorded run id]. */
  chain: { runId: string; replayOf: string }[];
  verdict: HarnessVerdict;
  /** The scratch harness home the chain ran in. */
  harnessHome: string;
}

/** True when `record` is a harness run (one that replays from its gateway's recording). */
export function isHarnessRun(record: RunRecord): boolean {
  return (HARNESS_DRIVERS as readonly string[]).includes(record.driver);
}

/** The recorded turns `record` continues, oldest first, and itself: its context's chain. */
export function replayChain(store: Store, record: RunRecord): RunRecord[] {
  if (record.contextId === null) return [record];
  const runs = store.listRuns({ contextId: record.contextId, limit: 10_000 })
    .filter((run) =>
      run.driver === record.driver && run.startedAt <= record.startedAt && run.id !== record.id &&
      run.trigger !== "replay"
    )
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  return [...runs, record];
}

const PLACEHOLDER_KEY = "reins-replay-no-key";

/**
 * The variables that put `driver`'s session store (and what it writes of itself) under `home`,
 * its config copied there from where `env` has it (its settings, not its sessions nor its
 * credentials), and a placeholder key unless the calls go `upstream`.
 */
export async function scratchHarnessEnv(
  driver: HarnessDriver,
  home: string,
  env: Record<string, string | undefined>,
  upstream = false,
): Promise<Record<string, string>> {
  // Answered from the recording, the harness needs a key only to start: a placeholder, whatever
  // key or sign-in it has (which reins does not read). Sent upstream, its own.
  const key = (name: string) => upstream ? {} : { [name]: PLACEHOLDER_KEY };
  const copy = async (from: string, to: string, names: string[]) => {
    await Deno.mkdir(to, { recursive: true, mode: 0o700 });
    for (const name of names) {
      await Deno.copyFile(joinPath(from, name), joinPath(to, name)).catch(() => {});
    }
  };
  const userHome = env.HOME ?? "";
  switch (driver) {
    case "claude": {
      const config = joinPath(home, ".claude");
      await copy(env.CLAUDE_CONFIG_DIR ?? joinPath(userHome, ".claude"), config, [
        "settings.json",
        "CLAUDE.md",
      ]);
      return {
        HOME: home,
        CLAUDE_CONFIG_DIR: config,
        ...key("ANTHROPIC_API_KEY"),
      };
    }
    case "codex": {
      const codexHome = joinPath(home, ".codex");
      await copy(env.CODEX_HOME ?? joinPath(userHome, ".codex"), codexHome, [
        "config.toml",
        "AGENTS.md",
      ]);
      return {
        HOME: home,
        CODEX_HOME: codexHome,
        ...key("OPENAI_API_KEY"),
      };
    }
    case "gemini": {
      const gemini = joinPath(home, ".gemini");
      await copy(joinPath(userHome, ".gemini"), gemini, ["settings.json", "GEMINI.md"]);
      if (!upstream) {
        // Signed in with the placeholder key: Gemini CLI starts only with an auth method chosen
        // (its settings may be out of reins's reach under the sandbox, or choose another).
        const path = joinPath(gemini, "settings.json");
        let settings: Record<string, unknown> = {};
        try {
          const read = JSON.parse(await Deno.readTextFile(path));
          if (read !== null && typeof read === "object" && !Array.isArray(read)) settings = read;
        } catch { /* none, or not JSON: a fresh one */ }
        const security = (settings.security ?? {}) as Record<string, unknown>;
        const auth = (security.auth ?? {}) as Record<string, unknown>;
        settings.security = { ...security, auth: { ...auth, selectedType: "gemini-api-key" } };
        await Deno.writeTextFile(path, JSON.stringify(settings), { mode: 0o600 });
      }
      return {
        HOME: home,
        ...key("GEMINI_API_KEY"),
      };
    }
    case "opencode": {
      // Its config (providers, keys) stays where it is; its sessions go to the scratch home.
      const config = env.XDG_CONFIG_HOME ?? joinPath(userHome, ".config");
      return {
        HOME: home,
        XDG_CONFIG_HOME: config,
        XDG_DATA_HOME: joinPath(home, ".local/share"),
        XDG_STATE_HOME: joinPath(home, ".local/state"),
        XDG_CACHE_HOME: joinPath(home, ".cache"),
      };
    }
  }
}

/** Where the harnesses keep their config, as far as this process may read (the sandbox's list). */
function readable(): Record<string, string | undefined> {
  const found: Record<string, string | undefined> = {};
  for (const name of ["HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"]) {
    try {
      found[name] = Deno.env.get(name);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
    }
  }
  return found;
}

/**
 * The recorded turns of `chain` with their events and calls; a NotFoundError when one names a
 * body its recording lacks (a request, or with `upstream` false an answer): such a call would be
 * answered as a failure (which a harness retries) and read as the replay diverging, so it is said
 * for what it is before anything of the replay is made.
 */
export async function replayableRecordings(
  store: Store,
  chain: readonly RunRecord[],
  upstream: boolean,
): Promise<{ recorded: RunRecord; events: RunEvent[]; calls: RecordedCall[] }[]> {
  const gateway = await importLazily<typeof import("../gateway/replay_server.ts")>(
    "gateway/replay_server.ts",
  );
  return chain.map((recorded) => {
    const events = store.readEvents(recorded.id).events;
    const calls = gateway.recordedCalls(events);
    const missing = gateway.missingBody(store, recorded.id, calls, !upstream);
    if (missing !== null) {
      throw new NotFoundError(
        `Cannot replay run ${recorded.id}: the ${missing.which} of its model call ` +
          `${missing.callId} is not on disk (${missing.path})`,
        { hint: "its recording is damaged: the bodies of its calls are kept under its wire/" },
      );
    }
    return { recorded, events, calls };
  });
}

/** Replays harness run `original` (and the context's turns before it); see the module's note. */
export async function replayHarnessRun(
  store: Store,
  settings: Settings,
  original: RunRecord,
  options: HarnessReplayOptions,
): Promise<HarnessReplayResult> {
  const gateway = await importLazily<typeof import("../gateway/replay_server.ts")>(
    "gateway/replay_server.ts",
  );
  const driver = original.driver as HarnessDriver;
  const chain = replayChain(store, original);
  const recordings = await replayableRecordings(store, chain, options.upstream === true);
  const tmp = store.layout.tmp();
  store.ensureDir(tmp);
  const harnessHome = joinPath(tmp, `replay-${newId()}-home`);
  await Deno.mkdir(harnessHome, { mode: 0o700 });
  const given = options.env ?? {};
  const inherited: Record<string, string | undefined> = { ...readable(), ...given };
  const scratch = await scratchHarnessEnv(
    driver,
    harnessHome,
    inherited,
    options.upstream === true,
  );
  const env = { ...given, ...scratch };
  // One scratch context for the whole chain: each replayed turn resumes the one before it.
  const contextId = chain.length > 1 ? `replay-${newId()}` : null;
  const divergences: HarnessDivergence[] = [];
  const modelCalls = { recorded: 0, served: 0, matching: 0 };
  const replays: HarnessReplayResult["chain"] = [];
  let last: { summary: RunSummary; error: unknown } | null = null;
  for (const { recorded, events, calls } of recordings) {
    const plan = replayPlan(recorded, events);
    // Every turn in the one directory: the chain's first turn found it so (restored), and each
    // later one finds what the turns before it left.
    const cwd = options.cwd;
    const paths = {
      cwds: [recorded.cwd, cwd],
      homes: [inherited.HOME ?? "", Deno.realPathSync(harnessHome)],
    };
    const server = options.upstream
      ? null
      : new gateway.ReplayServer(store, recorded.id, calls, paths);
    let outcome;
    try {
      outcome = await runTurn(
        store,
        settings,
        {
          // The model and arguments the recorded turn was given of its own, given again.
          agent: { kind: "harness", driver, idleTimeoutSeconds: null, ...perRunOfEvents(events) },
          prompt: plan.prompt,
          cwd,
          contextId,
          approval: plan.approval,
          budget: plan.budget,
          timeoutSeconds: options.timeoutSeconds,
          parentRunId: null,
          trigger: "replay",
          relation: "replay",
          resumedFromRunId: recorded.id,
          env,
          ...(server === null ? {} : { upstreamOf: (route: string) => server.upstreamOf(route) }),
        },
        options.signals,
        options.hooks,
      );
    } finally {
      await server?.[Symbol.asyncDispose]();
    }
    last = outcome;
    replays.push({ runId: outcome.summary.runId, replayOf: recorded.id });
    const matcher = server?.matcher ??
      resent(store, outcome.summary.runId, recorded.id, calls, paths, gateway);
    for (const divergence of matcher.divergences) {
      divergences.push({ kind: "request", replayOf: recorded.id, ...divergence });
    }
    const counts = matcher.counts;
    modelCalls.recorded += counts.recorded;
    modelCalls.served += counts.served;
    modelCalls.matching += counts.matching;
    const unused = matcher.unused().length;
    if (unused > 0) {
      divergences.push({
        kind: "unused-calls",
        replayOf: recorded.id,
        recorded: counts.recorded,
        served: counts.served,
      });
    }
    const was = terminalOutcome(events);
    const now = terminalOutcome(store.readEvents(outcome.summary.runId).events);
    if (was !== now) {
      divergences.push({ kind: "outcome", replayOf: recorded.id, recorded: was, replayed: now });
    }
    if (options.signals.stop.aborted) break;
  }
  return {
    summary: last!.summary,
    error: last!.error,
    chain: replays,
    verdict: { diverged: divergences.length > 0, divergences, modelCalls },
    harnessHome,
  };
}

/** With --upstream: the replay's requests (as its gateway recorded them) taken to the recording's. */
function resent(
  store: Store,
  runId: string,
  recordedRunId: string,
  calls: RecordedCall[],
  paths: ReplayPaths,
  gateway: typeof import("../gateway/replay_server.ts"),
) {
  const read = (run: string) => (sha: string) => {
    try {
      return Deno.readFileSync(store.layout.wireBody(run, sha));
    } catch {
      return null;
    }
  };
  const matcher = new gateway.ReplayMatcher(calls, read(recordedRunId), paths);
  const mine = read(runId);
  for (const event of store.readEvents(runId).events) {
    if (event.type !== "model.call.started" || event.ignored !== undefined) continue;
    const { route, method, path, body } = event.payload;
    matcher.take(route, method, path, body === null ? null : mine(body.sha256));
  }
  return matcher;
}
