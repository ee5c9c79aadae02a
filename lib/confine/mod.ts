// The confine room's door: running agents under bubblewrap (docs/confinement.md). Not reins's
// own sandbox (lib/core/sandbox.ts: what reins itself may touch): this is what its agents may.
export type { AllowedHost } from "./allow_host.ts";
export { isAllowed, parseAllowedHost } from "./allow_host.ts";
export type { ConnectionReport } from "./network.ts";
export type { AgentCommand, ConfinedCommand, ConfineFacts } from "./profile.ts";
export { confinedCommand } from "./profile.ts";
export type { ConfineProblem } from "./probe.ts";
export { confinementProblem, requireConfinement } from "./probe.ts";
export type {
  Confinement,
  ConfinementSetup,
  ConfineRequest,
  OpenConfinement,
} from "./confinement.ts";
export { keepSandboxesReady, openConfinement } from "./confinement.ts";
export { keepsHarnessState, SECRET_STORES } from "./stores.ts";
export { ReadySandboxes } from "./ready.ts";
