// Waiting for `reins approve` / `reins answer` — or for a server or a replay that appends the
// answer in this very process: the run's own events.jsonl is the channel, read through the store's
// one incremental reader (EventTail), so an answer is a validated event wherever it came from.
// While a driver waits, the run is `waiting`. One tail serves the whole turn: an answer appended
// before the driver asks for it is found all the same.
import type { Decision, Decisions } from "../drivers/mod.ts";
import type { EventInput, RunEvent, Store } from "../store/mod.ts";

const POLL_MS = 100;

/** Decisions answered through the run's log, recording `waiting` while they wait. */
export function logDecisions(
  store: Store,
  runId: string,
  record: (event: EventInput) => RunEvent,
  options: { pollMs?: number } = {},
): Decisions {
  const pollMs = options.pollMs ?? POLL_MS;
  const tail = store.tail(runId);
  const approvals = new Map<string, Decision>();
  const answers = new Map<string, string>();
  const catchUp = () => {
    tail.readEach((batch) => {
      for (const event of batch.events) {
        if (event.ignored !== undefined) continue;
        if (event.type === "approval.resolved") {
          const { approvalId, decision, by, reason } = event.payload;
          if (!approvals.has(approvalId)) {
            approvals.set(approvalId, { decision, by, reason: reason ?? null });
          }
        } else if (event.type === "question.answered") {
          const { questionId, answer } = event.payload;
          if (!answers.has(questionId)) answers.set(questionId, answer);
        }
      }
    });
  };
  const waitFor = async <T>(
    what: string,
    found: () => T | undefined,
    signal: AbortSignal,
  ): Promise<T> => {
    // Recorded even when the answer is already there, so that a run's events do not depend on
    // how quickly it was answered.
    record({ type: "status.changed", payload: { status: "waiting", reason: what } });
    while (true) {
      signal.throwIfAborted();
      catchUp();
      const answer = found();
      if (answer !== undefined) {
        record({ type: "status.changed", payload: { status: "running", reason: null } });
        return answer;
      }
      await abortableDelay(pollMs, signal);
    }
  };
  return {
    waitForApproval(approvalId, signal) {
      return waitFor(
        `waiting for approval ${approvalId}: reins approve ${runId} ${approvalId} [--deny]`,
        () => approvals.get(approvalId),
        signal,
      );
    },
    waitForAnswer(questionId, signal) {
      return waitFor(
        `waiting for an answer to ${questionId}: reins answer ${runId} ${questionId} TEXT`,
        () => answers.get(questionId),
        signal,
      );
    },
  };
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
