// `reins contexts`: every context with its session, harness and last use.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { openStore } from "../store/store.ts";

export const usage = "reins contexts";
export const description =
  "Lists the contexts reins remembers: each one's session id, the harness's own session id, " +
  "the driver and when it was last used — the session used last, with the other drivers that " +
  "keep a session on the context after it (+codex). --json prints every driver's session under " +
  "`sessions` (docs/contexts.md). `reins forget CONTEXT` drops them all.";
export const flags = defineFlags({});
type Flags = typeof flags;

// Synchronous work; the dispatcher takes any command as a promise.
export function run(ctx: CommandContext<Flags>): Promise<number> {
  return Promise.resolve(execute(ctx));
}

function execute(ctx: CommandContext<Flags>): number {
  using store = openStore(ctx.home, { warn: (message) => ctx.io.warn(message) });
  const entries = store.contexts.list();
  if (ctx.io.jsonMode) {
    ctx.io.json(entries);
    return 0;
  }
  if (entries.length === 0) {
    ctx.io.note("no contexts yet: reins run --context ID 'PROMPT' starts one");
    return 0;
  }
  const rows = entries.map((e) => [
    e.contextId,
    e.session_id,
    e.native_session_id ?? "-",
    // The driver used last, then the others that keep a session on the context.
    [e.driver, ...e.sessions.filter((s) => s.driver !== e.driver).map((s) => `+${s.driver}`)]
      .join(" "),
    new Date(e.updated_ms).toISOString().replace("T", " ").slice(0, 19),
  ]);
  const head = ["CONTEXT", "SESSION", "NATIVE SESSION", "DRIVER", "LAST USED (UTC)"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  ctx.io.print([line(head), ...rows.map(line)].join("\n"));
  return 0;
}
