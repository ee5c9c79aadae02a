// A suite run reported to the platform as it goes, through the outbox (lib/platform): as the suite
// run begins, a live report is written and its delivery begun (provision, start, batch, so the
// execution is visible while it runs); as each scenario starts, its ONGOING ping; as each finishes,
// its result (transcript, checkpoints and metrics in call_metadata) and recordings. Nothing a
// scenario does waits for the platform: its changes are queued and written to the entry between
// deliveries, which run one at a time in the background. A crash or an outage loses nothing: the
// entry stays in the outbox, a resume of the suite run goes on with the same one (and adds the
// results of scenarios that finished after the last change was written), and `reins report
// --pending` sends what is ready. Nothing here changes a scenario's status or the suite's exit
// code.
import type { Settings } from "../core/mod.ts";
import { isSandboxRefusal } from "../core/sandbox.ts";
import { describeError } from "../core/errors.ts";
import type { RetryPolicy } from "../net/mod.ts";
import { PlatformClient, type PlatformTarget } from "../platform/client.ts";
import { deliverEntry, type ReportOutcome } from "../platform/deliver.ts";
import { type OutboxEntry, readEntry, removeEntry } from "../platform/outbox.ts";
import type {
  CheckpointInput,
  MetricInput,
  RecordingSource,
  ScenarioInput,
  ScenarioOutcome,
} from "../platform/mod.ts";
import { rememberReport } from "../platform/reported.ts";
import {
  createReport,
  scenarioFinished,
  scenarioStarted,
  updateReport,
} from "../platform/report_entry.ts";
import type { DataRoot } from "../store/mod.ts";
import { type Evidence, knownCost } from "./evidence.ts";
import { isFinished } from "./results.ts";
import type { ScenarioSpec, Suite } from "./load.ts";
import type { PlanFile, PlanPlatform } from "./plan.ts";
import type { ScenarioEnd } from "./runner.ts";
import type { Instance, ReportRef, ScenarioState, SuiteRunHandle } from "./state.ts";

/** The platform's scenario for one of the suite's. */
export function scenarioInputOf(spec: ScenarioSpec): ScenarioInput {
  return {
    name: spec.key,
    scenarioKey: spec.key,
    // The seed shows a scenario by its use case first: the name a person gave it.
    useCase: spec.name !== spec.key ? spec.name : undefined,
    tests: spec.tests,
    instruction: spec.instruction,
    persona: spec.persona,
  };
}

/** What a finished scenario reports: the seed's ScenarioResult, from its state and evidence. */
export function scenarioOutcomeOf(
  end: ScenarioEnd,
  suite: { name: string; suiteRunId: string },
): ScenarioOutcome {
  const { state, evidence } = end;
  const checkpoints: CheckpointInput[] = state.checks.filter((check) => check.checkpoint).map((
    check,
  ) => ({
    name: check.name,
    kind: check.kind,
    passed: check.met,
    detail: check.detail,
    ...(check.by ? { by: check.by } : {}),
    ...(check.outcome === "grading_error" ? { gradingError: true } : {}),
  }));
  const metrics: MetricInput[] = state.checks.flatMap((check) =>
    check.kind === "judge" && check.score !== null
      ? [{ name: check.name, score: check.score, reason: check.reason ?? check.detail }]
      : []
  );
  const gradingFailures = state.checks.filter((check) => check.outcome === "grading_error")
    .map((check) => `${check.name}: ${check.detail}`);
  return {
    scenario: state.instance.key,
    transcript: evidence?.transcript ?? [],
    checkpoints,
    metrics,
    problems: state.status === "error" ? [state.reason ?? "the scenario could not run"] : [],
    gradingFailures,
    ended: state.ended ?? state.reason ?? state.status,
    passed: state.status === "passed",
    spentUsd: evidence ? knownCost(evidence) : 0,
    seconds: (state.durationMs ?? 0) / 1000,
    metadata: {
      reins_suite: suite.name,
      reins_suite_run_id: suite.suiteRunId,
      reins_instance: state.instance.id,
      ...(state.instance.agent === null
        ? {}
        : { reins_agent: state.instance.agent, reins_epoch: state.instance.repeat }),
      reins_status: state.status,
      reins_run_ids: state.runIds,
      reins_attempts: state.attempts.length,
      reins_turns: state.turns,
    },
  };
}

