// A matrix suite run reported to the platform so that it compares like with like: each agent is
// a test of its own, named `AGENT · SUITE` (the seed's kit takes the agent's name from before the
// " · "), with the suite's scenarios as its personas; each epoch is an execution of that test, its
// calls the scenarios' plain keys (so every epoch's scenario_selectors are the same). One live
// report (lib/suite/report.ts) per agent and epoch. An agent's first epoch provisions its test; the
// later epochs are begun once the platform has given it (what they are told meanwhile waits here),
// so that K epochs make one test with K executions, not K tests. A shard of a plan provisions and
// starts nothing: `suite plan` allocated every agent's test and every epoch's execution once
// (allocateMatrixPlan), and each shard reports its cells into their calls. It does not change a
// scenario's status or the exit code, as no report does.
import type { RecordingSource, ReportOutcome } from "../platform/mod.ts";
import { agentSuiteName } from "./junit.ts";
import type { PlanExecution, PlanFile } from "./plan.ts";
import { allocatePlan, type ReporterOptions, type ReportSummary, SuiteReporter } from "./report.ts";
import type { ScenarioEnd } from "./runner.ts";
import type { Instance, ScenarioState } from "./state.ts";

/** One agent's epoch: the rows it reports, and its reporter once begun. */
interface Group {
  agent: string;
  epoch: number;
  instances: Instance[];
  reporter: SuiteReporter | null;
  /** Begun: a reporter, or nothing left to report. */
  begun: boolean;
  /** What happened before it was begun, replayed in order once it is. */
  waiting: ((reporter: SuiteReporter) => void)[];
}

/** What a matrix's report came to, per agent and epoch. */
export interface MatrixReportSummary extends ReportSummary {
  reports: { agent: string; epoch: number; outboxId: string; outcome: ReportOutcome | null }[];
}

export class MatrixReporter {
  readonly #options: ReporterOptions;
  readonly #groups = new Map<string, Group>();
  readonly #byInstance = new Map<string, Group>();

  readonly #plan: PlanFile | null;
  /** A shard's plan of a matrix: each agent and epoch reports into the execution it allocated. */
  readonly #executions: Map<string, PlanExecution> | null;

  private constructor(options: ReporterOptions, plan: PlanFile | null) {
    this.#options = options;
    // A plan without executions allocated none: its shards report nothing (never a test of
    // their own).
    this.#executions = plan
      ? new Map((plan.executions ?? []).map((one) => [groupId(one.agent, one.epoch), one]))
      : null;
    this.#plan = plan;
  }

  /** The outbox id of the first report begun (the JSON output names every one). */
  get outboxId(): string {
    for (const group of this.#groups.values()) if (group.reporter) return group.reporter.outboxId;
    return "";
  }

  /**
   * Begins every agent's first epoch (and an epoch a resumed suite run kept a report of); a shard
   * of a plan (`plan`, with its executions) begins every epoch at once, into the plan's calls.
   */
  static begin(options: ReporterOptions, plan: PlanFile | null = null): MatrixReporter {
    const matrix = new MatrixReporter(options, plan);
    for (const instance of options.instances) {
      const id = groupId(instance.agent ?? "", instance.repeat);
      let group = matrix.#groups.get(id);
      if (group === undefined) {
        group = {
          agent: instance.agent ?? "",
          epoch: instance.repeat,
          instances: [],
          reporter: null,
          begun: false,
          waiting: [],
        };
        matrix.#groups.set(id, group);
      }
      group.instances.push(instance);
      matrix.#byInstance.set(instance.id, group);
    }
    const kept = options.handle.header.reports;
    for (const [id, group] of matrix.#groups) {
      const now = group.epoch === 1 || kept[id] !== undefined || matrix.#executions !== null;
      if (now) matrix.#start(group, undefined);
    }
    return matrix;
  }

  #start(group: Group, joinTest: string | undefined): void {
    if (group.begun) return;
    group.begun = true;
    const { handle, suite } = this.#options;
    const id = groupId(group.agent, group.epoch);
    // A shard resumed (its plan not given again) goes on with the reports it began, into its
    // plan's calls; one it never began would provision a test of its own, so it is not begun.
    if (this.#plan === null && handle.header.options.shard !== null) {
      if (handle.header.reports[id] === undefined) return;
    }
    let plan: ReporterOptions["plan"];
    if (this.#executions !== null && this.#plan !== null) {
      const platform = this.#executions.get(id);
      // The plan's checks (planProblems) leave no reported cell without its execution.
      if (platform === undefined) return;
      plan = { file: this.#plan, platform };
    }
    group.reporter = SuiteReporter.begin({
      ...this.#options,
      plan,
      instances: group.instances,
      name: agentSuiteName(suite.name, group.agent),
      slot: {
        get: () => handle.header.reports[id] ?? null,
        set: (ref) => {
          handle.header.reports[id] = ref;
        },
      },
      ...(joinTest ? { joinTest } : {}),
      onTest: group.epoch === 1 && plan === undefined
        ? (test) => this.#testKnown(group.agent, test)
        : undefined,
    });
    const reporter = group.reporter;
    if (reporter === null) return;
    for (const replay of group.waiting.splice(0)) replay(reporter);
  }

  /** An agent's test is on the platform: its later epochs begin, as executions of it. */
  #testKnown(agent: string, runTestId: string): void {
    for (const group of this.#groups.values()) {
      if (group.agent === agent && !group.begun) this.#start(group, runTestId);
    }
  }

