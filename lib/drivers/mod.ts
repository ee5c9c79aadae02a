// The door of lib/drivers/: one driver per agent harness (claude, codex, gemini, opencode, a
// command) behind one interface (driver.ts), the registry that makes one, and the harness process
// helpers. The built-in loop has its own door (./loop/mod.ts), loaded lazily (importLazily
// "drivers/loop/mod.ts"). Types come through here, values from the module listed for them
// (docs/architecture.md, "Doors").
export { COMMAND_STDIN, driverNameOf } from "./driver.ts";
export type {
  AgentSpec,
  ApprovalPolicy,
  Budget,
  CommandStdin,
  Decision,
  Decisions,
  Driver,
  DriverInput,
  DriverResult,
  EventSink,
  GatewayRoute,
  ModelRoutePlan,
} from "./driver.ts";
export { describeExit, HarnessProcess, HarnessStartError, stderrSummary } from "./process.ts";
export { createDriver } from "./registry.ts";
