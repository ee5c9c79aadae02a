// The door of lib/snapshot/: the workspace snapshots a run takes and restores (docs/snapshots.md).
// manifest.ts (zod) and restore.ts (node:crypto) are heavy: a run's start-up (snapshotAtRunStart)
// does not load them, as a value import names the module listed here (docs/architecture.md, "Doors").
export { describeSize, glanceSnapshot, snapshotLine } from "./glance.ts";
export { readManifest } from "./manifest.ts";
export { PERMISSION_BITS, restoreSnapshot, SnapshotDamagedError } from "./restore.ts";
export { snapshotAtRunStart } from "./run_start.ts";
export { nameExists } from "./walk.ts";
