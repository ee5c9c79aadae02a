// `reins approve RUN ID [--deny] [--reason TEXT]`: answers an approval a waiting run asked for, by
// appending `approval.resolved` to that run's log from this process.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { deliverDecision } from "./deliver_decision.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins approve RUN APPROVAL_ID [--deny] [--reason TEXT]";
export const description =
  "Allows (or with --deny refuses) a tool use that a run started with --approve ask is waiting " +
  "for. `reins show RUN` lists what is pending, with the command that answers it. A run that " +
  "has already ended waits for nothing: the decision is ignored, and the exit code is 8.";
export const flags = defineFlags({
  deny: { type: "boolean", description: "refuse the tool use instead of allowing it" },
  reason: { type: "string", value: "TEXT", description: "why, recorded and shown to the agent" },
});
type Flags = typeof flags;

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  const [ref, approvalId, ...extra] = ctx.positionals;
  if (ref === undefined || approvalId === undefined || extra.length > 0) {
    throw new UsageError("reins approve takes a run and an approval id", { hint: usage });
  }
  const decision = ctx.flags.deny ? "deny" : "allow";
  using store = openStore(ctx.home);
  const { record, stored } = await deliverDecision(store, ref, {
    kind: "approval",
    id: approvalId,
    what: `the decision on ${approvalId}`,
    event: {
      type: "approval.resolved",
      payload: { approvalId, decision, by: "cli", reason: ctx.flags.reason ?? null },
    },
  });
  if (ctx.io.jsonMode) {
    ctx.io.json({ runId: record.id, approvalId, decision, sequence: stored.sequence });
  } else {
    ctx.io.note(`${decision === "allow" ? "allowed" : "denied"} ${approvalId} on run ${record.id}`);
  }
  return 0;
}
