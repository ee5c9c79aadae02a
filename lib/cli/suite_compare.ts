// `reins suite compare A B` (two suite runs) and `reins suite compare ID --agent X --agent Y` (two
// agents of one): what regressed, improved, stayed or is flaky, as a table, JSON or Markdown, and an
// exit code a CI job can gate on (docs/suites.md, "Compare"). Reads the state files only.
import type { SuiteContext } from "./suite_flags.ts";
import { ExitCode, NotFoundError, ReinsError, UsageError } from "../core/errors.ts";
import { DataRoot } from "../store/data_root.ts";
import { readSuiteRun, resolveSuiteRunId } from "../suite/state.ts";
import { readCells } from "../suite/read_cells.ts";
import type { Cell } from "../suite/mod.ts";
import { compareCells, compareExitCode, type FailOn } from "../suite/compare.ts";
import { compareLines, compareMarkdown } from "../suite/compare_text.ts";

const USAGE_HINT =
  "reins suite compare A B [--agent X [--agent Y]], or reins suite compare ID --agent X --agent Y";

interface Side {
  id: string;
  suite: string;
  cells: Cell[];
  label: string;
}

/** A suite run's cells; an id that names none is a usage error (exit 2), not a regression. */
function readSide(root: DataRoot, ref: string): Omit<Side, "label"> {
  let id: string;
  try {
    id = resolveSuiteRunId(root, ref);
  } catch (error) {
    if (error instanceof NotFoundError || error instanceof UsageError) {
      throw new UsageError(`Cannot compare suite run ${JSON.stringify(ref)}: ${error.message}`, {
        hint: "list them with: reins suite list",
      });
    }
    throw error;
  }
  let header;
  try {
    header = readSuiteRun(root, id);
    return { id, suite: header.suite, cells: readCells(root, header) };
  } catch (error) {
    if (!(error instanceof ReinsError)) throw error;
    // A damaged state file is the data root's (exit 6, as suite show says it), not a usage error.
    if (error.code === "data_root") {
      throw new ReinsError("data_root", `Cannot compare suite run ${id}: ${error.message}`, {
        hint: error.hint,
        cause: error,
      });
    }
    throw new UsageError(`Cannot compare suite run ${id}: ${error.message}`, { hint: error.hint });
  }
}

/** The cells of one agent; one the run does not have is a usage error naming those it has. */
function ofAgent(side: Omit<Side, "label">, agent: string): Cell[] {
  const cells = side.cells.filter((cell) => cell.agent === agent);
  if (cells.length === 0) {
    const names = [...new Set(side.cells.map((cell) => cell.agent).filter((a) => a !== null))];
    throw new UsageError(`Suite run ${side.id} has no agent ${JSON.stringify(agent)}`, {
      hint: names.length
        ? `its agents: ${names.join(", ")}`
        : "its scenarios name no agents: compare it without --agent",
    });
  }
  return cells;
}

function failOnOf(value: string | undefined): FailOn {
  if (value === undefined || value === "regressed" || value === "any") return value ?? "regressed";
  throw new UsageError(`--fail-on takes regressed or any, not ${JSON.stringify(value)}`, {
    hint: "--fail-on regressed (the default): exit 1 on a significant regression; any: on any",
  });
}

/**
 * Reads the sides (suite run refs, and 0–2 agents) and compares them: what the command does before
 * it prints (and what the benchmark times).
 */
export function compareSuiteRuns(
  root: DataRoot,
  refs: readonly string[],
  agents: readonly string[],
) {
  const first = readSide(root, refs[0]);
  const second = refs.length === 2 ? readSide(root, refs[1]) : first;
  if (first.id === second.id && (agents[1] ?? agents[0]) === agents[0]) {
    // The same plays on both sides: "unchanged" by construction, which no gate should be told.
    const what = agents.length
      ? `suite run ${first.id}'s agent ${agents[0]}`
      : `suite run ${first.id}`;
    throw new UsageError(`Cannot compare ${what} with itself`, {
      hint: "compare two suite runs (reins suite list), or two agents of one: --agent X --agent Y",
    });
  }
  let a: Side;
  let b: Side;
  if (agents.length === 0) {
    a = { ...first, label: first.id };
    b = { ...second, label: second.id };
  } else {
    const [agentA, agentB = agentA] = agents;
    a = { ...first, cells: ofAgent(first, agentA), label: `${first.id} ${agentA}` };
    b = { ...second, cells: ofAgent(second, agentB), label: `${second.id} ${agentB}` };
  }
  const comparison = compareCells(a.cells, b.cells, {
    a: a.label,
    b: b.label,
    byAgent: agents.length === 0,
  });
  if (comparison.scenarios.length === 0 && comparison.unplayed.length > 0) {
    const side = (name: "A" | "B") =>
      comparison.unplayed.some((one) => one.side === name || one.side === "both");
    const which = side("A") && side("B")
      ? `${a.label} and ${b.label}`
      : side("A")
      ? a.label
      : b.label;
    throw new UsageError(
      `Cannot compare ${a.label} with ${b.label}: no scenario they share has a finished play in ${which}`,
      { hint: "finish the suite run first (reins suite run FILE --resume ID), then compare" },
    );
  }
  if (comparison.scenarios.length === 0) {
    throw new UsageError(
      `Cannot compare ${a.label} (suite ${a.suite}) with ${b.label} (suite ${b.suite}): they have no scenario in common`,
      { hint: "compare two suite runs of one suite file, or two agents of one suite run" },
    );
  }
  return { comparison, a, b };
}

export function suiteCompare(ctx: SuiteContext): Promise<number> {
  const failOn = failOnOf(ctx.flags["fail-on"]);
  const agents = ctx.flags.agent ?? [];
  const refs = ctx.positionals;
  if (refs.length < 1 || refs.length > 2 || agents.length > 2) {
    throw new UsageError("reins suite compare takes two suite runs, or one and two --agent", {
      hint: USAGE_HINT,
    });
  }
  if (refs.length === 1 && agents.length !== 2) {
    throw new UsageError(
      "reins suite compare of one suite run needs two agents: --agent X --agent Y",
      {
        hint: USAGE_HINT,
      },
    );
  }
  if (ctx.flags.markdown && ctx.io.jsonMode) {
    throw new UsageError("--markdown and --json do not go together", { hint: USAGE_HINT });
  }
  using root = new DataRoot(ctx.home);
  const { comparison, a, b } = compareSuiteRuns(root, refs, agents);
  const code = compareExitCode(comparison, failOn);
  // A side still running, or stopped: its unfinished plays count for nothing, and say so.
  for (const [name, side] of [["A", a], ["B", b]] as const) {
    const unfinished = side.cells.filter((cell) => cell.outcome === "unfinished").length;
    if (unfinished > 0 && (name === "A" || side.label !== a.label)) {
      ctx.io.warn(
        `${name} ${side.label}: ${unfinished} of ${side.cells.length} plays not finished (still running, or stopped): not counted`,
      );
    }
  }
  if (ctx.io.jsonMode) {
    ctx.io.json({ ...comparison, failOn, exitCode: code });
  } else if (ctx.flags.markdown) {
    ctx.io.print(compareMarkdown(comparison, { failed: code !== 0 }).trimEnd());
  } else {
    if (a.suite !== b.suite) ctx.io.note(`A is suite ${a.suite}, B is suite ${b.suite}`);
    for (const line of compareLines(comparison)) ctx.io.print(line);
  }
  return Promise.resolve(code === 0 ? ExitCode.ok : ExitCode.runFailed);
}
