// The problems of a suite file, each with its exact path (`scenarios[2].checks[0].regex`) and,
// where the text has one, its line and column; and the error that carries them all (exit 2).
// load.ts and suite_text.ts find the problems; this says where they are and how they read.
import type { Document, LineCounter } from "yaml";
import { UsageError } from "../core/errors.ts";

/** One thing wrong with a suite file. */
export interface SuiteProblem {
  /** `scenarios[2].checks[0].regex`; empty for the file as a whole. */
  path: string;
  message: string;
  /** 1-based, when the text locates it. */
  line: number | null;
  column: number | null;
}

/** A suite file that cannot be used: every problem, each one line (exit 2). */
export class SuiteFileError extends UsageError {
  readonly file: string;
  readonly problems: SuiteProblem[];
  constructor(file: string, problems: SuiteProblem[]) {
    const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
    super(`Cannot use the suite file ${file}: ${count}`, {
      hint: "fix the lines above; reins suite validate FILE checks a file without running it",
    });
    this.name = "SuiteFileError";
    this.file = file;
    this.problems = problems;
  }

  /** `suite.yaml:14:9: scenarios[2].checks[0].regex: invalid regular expression (…)`. */
  lines(shownFile = this.file): string[] {
    return this.problems.map((problem) => formatProblem(shownFile, problem));
  }
}

export function formatProblem(file: string, problem: SuiteProblem): string {
  const where = problem.line === null
    ? file
    : `${file}:${problem.line}${problem.column === null ? "" : `:${problem.column}`}`;
  return `${where}: ${problem.path ? `${problem.path}: ` : ""}${problem.message}`;
}

export type Segment = string | number;

/** A key written bare in a path; any other is quoted (`agents["a\\nb"]`), so a path is one line. */
const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** `["scenarios", 2, "checks", 0, "regex"]` → `scenarios[2].checks[0].regex`. */
export function formatPath(path: readonly Segment[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    // regression: an agent named "a\nb" split its problem over two lines, "a.1" read as a path.
    else if (!BARE_KEY.test(part)) out += `[${JSON.stringify(part)}]`;
    else out += out === "" ? part : `.${part}`;
  }
  return out;
}

export interface Positions {
  /** Where the value at `path` is; with `key`, where its key is written. */
  at(
    path: readonly Segment[],
    options?: { key?: boolean },
  ): { line: number; column: number } | null;
  /** Where a character offset of the text is. */
  offset(at: number): { line: number; column: number };
}

type Ranged = { range?: [number, number, number] };

/** Where the values of a parsed document are (its lines counted by `lineCounter`). */
export function positionsIn(doc: Document, lineCounter: LineCounter): Positions {
  const position = (node: Ranged | null | undefined) => {
    if (!node?.range) return null;
    const { line, col } = lineCounter.linePos(node.range[0]);
    return { line, column: col };
  };
  return {
    offset(at) {
      const { line, col } = lineCounter.linePos(at);
      return { line, column: col };
    },
    at(path, options = {}) {
      const last = path[path.length - 1];
      if (options.key && typeof last === "string") {
        const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
        const items = (parent as { items?: { key?: unknown }[] } | null)?.items ?? [];
        const pair = items.find((item) =>
          (item.key as { value?: unknown } | undefined)?.value === last
        );
        const found = position(pair?.key as Ranged | undefined);
        if (found) return found;
      }
      // The node itself, else the nearest ancestor the text has (a missing key's object).
      for (let depth = path.length; depth >= 0; depth--) {
        const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
        const found = position(node as Ranged | undefined);
        if (found) return found;
      }
      return null;
    },
  };
}

/** The problems found so far, each located when the positions are known. */
export class Problems {
  readonly list: SuiteProblem[] = [];
  constructor(readonly positions: Positions | null) {}

  /** In the order the file has them (unlocated ones first). */
  sorted(): SuiteProblem[] {
    return [...this.list].sort((a, b) =>
      (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)
    );
  }

  add(path: readonly Segment[], message: string, options: { key?: boolean } = {}): void {
    const shown = formatPath(path);
    // A problem of the top (a driver without exec) is found once per scenario: tell it once.
    if (this.list.some((p) => p.path === shown && p.message === message)) return;
    const at = this.positions?.at(path, options) ?? null;
    this.list.push({
      path: shown,
      message,
      line: at?.line ?? null,
      column: at?.column ?? null,
    });
  }
}
