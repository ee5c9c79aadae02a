// The agents a run started and its dead owner left running: read from runs/<id>/owner.lock (a link
// to its process's owner file, lib/store/owner.ts), the lines after the owner's pid that name the
// run (written by the turn as each started; an older reins wrote them, naming no run, to the run's
// own owner.lock or to runs/<id>/agents.jsonl, which are read too) and stopped, group by group,
// when they are verifiably the same processes (lib/core/process_group.ts). Run by reconcileRun
// (reconcile.ts) whenever it settles a run whose owner is gone as interrupted — whoever asked it:
// reins show --follow, the cheap reconciliation every command does, reins recover. It never
// touches a process it cannot verify.
import { assertNever } from "../core/assert_never.ts";
import { describeError } from "../core/errors.ts";
import {
  type AgentProcess,
  type GroupMember,
  type GroupStop,
  processGroups,
  stopAgentGroup,
} from "../core/process_group.ts";
import type { DataRoot } from "./data_root.ts";

export interface LeftAgent {
  runId: string;
  agent: AgentProcess;
  outcome: GroupStop;
}

/** The agent processes recorded with a run (bad lines skipped); empty when there are none. */
export function recordedAgents(root: DataRoot, runId: string): AgentProcess[] {
  const agents: AgentProcess[] = [];
  // The owner lock's first line is the owner's pid, which is no agent (a number, not an object).
  // It is a link to the owner file its process's runs share, whose lines name their run; a run
  // an older reins made had one of its own, whose lines name none (all are the run's).
  for (const path of [root.layout.ownerLock(runId), root.layout.agents(runId)]) {
    const text = root.readText(path);
    if (text === null) continue;
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      try {
        const value = JSON.parse(line);
        if (value?.run !== undefined && value.run !== runId) continue;
        if (
          Number.isSafeInteger(value?.pid) && Number.isSafeInteger(value?.pgid) &&
          value.pgid > 1 && Number.isFinite(value?.startedMs)
        ) {
          agents.push({
            pid: value.pid,
            pgid: value.pgid,
            startedMs: value.startedMs,
            program: String(value.program ?? "?"),
          });
        }
      } catch { /* a torn or foreign line: nothing to stop */ }
    }
  }
  return agents;
}

/**
 * One look at every process group (one `ps`), taken when first asked and shared by the runs of
 * one recovery: a run whose groups are not in it has nothing left to stop.
 */
export class GroupCensus {
  #groups: Promise<Map<number, GroupMember[]> | null> | null = null;

  groups(): Promise<Map<number, GroupMember[]> | null> {
    this.#groups ??= processGroups();
    return this.#groups;
  }
}

/** Stops what each run's agents left running; one outcome per recorded process group. */
export async function stopLeftAgents(
  root: DataRoot,
  runIds: readonly string[],
  options: { graceMs?: number; census?: GroupCensus } = {},
): Promise<LeftAgent[]> {
  const out: LeftAgent[] = [];
  for (const runId of runIds) {
    let agents: AgentProcess[];
    try {
      agents = recordedAgents(root, runId);
    } catch (error) {
      // Someone else could have written it (or it is a planted link): it names no one to stop.
      root.warn(`the agents of run ${runId} were not looked for: ${describeError(error)}`);
      continue;
    }
    if (agents.length === 0) continue;
    const groups = await options.census?.groups();
    const seen = new Set<number>();
    for (const agent of agents) {
      if (seen.has(agent.pgid)) continue;
      seen.add(agent.pgid);
      out.push({
        runId,
        agent,
        outcome: await stopAgentGroup(agent, { graceMs: options.graceMs, groups }),
      });
    }
  }
  return out;
}

/** One line for people about a left agent, or null when there was nothing left of it. */
export function describeLeftAgent(left: LeftAgent): string | null {
  const { runId, agent, outcome } = left;
  const what = `${agent.program} (process group ${agent.pgid}) of run ${runId}`;
  switch (outcome.state) {
    case "gone":
      return null;
    case "stopped":
      return `stopped ${what}, left running when its reins died: process(es) ${
        outcome.pids.join(", ")
      }`;
    case "not-ours":
      return `left ${what} alone: ${outcome.why}`;
    case "unknown":
      return `could not stop ${what}: ${outcome.why}; if it still runs: kill -- -${agent.pgid}`;
    default:
      return assertNever(outcome, "group stop");
  }
}
