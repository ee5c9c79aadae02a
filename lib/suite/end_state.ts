// The name of the snapshot a suite scenario's working directory is kept under once its
// conversation has ended (before its checks run): `<last run id>.end` in snapshots/manifests/,
// beside the run's own start snapshot. `reins suite regrade` restores it to check anew.

/** The snapshot id of the end state of a scenario whose last turn was `lastRunId`. */
export function endStateId(lastRunId: string): string {
  return `${lastRunId}.end`;
}
