// `reins answer RUN ID TEXT`: answers a question a waiting run asked, by appending
// `question.answered` to that run's log from this process.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins answer RUN QUESTION_ID TEXT";
export const description = "Answers a question a running agent is waiting on.";
export const flags = defineFlags({});
type Flags = typeof flags;

// Synchronous work; the dispatcher takes any command as a promise.
export function run(ctx: CommandContext<Flags>): Promise<number> {
  return Promise.resolve(execute(ctx));
}

function execute(ctx: CommandContext<Flags>): number {
  const [ref, questionId, ...words] = ctx.positionals;
  if (ref === undefined || questionId === undefined || words.length === 0) {
    throw new UsageError("reins answer takes a run, a question id and the answer", { hint: usage });
  }
  using store = openStore(ctx.home);
  const record = store.resolveRun(ref);
  const pending = store.pendingDecisions(record.id).filter((d) => d.kind === "question");
  if (!pending.some((d) => d.id === questionId)) {
    throw new NotFoundError(
      `Run ${record.id} has no pending question ${JSON.stringify(questionId)}`,
      {
        hint: pending.length
          ? `pending: ${pending.map((d) => d.id).join(", ")}`
          : "it has nothing pending",
      },
    );
  }
  const answer = words.join(" ");
  const stored = store.appendToRun(record.id, {
    type: "question.answered",
    payload: { questionId, answer },
  });
  if (ctx.io.jsonMode) ctx.io.json({ runId: record.id, questionId, sequence: stored.sequence });
  else ctx.io.note(`answered ${questionId} on run ${record.id}`);
  return 0;
}
