// `reins show RUN [--short | --verbose] [--follow] [--json]`: a run as a transcript for people
// (lib/session/format.ts), or as {record, events, problems, pending} with --json. --follow tails
// the run from any process until it settles. Damage never stops it: skipped lines and a rebuilt
// record are warnings on stderr.
import type { CommandContext } from "./command.ts";
import { defineFlags } from "./args.ts";
import { UsageError } from "../core/errors.ts";
import type { LineProblem, RunEvent, RunRecord } from "../store/mod.ts";
import { terminalStatusOf } from "../store/contract_runtime.ts";
import { pendingDecisions } from "../store/decisions.ts";
import { EVENTS_FILE, isActive, shownPath } from "../store/run_files.ts";
import { openStore, type Store } from "../store/store.ts";
import {
  EventFormatter,
  formatFooter,
  formatHeader,
  formatPending,
  joinOneLine,
  type ShowMode,
} from "../session/format.ts";
import { followRun, PendingTracker } from "../session/follow.ts";
import { RunTally } from "../session/stats.ts";
import { glanceSnapshot, snapshotLine } from "../snapshot/glance.ts";
import type { Output } from "./output.ts";

export const usage = "reins show RUN [--short | --verbose] [--follow] [--json]";
export const description =
  "Shows a run (an id, a unique prefix of one, or `last`) as a transcript: --short (the " +
  "default) one line per event, --verbose with previews of texts, reasoning, tool arguments and " +
  "results, errors with hints and timings. Approvals and questions the run waits for are shown " +
  "with the command that answers them. --follow prints new events as they are appended, from " +
  "any process, until the run settles. --json prints {record, events, problems, pending} " +
  "(with --follow: one event per line). Damaged lines are skipped and reported, never fatal.";
export const flags = defineFlags({
  short: { type: "boolean", description: "one line per event (the default)" },
  verbose: {
    type: "boolean",
    short: "v",
    description: "previews of texts, arguments, results and errors, with timings",
  },
  follow: {
    type: "boolean",
    short: "f",
    description: "keep printing events as they are appended until the run settles",
  },
});
type Flags = typeof flags;

/** Something wrong with a run's files: `line` is null for a whole file. */
export interface ShownProblem {
  file: string;
  line: number | null;
  reason: string;
}

/** How often --follow looks at the log while it is quiet. */
const FOLLOW_INTERVAL_MS = 100;

export async function run(ctx: CommandContext<Flags>): Promise<number> {
  try {
    return await showRun(ctx);
  } catch (error) {
    // `reins show RUN | head`: the reader has what it wanted.
    if (error instanceof Deno.errors.BrokenPipe) return 0;
    throw error;
  }
}

async function showRun(ctx: CommandContext<Flags>): Promise<number> {
  const [ref, ...extra] = ctx.positionals;
  if (ref === undefined || extra.length > 0) {
    throw new UsageError("reins show takes one run: an id, a unique prefix of one, or last", {
      hint: usage,
    });
  }
  if (ctx.flags.short && ctx.flags.verbose) {
    throw new UsageError("reins show takes --short or --verbose, not both", { hint: usage });
  }
  const mode: ShowMode = ctx.flags.verbose ? "verbose" : "short";
  using store = openStore(ctx.home, { warn: (message) => ctx.io.warn(message) });
  await store.reconcileCheaply();
  const runId = store.resolveRunId(ref);
  if (ctx.flags.follow) return await follow(ctx, store, runId, mode);

  if (ctx.io.jsonMode) return showJson(ctx, store, runId);

  // The transcript is made as the log is read, a piece at a time: a run of a hundred thousand
  // events is never held whole, neither as events nor as text.
  const { io } = ctx;
  const { record, problems: recordProblems } = store.inspectRun(runId);
  for (const problem of recordProblems) io.warn(`${problem.file}: skipped: ${problem.reason}`);
  const eventsFile = shownPath(runId, EVENTS_FILE);
  const formatter = new EventFormatter(mode, record.startedAt);
  const tally = new RunTally();
  const pending = new PendingTracker();
  const snapshot = mode === "verbose" ? snapshotLine(glanceSnapshot(store, runId)) : undefined;
  io.print(`${formatHeader(record, mode, { snapshot }).join("\n")}\n\n`);
  const tail = store.tail(runId);
  // Each piece of the log is written as soon as it is formatted, so that its text dies young:
  // kept for one write of 256 Ki units, the pieces' texts were copied by the young generation's
  // collections, and the whole took 7–9% more CPU than a write per piece (its redaction and
  // encoding into one kept buffer included), short and verbose (`deno task bench views`,
  // "reins show", timed with perf stat).
  const lines: string[] = [];
  tail.readEach((batch) => {
    if (batch.problems.length > 0) {
      for (const problem of batch.problems) {
        io.warn(`${eventsFile}:${problem.line}: skipped: ${problem.reason}`);
      }
    }
    if (batch.events.length === 0) return;
    for (let i = 0; i < batch.events.length; i++) {
      tally.add(batch.events[i]);
      pending.add(batch.events[i]);
    }
    formatter.addLines(batch.events, lines);
    lines.push(""); // the text ends with its newline: print need not add one (a copy)
    io.print(joinOneLine(lines));
    lines.length = 0;
  });
  if (tail.incompleteLine !== null) {
    io.warn(`${eventsFile}:${tail.incompleteLine}: skipped: ${INCOMPLETE_LINE}`);
  }
  io.print(
    ["", ...formatPending(record, pending.takeNew()), formatFooter(record, tally)].join("\n"),
  );
  return 0;
}

