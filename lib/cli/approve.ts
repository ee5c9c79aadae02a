// `reins approve RUN ID [--deny] [--reason TEXT]`: answers an approval a waiting run asked for, by
// appending `approval.resolved` to that run's log from this process.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins approve RUN APPROVAL_ID [--deny] [--reason TEXT]";
export const description =
  "Allows (or with --deny refuses) a tool use that a run started with --approve ask is waiting " +
  "for. `reins show RUN` lists what is pending, with the command that answers it.";
export const flags = defineFlags({
  deny: { type: "boolean", description: "refuse the tool use instead of allowing it" },
  reason: { type: "string", value: "TEXT", description: "why, recorded and shown to the agent" },
});
type Flags = typeof flags;

// Synchronous work; the dispatcher takes any command as a promise.
export function run(ctx: CommandContext<Flags>): Promise<number> {
  return Promise.resolve(execute(ctx));
}

function execute(ctx: CommandContext<Flags>): number {
  const [ref, approvalId, ...extra] = ctx.positionals;
  if (ref === undefined || approvalId === undefined || extra.length > 0) {
    throw new UsageError("reins approve takes a run and an approval id", { hint: usage });
  }
  using store = openStore(ctx.home);
  const record = store.resolveRun(ref);
  const pending = store.pendingDecisions(record.id).filter((d) => d.kind === "approval");
  if (!pending.some((d) => d.id === approvalId)) {
    const open = pending.map((d) => d.id);
    throw new NotFoundError(
      `Run ${record.id} has no pending approval ${JSON.stringify(approvalId)}`,
      {
        hint: open.length
          ? `pending: ${open.join(", ")}`
          : "it has nothing pending (answered already, or the run has ended)",
      },
    );
  }
  const decision = ctx.flags.deny ? "deny" : "allow";
  const stored = store.appendToRun(record.id, {
    type: "approval.resolved",
    payload: { approvalId, decision, by: "cli", reason: ctx.flags.reason ?? null },
  });
  if (ctx.io.jsonMode) {
    ctx.io.json({ runId: record.id, approvalId, decision, sequence: stored.sequence });
  } else {ctx.io.note(
      `${decision === "allow" ? "allowed" : "denied"} ${approvalId} on run ${record.id}`,
    );}
  return 0;
}
