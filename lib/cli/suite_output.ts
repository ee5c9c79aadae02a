// What the suite commands print besides their own lines: an unusable suite file's problems (exit
// 2), and a suite run's results table with the notes about where to look next.
import { ExitCode } from "../core/errors.ts";
import { loadSuite, type Suite, SuiteFileError } from "../suite/load.ts";
import { elapsedOf, type ScenarioState, type SuiteRunFile } from "../suite/state.ts";
import { followUps, formatTable } from "../suite/table.ts";
import { aggregate, aggregateLines, cellsOf } from "../suite/aggregate.ts";
import type { Output } from "./output.ts";

/** Loads the suite file; an unusable one prints every problem and is exit 2. */
export async function loadOrExplain(
  io: Output,
  path: string,
): Promise<Suite | { exit: number }> {
  try {
    return await loadSuite(path);
  } catch (error) {
    if (!(error instanceof SuiteFileError)) throw error;
    const shown = path;
    if (io.jsonMode) {
      io.json({ valid: false, file: error.file, problems: error.problems });
    } else {
      for (const line of error.lines(shown)) io.note(line);
      io.note(
        `${
          error.problems.length === 1 ? "1 problem" : `${error.problems.length} problems`
        } in ${shown}; nothing was run`,
      );
    }
    return { exit: ExitCode.usage };
  }
}

/** The results table on stdout, then the notes about kept working directories on stderr. */
export function printResults(
  io: Output,
  header: SuiteRunFile,
  states: readonly ScenarioState[],
): void {
  for (const line of formatTable(states, { elapsedMs: elapsedOf(header) })) io.print(line);
  // Over more than one epoch (--repeat), each agent's pass^k with its interval.
  for (const line of aggregateLines(aggregate(cellsOf(states)))) io.print(line);
  for (const line of followUps(header.id, states)) io.note(line);
}