const INCOMPLETE_LINE = "incomplete last line (its writer stopped mid-line)";

/** --json: {record, events, problems, pending}, the record and events as the store reads them. */
function showJson(ctx: CommandContext<Flags>, store: Store, runId: string): number {
  const { record, problems: recordProblems } = store.inspectRun(runId);
  const read = store.readEvents(runId);
  const eventsFile = shownPath(runId, EVENTS_FILE);
  const problems: ShownProblem[] = [
    ...recordProblems.map((problem) => ({ ...problem, line: null })),
    ...read.problems.map((problem) => ({ file: eventsFile, ...problem })),
  ];
  if (read.tornLine !== null) {
    problems.push({ file: eventsFile, line: read.tornLine, reason: INCOMPLETE_LINE });
  }
  for (const problem of problems) {
    const where = problem.line === null ? problem.file : `${problem.file}:${problem.line}`;
    ctx.io.warn(`${where}: skipped: ${problem.reason}`);
  }
  ctx.io.json({ record, events: read.events, problems, pending: pendingDecisions(read.events) });
  return 0;
}

/** --follow: the run so far, then each batch of new events, until the run settles. */
async function follow(
  ctx: CommandContext<Flags>,
  store: Store,
  runId: string,
  mode: ShowMode,
): Promise<number> {
  const { io } = ctx;
  const { record: first, problems: recordProblems } = store.inspectRun(runId);
  for (const problem of recordProblems) io.warn(`${problem.file}: skipped: ${problem.reason}`);
  const eventsFile = shownPath(runId, EVENTS_FILE);
  const warn = (problems: LineProblem[]) => {
    for (const problem of problems) {
      io.warn(`${eventsFile}:${problem.line}: skipped: ${problem.reason}`);
    }
  };
  // A follower stopped by Ctrl-C ends quietly: the run it watched goes on.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    if (io.jsonMode) {
      for await (const batch of followRun(store, runId, options(stop.signal))) {
        warn(batch.problems);
        printJsonLines(io, batch.events);
      }
      return 0;
    }
    const formatter = new EventFormatter(mode, first.startedAt);
    const tally = new RunTally();
    const pending = new PendingTracker();
    let outcome: RunEvent | null = null;
    io.print(`${formatHeader(first, mode).join("\n")}\n\n`);
    for await (const batch of followRun(store, runId, options(stop.signal))) {
      warn(batch.problems);
      if (batch.events.length === 0) continue;
      const lines: string[] = [];
      for (const event of batch.events) {
        lines.push(formatter.format(event));
        tally.add(event);
        pending.add(event);
        if (event.ignored === undefined && terminalStatusOf(event) !== null) outcome ??= event;
      }
      lines.push(...formatPending(currentRecord(store, runId, first), pending.takeNew()));
      io.print(lines.join("\n"));
    }
    io.print(
      `\n${formatFooter(settledRecord(currentRecord(store, runId, first), outcome), tally)}`,
    );
    return 0;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

function options(signal: AbortSignal) {
  return { signal, intervalMs: FOLLOW_INTERVAL_MS };
}

/**
 * The record as its outcome event settles it: run.json is rewritten just after the event is
 * appended, so a follower that saw the event may read the record a moment before it says so.
 */
function settledRecord(record: RunRecord, outcome: RunEvent | null): RunRecord {
  if (outcome === null || !isActive(record.status)) return record;
  const status = terminalStatusOf(outcome)!;
  const reason = (outcome.payload as { reason?: unknown }).reason;
  return {
    ...record,
    status,
    endedAt: record.endedAt ?? outcome.timestamp,
    terminalReason: record.terminalReason ?? (typeof reason === "string" ? reason : null),
  };
}

function currentRecord(store: Store, runId: string, fallback: RunRecord): RunRecord {
  try {
    return store.inspectRun(runId).record;
  } catch {
    return fallback;
  }
}

/** Events as JSON lines in one write: a backlog of thousands is not thousands of writes. */
function printJsonLines(io: Output, events: readonly unknown[]): void {
  if (events.length === 0) return;
  io.print(events.map((event) => JSON.stringify(event)).join("\n"));
}