export interface ReporterOptions {
  root: DataRoot;
  settings: Settings;
  target: PlatformTarget;
  suite: Suite;
  handle: SuiteRunHandle;
  /** The scenarios this suite run plays (every one, including those a resume finds finished). */
  instances: readonly Instance[];
  /** A shard's plan, whose calls were allocated by `suite plan`. */
  plan?: { file: PlanFile; platform: PlanPlatform };
  retry?: RetryPolicy;
  /** One line for people, about the report (never the suite's results). */
  note(message: string): void;
  /**
   * What a finished scenario left, read back from its recorded runs: for a resume whose report
   * lacks the result of a scenario that finished after the last change was written (a crash).
   * Null when it cannot be read.
   */
  recorded?(state: ScenarioState): { evidence: Evidence; recordings: RecordingSource[] } | null;
  /** The test's name on the platform; default: the suite's. */
  name?: string;
  /** Where the suite run keeps this report's entry (default: its header's `report`). */
  slot?: { get(): ReportRef | null; set(ref: ReportRef): void };
  /** The run test to add the execution to (a matrix's later epochs: the first one's test). */
  joinTest?: string;
  /** Told once the platform has given the report its run test (after a delivery). */
  onTest?(runTestId: string): void;
}

/** What the report came to, in lines for people. */
export interface ReportSummary {
  outcome: ReportOutcome | null;
  lines: string[];
}

function callKeysOf(instances: readonly Instance[], entryKeys: readonly string[]) {
  return Object.fromEntries(instances.map((instance, i) => [instance.id, entryKeys[i]]));
}

/** The live report of one suite run. */
export class SuiteReporter {
  readonly #options: ReporterOptions;
  readonly #client: PlatformClient;
  readonly #outboxId: string;
  readonly #keys: Record<string, string>;
  #running: Promise<void> | null = null;
  #again = false;
  /** Changes not yet written to the entry: the next delivery's loop writes them first. */
  readonly #changes: ((entry: OutboxEntry) => void)[] = [];
  #last: ReportOutcome | null = null;
  /** What stopped reporting for good (the sandbox refused the host, say). */
  #broken: string | null = null;
  #toldTest = false;

  private constructor(options: ReporterOptions, outboxId: string, keys: Record<string, string>) {
    this.#options = options;
    this.#client = new PlatformClient(options.target, { proxy: options.settings.proxy });
    this.#outboxId = outboxId;
    this.#keys = keys;
  }

  get outboxId(): string {
    return this.#outboxId;
  }

  /**
   * Writes the live report (or finds the one a resumed suite run made) and begins delivering it
   * in the background: the platform has the execution and its calls as soon as it answers.
   * Null when nothing is left to report (every scenario skipped, or a resume with all sent).
   */
  static begin(options: ReporterOptions): SuiteReporter | null {
    const { root, handle } = options;
    const slot = options.slot ?? {
      get: () => handle.header.report,
      set: (ref: ReportRef) => {
        handle.header.report = ref;
      },
    };
    const kept = slot.get();
    const keptEntry = kept ? readEntry(root, kept.outboxId) : null;
    if (kept && keptEntry?.ok) {
      const reporter = new SuiteReporter(options, kept.outboxId, kept.keys);
      reporter.#catchUp(keptEntry.entry.calls);
      reporter.#schedule();
      return reporter;
    }
    const specs = new Map(options.suite.scenarios.map((spec) => [spec.index, spec]));
    // A resume whose report is gone (sent whole, or removed) reports what is left as a new one.
    const instances = options.instances.filter((instance) => {
      const spec = specs.get(instance.index);
      if (spec === undefined || spec.skip !== null) return false;
      if (kept === null) return true;
      const state = handle.readScenario(instance);
      return state.status === "pending" || state.status === "running";
    });
    if (instances.length === 0) return null;
    const planned = options.plan;
    const byInstance = new Map(planned?.file.instances.map((i) => [i.id, i.callExecutionId]) ?? []);
    const entry = createReport(root, {
      name: options.name ?? options.suite.name,
      target: options.target,
      live: true,
      modality: options.suite.modality,
      ...(options.joinTest ? { joinTest: options.joinTest } : {}),
      scenarios: instances.map((instance) => ({
        runId: null,
        scenario: scenarioInputOf(specs.get(instance.index)!),
        outcome: null,
        recordings: [],
      })),
      preallocated: planned
        ? {
          runTestId: planned.platform.runTestId,
          testExecutionId: planned.platform.testExecutionId,
          callExecutionIds: instances.map((instance) => byInstance.get(instance.id) ?? ""),
        }
        : undefined,
    });
    const keys = callKeysOf(instances, entry.calls.map((call) => call.scenarioKey));
    slot.set({ outboxId: entry.id, keys });
    handle.saveHeader();
    const reporter = new SuiteReporter(options, entry.id, keys);
    reporter.#schedule();
    return reporter;
  }

