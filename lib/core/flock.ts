// Letting go of flocks. An flock belongs to the open file and lives as long as any copy of its
// descriptor: a child being spawned by another thread of this process holds a copy of every
// descriptor until it execs, so closing alone could leave the lock held meanwhile. Each file is
// therefore unlocked, then closed.

/** Unlocks, then closes, each file (one not locked, or already unlocked, is closed all the same). */
export function releaseLocks(files: readonly Deno.FsFile[]): void {
  for (const file of files) {
    try {
      file.unlockSync();
    } catch { /* not held, or closing releases it */ }
    file.close();
  }
}
