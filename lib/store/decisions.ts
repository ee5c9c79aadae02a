// Pending decisions: the approvals and questions a run asked for that nothing has answered yet.
// Events that arrived after the run settled (marked ignored) count neither as asking nor answering.
import type { RunEvent } from "./contracts.ts";

export interface PendingDecision {
  kind: "approval" | "question";
  /** The approvalId or questionId. */
  id: string;
  /** The request event: its id, sequence and time, and its payload (tool and args, or text). */
  eventId: string;
  sequence: number;
  requestedAt: string;
  payload: Extract<RunEvent, { type: "approval.requested" | "question.requested" }>["payload"];
}

/** The run's unanswered `approval.requested` and `question.requested`, oldest first. */
export function pendingDecisions(events: readonly RunEvent[]): PendingDecision[] {
  const answered = new Set<string>();
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    if (event.type === "approval.resolved") answered.add(`approval:${event.payload.approvalId}`);
    if (event.type === "question.answered") answered.add(`question:${event.payload.questionId}`);
  }
  const pending: PendingDecision[] = [];
  const asked = new Set<string>();
  for (const event of events) {
    if (event.ignored !== undefined) continue;
    let kind: PendingDecision["kind"];
    let id: string;
    if (event.type === "approval.requested") {
      kind = "approval";
      id = event.payload.approvalId;
    } else if (event.type === "question.requested") {
      kind = "question";
      id = event.payload.questionId;
    } else {
      continue;
    }
    const key = `${kind}:${id}`;
    if (answered.has(key) || asked.has(key)) continue;
    asked.add(key);
    pending.push({
      kind,
      id,
      eventId: event.id,
      sequence: event.sequence,
      requestedAt: event.timestamp,
      payload: event.payload,
    });
  }
  return pending.sort((a, b) => a.sequence - b.sequence);
}
