// `reins runs`: the runs of the data root, newest first, from the index (a readable table, or with
// --json the full records). Free of zod and of node: modules, like everything it imports: it must
// start about as fast as an empty `deno run` (see lib/store/index_db.ts).
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import { DataRoot } from "../store/data_root.ts";
import { listRunJson, MAX_LIMIT } from "../store/list.ts";
import { reconcileCheaply } from "../store/liveness.ts";
import { isActive } from "../store/run_files.ts";

export const usage = "reins runs [--context ID] [--session ID] [--status S] [--active] [--limit N]";
export const description =
  "Lists runs, newest first: id (the shortest prefix that names it), status, harness, context, " +
  "start, duration and goal. --json prints the full records as one JSON array, each with its " +
  "id as `runId` (as every command's JSON names a run) and as `id` (as run.json has it). Runs whose " +
  "process is gone are marked interrupted first.";
export const flags = defineFlags({
  context: { type: "string", value: "ID", description: "only the runs of this context" },
  session: { type: "string", value: "ID", description: "only the runs of this session" },
  status: {
    type: "string",
    value: "S",
    description: "only runs with this status (several: comma-separated)",
  },
  active: { type: "boolean", description: "only queued, running and waiting runs" },
  limit: {
    type: "integer",
    min: 1,
    max: MAX_LIMIT,
    value: "N",
    description: "how many (default 20, at most 10000)",
  },
});
type Flags = typeof flags;

/** What the table needs of a record (the index holds records written by the store). */
interface Row {
  id: string;
  status: string;
  harness: string;
  contextId: string | null;
  startedAt: string;
  endedAt: string | null;
  goal: string | null;
}

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  if (ctx.positionals.length > 0) {
    throw new UsageError(
      `reins runs takes no arguments: got ${JSON.stringify(ctx.positionals[0])}`,
      {
        hint: usage,
      },
    );
  }
  const status = ctx.flags.status;
  const filter = {
    contextId: ctx.flags.context,
    sessionId: ctx.flags.session,
    status: status?.split(",").map((part) => part.trim()).filter(Boolean),
    active: ctx.flags.active,
    limit: ctx.flags.limit,
  };
  // The zod-free part of the store: all that listing needs.
  using root = new DataRoot(ctx.home, { warn: (message) => ctx.io.warn(message) });
  const reconciled = await reconcileCheaply(root);
  if (reconciled.length > 0) {
    ctx.io.note(`reins: marked interrupted (their process is gone): ${reconciled.join(", ")}`);
  }
  const { records, prefixes } = await listRunJson(root, filter, {
    prefixes: !ctx.io.jsonMode,
  });
  if (ctx.io.jsonMode) {
    // The index holds each record's JSON: joined as they are, not parsed and printed again.
    ctx.io.print(`[${records.map(withRunId).join(",")}]`);
    return 0;
  }
  if (records.length === 0) {
    ctx.io.note(
      filtered(filter) ? "No runs match." : "No runs yet: start one with reins run PROMPT",
    );
    return 0;
  }
  const rows = records.map((text) => JSON.parse(text) as Row);
  ctx.io.print(formatTable(rows, prefixes, Date.now(), terminalWidth(ctx.io.stdoutIsTerminal)));
  return 0;
}

/**
 * A record's JSON with `runId` first: every command names a run `runId` in its JSON (`run`,
 * `approve`, `replay`, the events…); a record keeps its own `id` too, as run.json has it. The
 * store writes `id` as a record's first field, so the id is read off the text, not parsed.
 */
export function withRunId(record: string): string {
  const start = '{"id":"';
  const end = record.startsWith(start) ? record.indexOf('"', start.length) : -1;
  const id = end > 0 ? record.slice(start.length, end) : (JSON.parse(record) as { id: string }).id;
  return `{"runId":${JSON.stringify(id)},${record.slice(1)}`;
}

function filtered(filter: Record<string, unknown>): boolean {
  return filter.contextId !== undefined || filter.sessionId !== undefined ||
    filter.status !== undefined || filter.active === true;
}

function terminalWidth(isTerminal: boolean): number {
  if (!isTerminal) return 120;
  try {
    return Deno.consoleSize().columns;
  } catch {
    return 120;
  }
}

const pad = (n: number) => String(n).padStart(2, "0");

/** Local time, to the second: `2026-05-01 14:03:09`. */
export function formatStarted(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** `0.4s`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${pad(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h${pad(Math.floor(seconds / 60) % 60)}m`;
}

/** The table `reins runs` prints; the goal is cut to fit `width` columns. */
export function formatTable(
  rows: readonly Row[],
  prefixes: readonly string[],
  nowMs: number,
  width: number,
): string {
  const cells = rows.map((row, i) => {
    const endMs = row.endedAt !== null ? Date.parse(row.endedAt) : nowMs;
    const duration = formatDuration(endMs - Date.parse(row.startedAt));
    return [
      prefixes[i] ?? row.id,
      row.status,
      row.harness,
      row.contextId ?? "-",
      formatStarted(row.startedAt),
      isActive(row.status) ? `${duration}…` : duration,
      (row.goal ?? "").replace(/\s+/g, " ").trim() || "-",
    ];
  });
  const header = ["ID", "STATUS", "HARNESS", "CONTEXT", "STARTED", "DURATION", "GOAL"];
  const widths = header.slice(0, -1).map((title, column) =>
    Math.max(title.length, ...cells.map((cell) => cell[column].length))
  );
  const used = widths.reduce((total, w) => total + w + 2, 0);
  const goalWidth = Math.max(20, width - used);
  const line = (cell: string[]) => {
    const goal = cell[6].length > goalWidth ? `${cell[6].slice(0, goalWidth - 1)}…` : cell[6];
    return [...cell.slice(0, -1).map((text, column) => text.padEnd(widths[column])), goal]
      .join("  ").trimEnd();
  };
  return [line(header), ...cells.map(line)].join("\n");
}
