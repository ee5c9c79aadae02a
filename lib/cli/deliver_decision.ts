// What `reins approve` and `reins answer` share: find the run, check that what they bring is still
// wanted — asked, not answered yet, the run not settled — and append it to the run's log, where
// the waiting driver reads it. Too late (the run has settled, or settles while this appends) is
// RunSettledError, exit 8: the decision reached no agent, and saying "allowed" would be a lie.
import { NotFoundError, RunSettledError } from "../core/errors.ts";
import type { EventInput, RunEvent, RunRecord, Store } from "../store/mod.ts";
import { pendingDecisions } from "../store/decisions.ts";
import { isActive } from "../store/run_files.ts";

export interface DecisionRequest {
  kind: "approval" | "question";
  /** The approvalId or questionId. */
  id: string;
  /** For messages: "the decision on approval-1". */
  what: string;
  event: EventInput;
}

/** Appends the decision to the run `ref` names; returns the run and the stored event. */
export async function deliverDecision(
  store: Store,
  ref: string,
  request: DecisionRequest,
): Promise<{ record: RunRecord; stored: RunEvent }> {
  // A run whose process is gone is interrupted first: nothing would read the decision.
  await store.reconcileCheaply();
  const record = store.resolveRun(ref);
  const { events } = store.readEvents(record.id);
  const requestType = request.kind === "approval" ? "approval.requested" : "question.requested";
  const asked = events.some((event) =>
    event.ignored === undefined && event.type === requestType && idOf(event) === request.id
  );
  if (asked && !isActive(record.status)) {
    throw new RunSettledError(record.id, record.status, request.what);
  }
  const pending = pendingDecisions(events).filter((d) => d.kind === request.kind);
  if (!pending.some((d) => d.id === request.id)) {
    const open = pending.map((d) => d.id);
    throw new NotFoundError(
      `Run ${record.id} has no pending ${request.kind} ${JSON.stringify(request.id)}`,
      {
        hint: open.length
          ? `pending: ${open.join(", ")}`
          : isActive(record.status)
          ? `it has nothing pending (answered already?): reins show ${record.id}`
          : `it has ended (${record.status}) and waits for nothing`,
      },
    );
  }
  const stored = store.appendToRun(record.id, request.event);
  if (stored.ignored !== undefined) {
    // It settled between the check and the append: the event is kept as evidence, not applied.
    const status = store.loadRun(record.id).status;
    throw new RunSettledError(record.id, status, request.what);
  }
  return { record, stored };
}

function idOf(event: RunEvent): string | null {
  if (event.type === "approval.requested") return event.payload.approvalId;
  if (event.type === "question.requested") return event.payload.questionId;
  return null;
}