  /** Queues the results a resumed report lacks: scenarios that finished after its last change. */
  #catchUp(calls: readonly { scenarioKey: string; result: unknown; resultSent: boolean }[]): void {
    const { handle, recorded } = this.#options;
    if (!recorded) return;
    const lacking = new Set(
      calls.filter((call) => call.result === null && !call.resultSent).map((c) => c.scenarioKey),
    );
    const specs = new Map(this.#options.suite.scenarios.map((spec) => [spec.index, spec]));
    for (const instance of this.#options.instances) {
      const key = this.#keys[instance.id];
      const spec = specs.get(instance.index);
      if (key === undefined || !lacking.has(key) || spec === undefined) continue;
      const state = handle.readScenario(instance);
      if (!isFinished(state.status) || state.status === "skipped") continue;
      const left = recorded(state);
      if (left === null) continue;
      this.#queueFinished({ state, spec, evidence: left.evidence }, left.recordings);
    }
  }

  /**
   * A scenario's conversation began (its first run exists): its ONGOING ping goes with the next
   * delivery. Returns at once: the scenario never waits for the platform.
   */
  started(state: ScenarioState, runId: string): void {
    const key = this.#keys[state.instance.id];
    if (key === undefined || this.#broken) return;
    this.#changes.push(scenarioStarted(key, runId));
    this.#schedule();
  }

  /** A scenario has its final status: its result and recordings go with the next delivery. */
  finished(end: ScenarioEnd, recordings: readonly RecordingSource[]): void {
    if (this.#keys[end.state.instance.id] === undefined || this.#broken) return;
    if (end.state.status === "skipped") return;
    this.#queueFinished(end, recordings);
    this.#schedule();
  }

  #queueFinished(end: ScenarioEnd, recordings: readonly RecordingSource[]): void {
    const key = this.#keys[end.state.instance.id];
    const { handle, suite } = this.#options;
    const outcome = scenarioOutcomeOf(end, { name: suite.name, suiteRunId: handle.id });
    this.#changes.push(scenarioFinished(key, {
      runId: end.state.runIds[0] ?? null,
      outcome: { ...outcome, scenario: key },
      recordings,
    }));
  }

  /** Writes the queued changes to the entry (waiting for no delivery: this loop runs them). */
  async #writeChanges(): Promise<void> {
    if (this.#changes.length === 0 || this.#broken) return;
    const changes = this.#changes.splice(0);
    try {
      await updateReport(this.#options.root, this.#outboxId, (entry) => {
        for (const change of changes) change(entry);
      });
    } catch (error) {
      this.#broken ??= `the report in outbox/${this.#outboxId}.json could not be changed: ${
        describeError(error)
      }`;
    }
  }

  /**
   * A delivery soon, in the background: one at a time, and one more after the one running when
   * asked meanwhile, each after writing the changes queued so far.
   */
  #schedule(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#writeChanges();
        await this.#deliverNow();
      } while ((this.#again || this.#changes.length > 0) && !this.#broken);
      this.#running = null;
    })();
  }

  async #deliverNow(): Promise<void> {
    // Every scenario is on the platform and the report is out of the outbox: a delivery now
    // would find nothing and say only "sent" — losing where it went (its url) — so none is made.
    if (this.#broken || this.#last?.state === "reported") return;
    try {
      this.#last = await deliverEntry(this.#options.root, this.#outboxId, this.#client, {
        retry: this.#options.retry,
      });
      const test = this.#last.runTestId;
      if (test !== null && !this.#toldTest) {
        this.#toldTest = true;
        this.#options.onTest?.(test);
      }
    } catch (error) {
      // Not the platform's doing (a sandbox that may not reach it): stop trying, say so.
      this.#broken = isSandboxRefusal(error)
        ? `the sandbox may not reach ${new URL(this.#options.target.url).host} (build with ` +
          "HARNESS_PLATFORM_URL set, or add the host to REINS_ALLOW_NET)"
        : describeError(error);
    }
  }

  /** Waits for the deliveries, sends what is left once more, and says where it all went. */
  async close(): Promise<ReportSummary> {
    while (this.#running) await this.#running;
    await this.#writeChanges();
    if (!this.#broken && this.#last?.state !== "reported") await this.#deliverNow();
    this.#client.close();
    const outcome = this.#last;
    const where = `outbox/${this.#outboxId}.json`;
    if (this.#broken) {
      return {
        outcome,
        lines: [`not reported to the platform: ${this.#broken}; kept in ${where}`],
      };
    }
    if (outcome === null) return { outcome, lines: [] };
    const lines: string[] = [];
    switch (outcome.state) {
      case "reported":
        lines.push(`reported to the platform: ${outcome.url}`);
        break;
      case "open":
        lines.push(
          `reported so far to the platform: ${outcome.url} (${outcome.reason}); ` +
            "the rest is sent when the suite run is resumed",
        );
        break;
      case "pending":
      case "busy":
        lines.push(
          `the suite run finished, but reporting it to the platform did not: ${outcome.reason}`,
          `kept in ${where}: reins report --pending sends it (the exit code does not count it)`,
        );
        break;
      case "refused":
        lines.push(`the platform refused the suite's report: ${outcome.reason}`);
        if (outcome.hint) lines.push(`hint: ${outcome.hint}`);
        lines.push(`kept in ${where} and not retried (the exit code does not count it)`);
        break;
      case "unreadable":
        lines.push(`not reported to the platform: ${outcome.reason}`);
        break;
    }
    for (const problem of outcome.problems) lines.push(`partly reported: ${problem}`);
    return { outcome, lines };
  }
}

/**
 * `suite plan`: provisions, starts and allocates the calls of every planned scenario once, and
 * returns the ids for the plan file. The test is remembered, so later runs of the suite join it.
 * Throws the platform's error when it could not be done (the plan is then not written).
 */
export async function allocatePlan(
  options: {
    root: DataRoot;
    settings: Settings;
    target: PlatformTarget;
    suite: Suite;
    instances: readonly Instance[];
    retry?: RetryPolicy;
    /** The test's name on the platform; default: the suite's. */
    name?: string;
    /** The run test to add the execution to (a matrix's later epochs: the first one's test). */
    joinTest?: string;
  },
): Promise<{ platform: PlanPlatform; callExecutionIds: string[] }> {
  const specs = new Map(options.suite.scenarios.map((spec) => [spec.index, spec]));
  const entry = createReport(options.root, {
    name: options.name ?? options.suite.name,
    target: options.target,
    live: true,
    modality: options.suite.modality,
    ...(options.joinTest ? { joinTest: options.joinTest } : {}),
    scenarios: options.instances.map((instance) => ({
      runId: null,
      scenario: scenarioInputOf(specs.get(instance.index)!),
      outcome: null,
      recordings: [],
    })),
  });
  using client = new PlatformClient(options.target, { proxy: options.settings.proxy });
  try {
    const outcome = await deliverEntry(options.root, entry.id, client, { retry: options.retry });
    const read = readEntry(options.root, entry.id);
    const allocated = read?.ok ? read.entry : null;
    if (
      allocated === null || !allocated.allocated || allocated.runTestId === null ||
      allocated.testExecutionId === null ||
      allocated.calls.some((call) => call.callExecutionId === null)
    ) {
      throw new PlanNotAllocated(outcome.reason ?? "the platform allocated no calls", outcome.hint);
    }
    const url = outcome.url!;
    rememberReport(options.root, {
      test: {
        base_url: allocated.baseUrl,
        modality: allocated.provision.modality,
        name: allocated.name,
        run_test_id: allocated.runTestId,
        scenario_keys: allocated.calls.map((call) => call.scenarioKey),
        test_execution_id: allocated.testExecutionId,
        url,
      },
      runs: {},
    });
    return {
      platform: {
        baseUrl: allocated.baseUrl,
        workspaceId: allocated.workspaceId,
        name: allocated.name,
        runTestId: allocated.runTestId,
        testExecutionId: allocated.testExecutionId,
        url,
      },
      callExecutionIds: allocated.calls.map((call) => call.callExecutionId!),
    };
  } finally {
    // The shards report into the calls; this process never will.
    removeEntry(options.root, entry.id);
  }
}

/** The platform did not provision, start and allocate a plan's calls. */
export class PlanNotAllocated extends Error {
  constructor(message: string, readonly hint: string | null) {
    super(message);
    this.name = "PlanNotAllocated";
  }
}