  #to(state: ScenarioState, action: (reporter: SuiteReporter) => void): void {
    const group = this.#byInstance.get(state.instance.id);
    if (group === undefined) return;
    if (group.reporter) action(group.reporter);
    else if (!group.begun) group.waiting.push(action);
  }

  started(state: ScenarioState, runId: string): void {
    this.#to(state, (reporter) => reporter.started(state, runId));
  }

  finished(end: ScenarioEnd, recordings: readonly RecordingSource[]): void {
    this.#to(end.state, (reporter) => reporter.finished(end, recordings));
  }

  /**
   * Waits for every report's deliveries and says where each went. An epoch whose agent's test
   * never reached the platform is begun now, in the outbox with the rest (reins report --pending
   * sends it; it joins the test if the first epoch's was remembered by then).
   */
  async close(): Promise<MatrixReportSummary> {
    const lines: string[] = [];
    const reports: MatrixReportSummary["reports"] = [];
    let first: ReportOutcome | null = null;
    // Epoch by epoch: a first epoch's close may tell its test to the next ones.
    const groups = [...this.#groups.values()].sort((a, b) => a.epoch - b.epoch);
    for (const group of groups) {
      this.#start(group, undefined);
      if (group.reporter === null) continue;
      const summary = await group.reporter.close();
      first ??= summary.outcome;
      reports.push({
        agent: group.agent,
        epoch: group.epoch,
        outboxId: group.reporter.outboxId,
        outcome: summary.outcome,
      });
      for (const line of summary.lines) lines.push(`${group.agent}, epoch ${group.epoch}: ${line}`);
    }
    return { outcome: first, lines, reports };
  }
}

/**
 * `suite plan` of a matrix: each agent's test provisioned once and an execution started, with its
 * calls allocated, for each of its epochs — what an unsharded run of the matrix reports, made once
 * for all the shards. The first epoch provisions (or joins the test remembered under its name);
 * the later ones join that test. Returns the executions in the order made and each cell's call.
 * Throws PlanNotAllocated as allocatePlan does (what was made before stays on the platform, empty).
 */
export async function allocateMatrixPlan(
  options: Omit<Parameters<typeof allocatePlan>[0], "name" | "joinTest">,
): Promise<{ executions: PlanExecution[]; calls: Map<string, string> }> {
  const byAgent = new Map<string, Map<number, typeof options.instances[number][]>>();
  for (const instance of options.instances) {
    const agent = instance.agent ?? "";
    const epochs = byAgent.get(agent) ?? new Map();
    byAgent.set(agent, epochs);
    epochs.set(instance.repeat, [...(epochs.get(instance.repeat) ?? []), instance]);
  }
  const executions: PlanExecution[] = [];
  const calls = new Map<string, string>();
  for (const [agent, epochs] of byAgent) {
    let test: string | undefined;
    for (const epoch of [...epochs.keys()].sort((a, b) => a - b)) {
      const instances = epochs.get(epoch)!;
      const { platform, callExecutionIds } = await allocatePlan({
        ...options,
        instances,
        name: agentSuiteName(options.suite.name, agent),
        ...(test ? { joinTest: test } : {}),
      });
      test = platform.runTestId;
      executions.push({ ...platform, agent, epoch });
      instances.forEach((instance, i) => calls.set(instance.id, callExecutionIds[i]));
    }
  }
  return { executions, calls };
}

function groupId(agent: string, epoch: number): string {
  return `${agent}.${epoch}`;
}
