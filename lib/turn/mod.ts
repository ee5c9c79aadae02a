// The turn engine: one turn of an agent as a library call, for every front end (the command
// line, suites, the A2A server). A request and two signals owned by the caller go in; a settled,
// recorded run comes out. Many turns may run at once in one process, on different contexts (turns
// on one context take their turn); nothing here installs a signal handler, prints or exits.
//
// Names against the team plan's contract: as there. `settle()` (settle.ts) is the pure function
// from a driver's result or error, the timeout and the stop to the terminal event; `summarize()`
// builds the RunSummary from it. Beyond the plan: `TurnHooks.onSettled(summary)`, called once the
// run is closed and its context free, and `prepareAgent()` for a front end that wants the driver
// (and the loop's model check) before it commits to a turn.
export { runTurn } from "./run_turn.ts";
export { settle, type SettleFacts, type Settlement, stopReasonOf, summarize } from "./settle.ts";
export { prepareAgent, type PreparedAgent } from "./agent.ts";
export { ContextLock } from "./context_lock.ts";
export { logDecisions } from "./decisions.ts";
export type {
  AgentSpec,
  RunSummary,
  TurnHooks,
  TurnOutcome,
  TurnRequest,
  TurnSignals,
} from "./types.ts";

// What the other rooms use besides:
export { spentIn } from "./gateway_use.ts";
export { isHarnessRun, replayChain } from "./harness_replay.ts";
export type { HarnessDivergence, HarnessVerdict } from "./harness_replay.ts";
