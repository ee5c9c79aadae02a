// `reins forget CONTEXT`: drops a context's session, so its next turn starts a new conversation.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { safeName } from "../core/ids.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins forget CONTEXT";
export const description =
  "Forgets the harness session of CONTEXT. Its runs stay recorded; the next `reins run " +
  "--context CONTEXT` starts a fresh session. Forgetting a context reins does not know is not an error.";
export const flags = defineFlags({});
type Flags = typeof flags;

// Synchronous work; the dispatcher takes any command as a promise.
export function run(ctx: CommandContext<Flags>): Promise<number> {
  return Promise.resolve(execute(ctx));
}

function execute(ctx: CommandContext<Flags>): number {
  const [contextId, ...extra] = ctx.positionals;
  if (contextId === undefined || extra.length > 0) {
    throw new UsageError("reins forget takes one context id", { hint: usage });
  }
  safeName(contextId, "context id");
  let failure: string | null = null;
  using store = openStore(ctx.home, { warn: (message) => failure = message });
  const dropped = store.contexts.forget(contextId);
  if (failure) throw new UsageError(failure);
  if (ctx.io.jsonMode) ctx.io.json({ contextId, dropped });
  else if (dropped) ctx.io.note(`forgot context '${contextId}' (session ${dropped})`);
  else ctx.io.note(`context '${contextId}' had no session; nothing to forget`);
  return 0;
}
