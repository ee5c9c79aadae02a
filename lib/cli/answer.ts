// `reins answer RUN ID TEXT`: answers a question a waiting run asked, by appending
// `question.answered` to that run's log from this process.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { deliverDecision } from "./deliver_decision.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins answer RUN QUESTION_ID TEXT";
export const description =
  "Answers a question a running agent is waiting on (the words after QUESTION_ID are the " +
  "answer). `reins show RUN` lists what is pending. A run that has already ended waits for " +
  "nothing: the answer is ignored, and the exit code is 8.";
export const flags = defineFlags({});
type Flags = typeof flags;

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const [ref, questionId, ...words] = ctx.positionals;
  if (ref === undefined || questionId === undefined || words.length === 0) {
    throw new UsageError("reins answer takes a run, a question id and the answer", { hint: usage });
  }
  const answer = words.join(" ");
  using store = openStore(ctx.home);
  const { record, stored } = await deliverDecision(store, ref, {
    kind: "question",
    id: questionId,
    what: `the answer to ${questionId}`,
    event: { type: "question.answered", payload: { questionId, answer } },
  });
  if (ctx.io.jsonMode) ctx.io.json({ runId: record.id, questionId, sequence: stored.sequence });
  else ctx.io.note(`answered ${questionId} on run ${record.id}`);
  return 0;
}
