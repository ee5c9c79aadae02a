// `reins suite run --reuse SUITE_RUN` (docs/suites.md): each harness scenario's model calls are
// answered from the recordings of that suite run's same scenario where the requests match (by the
// replay's rules, lib/gateway/replay_rules.ts), and passed on to the model where they do not; the
// checks and judges run anew. A scenario's attempt takes the next recorded attempt of the same
// scenario key — and, in a matrix, of the same agent — (the last attempt of each, in the suite
// run's order), its turn N the recorded attempt's turn N. Scenarios of the loop or a command run as they would.
import { HARNESS_DRIVERS, type Settings } from "../core/config.ts";
import { importLazily } from "../core/lazy_import.ts";
import type { Store } from "../store/mod.ts";
import type { ReplayServer } from "../gateway/mod.ts";
import { readScenarioStates, readSuiteRun, resolveSuiteRunId } from "./state.ts";

/** What of a scenario's turn a lease needs (turns.ts's SuiteTurn; not imported: no cycle). */
export interface ReusedTurn {
  /** `agent`: a matrix cell's agent, whose recordings only it reuses (null: no matrix). */
  scenario: { driver: string; key: string; agent: string | null };
  contextId: string;
  cwd: string;
}

/** A turn's share of the reuse: its server (none: nothing recorded for it). */
export interface ReuseLease {
  server: ReplayServer | null;
}

export interface ReuseCounts {
  /** The suite run reused. */
  from: string;
  /** Model calls answered from its recordings, and passed on to the model. */
  matched: number;
  passedOn: number;
}

export class SuiteReuse {
  readonly from: string;
  /** The suite the reused suite run ran (a run of another suite is refused: suite_run.ts). */
  readonly suite: string;
  readonly file: string;
  readonly #store: Store;
  readonly #settings: Settings;
  /** Each cell's (scenario key, agent) recorded attempts not yet taken: their turns' run ids. */
  readonly #pool = new Map<string, string[][]>();
  /** The recorded attempt each context (one scenario attempt) took. */
  readonly #taken = new Map<string, { runIds: string[]; next: number }>();
  matched = 0;
  passedOn = 0;

  private constructor(
    store: Store,
    settings: Settings,
    header: { id: string; suite: string; file: string },
  ) {
    this.#store = store;
    this.#settings = settings;
    this.from = header.id;
    this.suite = header.suite;
    this.file = header.file;
  }

  /** The reuse of suite run `ref` (an id, a unique prefix, `last`); NotFoundError if none. */
  static open(store: Store, settings: Settings, ref: string): SuiteReuse {
    const id = resolveSuiteRunId(store, ref);
    const header = readSuiteRun(store, id);
    const reuse = new SuiteReuse(store, settings, header);
    for (const state of readScenarioStates(store, header)) {
      if (state.runIds.length === 0) continue;
      const cell = cellOf(state.instance.key, state.instance.agent);
      const attempts = reuse.#pool.get(cell) ?? [];
      attempts.push(state.runIds);
      reuse.#pool.set(cell, attempts);
    }
    return reuse;
  }

  /** The recorded turn `turn` reuses, served (null server: none, or not a harness scenario). */
  async lease(turn: ReusedTurn): Promise<ReuseLease> {
    if (!(HARNESS_DRIVERS as readonly string[]).includes(turn.scenario.driver)) {
      return { server: null };
    }
    let taken = this.#taken.get(turn.contextId);
    if (taken === undefined) {
      const runIds = this.#pool.get(cellOf(turn.scenario.key, turn.scenario.agent))?.shift();
      if (runIds === undefined) return { server: null };
      taken = { runIds, next: 0 };
      this.#taken.set(turn.contextId, taken);
    }
    const runId = taken.runIds[taken.next++];
    if (runId === undefined) return { server: null };
    const gateway = await importLazily<typeof import("../gateway/replay_server.ts")>(
      "gateway/replay_server.ts",
    );
    let record;
    try {
      record = this.#store.resolveRun(runId);
    } catch {
      // A run of the reused suite run since deleted: the turn goes to the model.
      return { server: null };
    }
    // A call whose bodies are not all on disk (a damaged recording) cannot answer: its request
    // goes to the model as one the recording has not.
    const calls = gateway.recordedCalls(this.#store.readEvents(runId).events)
      .filter((call) => gateway.missingBody(this.#store, runId, [call]) === null);
    const home = readHome();
    const server = new gateway.ReplayServer(this.#store, runId, calls, {
      cwds: [record.cwd, turn.cwd],
      homes: home === undefined ? [] : [home],
    }, { mode: "reuse", proxy: this.#settings.proxy });
    return { server };
  }

  /** The turn has ended: its server's counts are added, and it is shut down. */
  async release(lease: ReuseLease): Promise<void> {
    if (lease.server === null) return;
    this.matched += lease.server.reused;
    this.passedOn += lease.server.passedOn;
    await lease.server[Symbol.asyncDispose]();
  }

  get counts(): ReuseCounts {
    return { from: this.from, matched: this.matched, passedOn: this.passedOn };
  }
}

/** A matrix cell's name in the pool: the scenario's key, and its agent's name when it has one. */
function cellOf(key: string, agent: string | null): string {
  return agent === null ? key : `${key}\0${agent}`;
}

function readHome(): string | undefined {
  try {
    return Deno.env.get("HOME");
  } catch {
    return undefined;
  }
}
