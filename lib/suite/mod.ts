// The door of lib/suite/: suites of scenarios (docs/suites.md) — loading, planning and sharding,
// running, their state, tables, JUnit and JSON, reporting. Heavy to load (yaml, zod): only
// reins suite uses it, and its sub-commands load lazily. Types come through here, values from the
// module listed for them (docs/architecture.md, "Doors").
export { aggregate, aggregateLines, cellsOf } from "./aggregate.ts";
export type { Aggregate, Cell } from "./aggregate.ts";
export { compareCells, compareExitCode } from "./compare.ts";
export type { Comparison, FailOn } from "./compare.ts";
export { compareLines, compareMarkdown } from "./compare_text.ts";
export { endStateId } from "./end_state.ts";
export { scenarioJson, suiteRunJson } from "./json.ts";
export { readCells } from "./read_cells.ts";
export { regradeSuiteRun } from "./regrade.ts";
export { agentSuiteName, writeJunitFile } from "./junit.ts";
export { cellSpec, loadSuite, SuiteFileError } from "./load.ts";
export type { Suite } from "./load.ts";
export { suiteNeeds } from "./needs.ts";
export {
  assignShards,
  mergeShards,
  parseShard,
  readPlan,
  shardFromEnv,
  writePlan,
} from "./plan.ts";
export type { PlanFile, PlanPlatform, ShardRun } from "./plan.ts";
export type { MatrixReporter, MatrixReportSummary } from "./matrix_report.ts";
export type { ReportSummary, SuiteReporter } from "./report.ts";
export { tally } from "./results.ts";
export { runSuite } from "./runner.ts";
export { openShellConfinement } from "./shell.ts";
export { instanceIdOf, instancesOf, selectedAgents, startSuiteRun } from "./start.ts";
export type { StartMode } from "./start.ts";
export {
  currentState,
  elapsedOf,
  listSuiteRunIds,
  readScenarioStates,
  readSuiteRun,
  readSuiteRunAt,
  resolveSuiteRunId,
} from "./state.ts";
export type {
  Instance,
  ScenarioState,
  SuiteRunFile,
  SuiteRunHandle,
  SuiteRunState,
} from "./state.ts";
export {
  byAgent,
  exitCodeOf,
  followUps,
  formatCost,
  formatDuration,
  formatTable,
  summaryLine,
  totalsOf,
} from "./table.ts";
export { engineTurns, recordedScenario } from "./turns.ts";
