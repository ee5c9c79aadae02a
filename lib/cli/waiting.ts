// What a running turn waits for, said once per approval or question as the command that answers
// it, when the run actually goes `waiting` (an approval the policy decided at once never waits).
// The run is named by the shortest prefix of its id that is unique when the line is made: run ids
// are time-ordered, so a fixed 8-character prefix is shared by runs started within a minute.
import type { RunEvent } from "../store/mod.ts";
import { previewValue, quoted } from "../session/text.ts";

const SHOWN = 80;

export interface Asked {
  kind: "approval" | "question";
  id: string;
  what: string;
}

export class WaitingAnnouncer {
  readonly #asked = new Map<string, Asked>();
  readonly #announced = new Set<string>();
  readonly #shortId: () => string;

  /** `shortId`: the run's id as people should type it, asked for each line. */
  constructor(shortId: () => string) {
    this.#shortId = shortId;
  }

  /** The decisions `event` makes the run wait for, each returned once (never twice). */
  update(event: RunEvent): Asked[] {
    switch (event.type) {
      case "approval.requested": {
        const { approvalId, tool, args } = event.payload;
        this.#asked.set(`approval:${approvalId}`, {
          kind: "approval",
          id: approvalId,
          what: `${tool} ${previewValue(args, SHOWN)}`,
        });
        return [];
      }
      case "question.requested": {
        const { questionId, text } = event.payload;
        this.#asked.set(`question:${questionId}`, {
          kind: "question",
          id: questionId,
          what: quoted(text, SHOWN),
        });
        return [];
      }
      case "approval.resolved":
        this.#asked.delete(`approval:${event.payload.approvalId}`);
        return [];
      case "question.answered":
        this.#asked.delete(`question:${event.payload.questionId}`);
        return [];
      case "status.changed": {
        if (event.payload.status !== "waiting") return [];
        const waits: Asked[] = [];
        for (const [key, asked] of this.#asked) {
          if (this.#announced.has(key)) continue;
          this.#announced.add(key);
          waits.push(asked);
        }
        return waits;
      }
      default:
        return [];
    }
  }

  /** `reins approve 01a2… approval-1 [--deny]`: the command that answers `asked`. */
  command(asked: Asked): string {
    const run = this.#shortId();
    return asked.kind === "approval"
      ? `reins approve ${run} ${asked.id} [--deny]`
      : `reins answer ${run} ${asked.id} TEXT`;
  }

  /** `run 01a2… waits for approval approval-1 (write_file {…}): reins approve 01a2… approval-1` */
  line(asked: Asked): string {
    const what = asked.kind === "approval"
      ? `approval ${asked.id} (${asked.what})`
      : `an answer to ${asked.id} (${asked.what})`;
    return `run ${this.#shortId()} waits for ${what}: ${this.command(asked)}`;
  }
}
