// The door of lib/core/, the floor every room stands on: errors and exit codes, paths, ids,
// clocks, the environment and redaction, config, the data root's layout, trust checks, private
// directories, atomic writes and locked logs, the sandbox's facts, process groups, budgets and
// the lazy importer. core imports no other room. What the other rooms may use is listed here:
// types come through this door, values from the module it lists them from, so that `reins
// --version` loads only the few it needs (docs/architecture.md, "Doors").
export { assertNever } from "./assert_never.ts";
export { releaseLocks } from "./flock.ts";
export {
  createPrivateFileAsync,
  openNewPrivateFile,
  removeAbandonedTemps,
  removeStaleTemps,
  syncDirectory,
  syncDirectoryAsync,
  writeNewPrivateFile,
  writePrivateFileAtomic,
  writePrivateFileAtomicAsync,
} from "./atomic_write.ts";
export { auditDataRoot, repairDataRoot } from "./audit.ts";
export type { Finding, Repair } from "./audit.ts";
export { BUDGET_EXHAUSTED, BudgetLedger, exhaustionReason } from "./budget.ts";
export type { BudgetScope, BudgetWarning, Exhaustion, Limits, Spent } from "./budget.ts";
export { Countdown, nowIso, onceAfter, sleep } from "./clock.ts";
export { splitCommandLine } from "./command_line.ts";
export { configTrustProblem, DRIVER_NAMES, HARNESS_DRIVERS, harnessProgram } from "./config.ts";
export type { DriverName, HarnessDriver, Settings } from "./config.ts";
export { readEnv, resolveHome, withholdFromAgents } from "./env.ts";
export type { Env } from "./env.ts";
export {
  ContextBusyError,
  DataRootError,
  describeError,
  diskFullError,
  ExitCode,
  isDiskFull,
  NotFoundError,
  PlatformError,
  ReinsError,
  RunSettledError,
  UsageError,
} from "./errors.ts";
export type { ReinsErrorOptions } from "./errors.ts";
export { headerSecrets } from "./header_secrets.ts";
export { deviceNameOf, idTimeMs, isSafeName, newId, safeName } from "./ids.ts";
export {
  CREATING_SUFFIX,
  DIRTY_FILE,
  EVENTS_FILE,
  HARNESS_SESSION_FILE,
  INDEX_FILE,
  Layout,
  OWNER_LOCK_FILE,
  RECORD_FILE,
  shownPath,
} from "./layout.ts";
export { importLazily } from "./lazy_import.ts";
export { basenameOf, dirnameOf, isInside, joinPath, resolvePath } from "./paths.ts";
export { ensurePrivateDir, madePrivate } from "./private_dir.ts";
export { OpenLogs, PrivateLog } from "./private_log.ts";
export type { LockedTail } from "./private_log.ts";
export {
  agentStart,
  processGroups,
  signalGroup,
  spawnGroupLeader,
  stopAgentGroup,
  TRAMPOLINE,
} from "./process_group.ts";
export type { AgentProcess, GroupMember, GroupStop } from "./process_group.ts";
export {
  knownSecrets,
  redact,
  redactJsonText,
  redactValue,
  rememberSecrets,
  secretsInEnv,
} from "./redact.ts";
export {
  builtSandboxOrigin,
  createLink,
  isSandboxRefusal,
  launcherCacheRefusal,
  parseSandboxOrigin,
  refusedNeed,
  SandboxRefusal,
  sandboxRefusal,
  setSandboxOrigin,
} from "./sandbox.ts";
export type { SandboxNeed } from "./sandbox.ts";
export { sandboxInForce, sandboxLines } from "./sandbox_in_force.ts";
export { sha256Hex } from "./sha256.ts";
export { loadSqlite, sqlite } from "./sqlite.ts";
export { nearest } from "./suggest.ts";
export {
  CheckedDirs,
  distrustOf,
  readPrivateText,
  trustProblem,
  UntrustedFileError,
} from "./trust.ts";
export { VERSION } from "./version.ts";
