// A suite run as the JSON output shows it (`reins suite run|show|merge --json`): the header's
// facts, the totals and one object per scenario with its checkpoints met of all.
import { aggregate, cellsOf } from "./aggregate.ts";
import { tally } from "./results.ts";
import type { ScenarioState, SuiteRunFile, SuiteRunState } from "./state.ts";
import { byAgent, totalsOf } from "./table.ts";

/** One scenario as the JSON output shows it. */
export function scenarioJson(state: ScenarioState) {
  const { met, of } = tally(state.checks);
  return {
    instance: state.instance.id,
    key: state.instance.key,
    /** The agent of `agents:` (null: a suite without agents) and the epoch, from 1. */
    agent: state.instance.agent,
    epoch: state.instance.repeat,
    /** The epoch's older name, kept for readers of --repeat's output. */
    repeat: state.instance.repeat,
    name: state.name,
    status: state.status,
    reason: state.reason,
    met,
    of,
    turns: state.turns,
    costUsd: state.costUsd,
    tokens: state.tokens ?? null,
    durationMs: state.durationMs,
    runIds: state.runIds,
    attempts: state.attempts.length,
    checks: state.checks,
    ended: state.ended,
  };
}

/** `state`: the suite run's as it is now (currentState), when it differs from its header's. */
export function suiteRunJson(
  header: SuiteRunFile,
  states: readonly ScenarioState[],
  state: SuiteRunState = header.state,
) {
  const over = aggregate(cellsOf(states));
  return {
    suiteRunId: header.id,
    suite: header.suite,
    file: header.file,
    digest: header.digest,
    state,
    createdAt: header.createdAt,
    finishedAt: header.finishedAt,
    options: header.options,
    totals: totalsOf(states),
    /** A matrix's totals per agent, in the suite run's order; null without agents. */
    agents: byAgent(states)?.map(({ agent, states }) => ({ agent, totals: totalsOf(states) })) ??
      null,
    scenarios: states.map(scenarioJson),
    // Only over more than one epoch, as the table shows it (docs/suites.md, "Aggregation").
    ...(over.epochs > 1 ? { aggregate: over } : {}),
  };
}
