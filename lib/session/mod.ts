// The door of lib/session/: reading a recorded run back — formatting and following its events
// (reins show), its stats, its replay (replay.ts: zod and node:crypto, which show and stats do not
// load: a value import names the module listed here, docs/architecture.md, "Doors").
export { followRun, PendingTracker } from "./follow.ts";
export {
  EventFormatter,
  formatFooter,
  formatHeader,
  formatPending,
  joinOneLine,
} from "./format.ts";
export type { ShowMode } from "./format.ts";
export {
  compareReplay,
  recordingLoader,
  replayDirectory,
  replayPlan,
  terminalOutcome,
} from "./replay.ts";
export type { Divergence, ReplayVerdict } from "./replay.ts";
export { formatStatsTable, runStats, RunTally, sumStats, unpricedNote } from "./stats.ts";
export type { RunStats, StatsRow, StatsTotal } from "./stats.ts";
export { previewValue, quoted } from "./text.ts";
