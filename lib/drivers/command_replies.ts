// What a command-driver program asks for while it runs — a question (`question.requested`), an
// approval (`approval.requested`) — answered on its stdin when it was started with
// `--exec-stdin events`: a question waits for `reins answer` (or a server's answer), an approval
// is decided by --approve (ask: waits for `reins approve`), and each reply goes to the program as
// one JSON line. Replies go out one at a time, in the order asked; while one waits, the program's
// silence is not idleness. Without events on stdin nothing can reach the program: a question it
// asks is kept with a problem that says so, and nothing waits for it.
import type { EventInput } from "../store/mod.ts";
import type { Decision, DriverInput, EventSink } from "./driver.ts";
import type { HarnessProcess } from "./process.ts";

type Ask = Extract<EventInput, { type: "question.requested" | "approval.requested" }>;

export class CommandReplies {
  readonly #input: DriverInput;
  readonly #sink: EventSink;
  readonly #program: string;
  readonly #child: HarnessProcess;
  /** Aborted when the run stops or the program exits: nothing then waits on its behalf. */
  readonly #done = new AbortController();
  readonly #stopped: AbortSignal;
  #chain: Promise<void> = Promise.resolve();

  constructor(
    context: { input: DriverInput; sink: EventSink; program: string; child: HarnessProcess },
    signal: AbortSignal,
  ) {
    this.#input = context.input;
    this.#sink = context.sink;
    this.#program = context.program;
    this.#child = context.child;
    this.#stopped = AbortSignal.any([signal, this.#done.signal]);
  }

  get listening(): boolean {
    return this.#input.agent.kind === "command" && this.#input.agent.stdin === "events";
  }

  /** The prompt, as the first line of an events stdin. */
  async sendPrompt(): Promise<void> {
    await this.#child.send({
      type: "message.completed",
      payload: { role: "user", text: this.#input.prompt },
    });
  }

  /** Takes an ask the program made (its event is already recorded). */
  take(ask: Ask): void {
    if (!this.listening) {
      if (ask.type === "question.requested") {
        this.#sink.emit({
          type: "problem",
          payload: {
            source: "command",
            reason: `${this.#program} asked ${ask.payload.questionId}, but it reads no answers ` +
              "(its stdin is closed after the prompt): run it with --exec-stdin events " +
              "(docs/event-protocol.md)",
          },
        });
      }
      return;
    }
    this.#chain = this.#chain.then(() => this.#reply(ask)).catch(() => {
      // Stopped, or the program went away: the run's outcome says which.
    });
  }

  /** Called once the program has exited: what still waits is abandoned. */
  async finish(): Promise<void> {
    this.#done.abort();
    await this.#chain;
  }

  async #reply(ask: Ask): Promise<void> {
    if (this.#stopped.aborted) return;
    if (ask.type === "question.requested") {
      const { questionId } = ask.payload;
      const answer = await this.#child.hold(
        this.#input.decisions.waitForAnswer(questionId, this.#stopped),
      );
      await this.#child.send({ type: "question.answered", payload: { questionId, answer } });
      return;
    }
    const { approvalId } = ask.payload;
    let decision: Decision;
    if (this.#input.approval === "ask") {
      decision = await this.#child.hold(
        this.#input.decisions.waitForApproval(approvalId, this.#stopped),
      );
    } else {
      decision = {
        decision: this.#input.approval === "auto" ? "allow" : "deny",
        by: "policy",
        reason: `--approve ${this.#input.approval}`,
      };
      this.#sink.emit({ type: "approval.resolved", payload: { approvalId, ...decision } });
    }
    await this.#child.send({ type: "approval.resolved", payload: { approvalId, ...decision } });
  }
}
