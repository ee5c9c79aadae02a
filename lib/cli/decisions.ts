// Waiting for `reins approve` / `reins answer` from another process: the run's own events.jsonl
// is the channel. While it waits the run is `waiting`; the new lines are read incrementally, so a
// long wait costs a small read every poll, not a re-read of the log.
import type { Decision, Decisions } from "../drivers/driver.ts";
import type { EventInput, RunEvent } from "../store/contracts.ts";
import { joinPath } from "../core/paths.ts";

const POLL_MS = 150;

/** Calls `found` on each complete new line of `path` until it returns a value. */
async function followLines<T>(
  path: string,
  found: (value: Record<string, unknown>) => T | undefined,
  signal: AbortSignal,
): Promise<T> {
  let offset = 0;
  let pending = "";
  const decoder = new TextDecoder();
  while (true) {
    signal.throwIfAborted();
    const file = await Deno.open(path, { read: true });
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      const buffer = new Uint8Array(64 * 1024);
      let n: number | null;
      while ((n = await file.read(buffer)) !== null && n > 0) {
        offset += n;
        pending += decoder.decode(buffer.subarray(0, n), { stream: true });
        let at: number;
        while ((at = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, at);
          pending = pending.slice(at + 1);
          try {
            const value = JSON.parse(line);
            const hit = value && typeof value === "object" ? found(value) : undefined;
            if (hit !== undefined) return hit;
          } catch { /* a torn or foreign line: show reports it, we skip it */ }
        }
      }
    } finally {
      file.close();
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, POLL_MS);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** Decisions answered through the run's log, recording `waiting` while they wait. */
export function logDecisions(
  home: string,
  runId: string,
  record: (event: EventInput) => RunEvent,
): Decisions {
  const path = joinPath(home, "runs", runId, "events.jsonl");
  const waitFor = async <T>(
    what: string,
    match: (value: Record<string, unknown>) => T | undefined,
    signal: AbortSignal,
  ): Promise<T> => {
    record({ type: "status.changed", payload: { status: "waiting", reason: what } });
    const answer = await followLines(path, match, signal);
    record({ type: "status.changed", payload: { status: "running", reason: null } });
    return answer;
  };
  return {
    waitForApproval(approvalId, signal) {
      return waitFor<Decision>(
        `waiting for approval ${approvalId}: reins approve ${runId} ${approvalId} [--deny]`,
        (value) => {
          const payload = value.payload as Record<string, unknown> | undefined;
          if (value.type !== "approval.resolved" || payload?.approvalId !== approvalId) {
            return undefined;
          }
          return {
            decision: payload.decision === "allow" ? "allow" : "deny",
            by: typeof payload.by === "string" ? payload.by : "unknown",
            reason: typeof payload.reason === "string" ? payload.reason : null,
          };
        },
        signal,
      );
    },
    waitForAnswer(questionId, signal) {
      return waitFor<string>(
        `waiting for an answer to ${questionId}: reins answer ${runId} ${questionId} TEXT`,
        (value) => {
          const payload = value.payload as Record<string, unknown> | undefined;
          if (value.type !== "question.answered" || payload?.questionId !== questionId) {
            return undefined;
          }
          return String(payload.answer ?? "");
        },
        signal,
      );
    },
  };
}
