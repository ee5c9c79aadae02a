// A suite file's bytes → the raw value they hold, read so that no file can exhaust reins: at most
// MAX_SUITE_FILE_BYTES, YAML's aliases measured before they are expanded (a "billion laughs" file
// is refused at the value that grows, not by running out of memory), no value that contains
// itself, no NUL in any text (no path, variable or argument can hold one), and JSON's duplicate
// keys refused as YAML's are. What the values mean is load.ts's business.
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
} from "yaml";
import {
  type Positions,
  positionsIn,
  Problems,
  type Segment,
  SuiteFileError,
  type SuiteProblem,
} from "./problems.ts";

/** A suite of thousands of scenarios is well under this; reading one costs ~0.5 s a MiB. */
export const MAX_SUITE_FILE_BYTES = 4 * 1024 * 1024;
/** The values a file may hold once its aliases are expanded. */
export const MAX_SUITE_VALUES = 1_000_000;

export interface SuiteText {
  raw: unknown;
  /** Where each value of the raw one is written. */
  positions: Positions;
}

function wholeFile(message: string): SuiteProblem {
  return { path: "", message, line: null, column: null };
}

export function sizeProblem(bytes: number): SuiteProblem | null {
  if (bytes <= MAX_SUITE_FILE_BYTES) return null;
  const mib = (bytes / (1024 * 1024)).toFixed(1);
  return wholeFile(
    `is ${mib} MiB: a suite file may be at most ${MAX_SUITE_FILE_BYTES / (1024 * 1024)} MiB ` +
      "(split it, or let scenarios share settings at the top)",
  );
}

/** The raw value of a suite file's bytes; a SuiteFileError with every problem otherwise. */
export function readSuiteText(file: string, bytes: Uint8Array): SuiteText {
  const tooBig = sizeProblem(bytes.length);
  if (tooBig) throw new SuiteFileError(file, [tooBig]);
  const text = new TextDecoder().decode(bytes);
  const lineCounter = new LineCounter();
  let doc: Document;
  try {
    doc = parseDocument(text, { lineCounter, merge: true, prettyErrors: false });
  } catch (error) {
    throw tooDeep(file, error);
  }
  const problems = new Problems(positionsIn(doc, lineCounter));
  const located = (message: string, offset: number): SuiteProblem => {
    const { line, col } = lineCounter.linePos(offset);
    return { path: "", message, line, column: col };
  };
  let raw: unknown;
  if (file.endsWith(".json")) {
    try {
      raw = JSON.parse(text);
    } catch (error) {
      if (error instanceof RangeError) throw tooDeep(file, error);
      problems.list.push(wholeFile(`is not JSON: ${(error as Error).message}`));
    }
    // JSON.parse keeps the last of two equal keys without a word; YAML's reading of the same
    // text says where the second one is.
    for (const error of doc.errors) {
      if (error.code === "DUPLICATE_KEY") {
        problems.list.push(
          located(`is not usable JSON: ${firstLine(error.message)}`, error.pos[0]),
        );
      }
    }
  } else {
    for (const error of doc.errors) {
      problems.list.push(located(`is not valid YAML: ${firstLine(error.message)}`, error.pos[0]));
    }
    if (problems.list.length === 0) {
      const alias = aliasProblem(doc, problems);
      if (alias === null) {
        try {
          // Measured above: expanding every alias stays within MAX_SUITE_VALUES.
          raw = doc.toJS({ maxAliasCount: -1 });
        } catch (error) {
          throw tooDeep(file, error);
        }
      }
    }
  }
  if (problems.list.length === 0) addNulProblems(raw, [], problems);
  if (problems.list.length > 0) throw new SuiteFileError(file, problems.sorted());
  return { raw, positions: problems.positions! };
}

function firstLine(text: string): string {
  return text.split("\n")[0];
}

/** A parser's own recursion ran out of stack: the file nests deeper than any suite does. */
function tooDeep(file: string, error: unknown): unknown {
  if (!(error instanceof RangeError)) return error;
  return new SuiteFileError(file, [wholeFile("is nested too deeply to be read")]);
}

type YamlNode = unknown;

/**
 * Adds a problem where the document, its aliases expanded, would hold more than
 * MAX_SUITE_VALUES values, or where an alias is used inside the value it names; true if so.
 * Each node is measured once, so this is linear in the text however far the aliases multiply.
 */
function aliasProblem(doc: Document, problems: Problems): true | null {
  const sizes = new Map<YamlNode, number>();
  const open = new Set<YamlNode>();
  let selfAlias: YamlNode = null;
  const limit = MAX_SUITE_VALUES + 1;
  const sizeOf = (node: YamlNode): number => {
    if (node === null || node === undefined || isScalar(node)) return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    if (open.has(node)) return limit;
    open.add(node);
    let size = 1;
    if (isAlias(node)) {
      const source = node.resolve(doc);
      if (source !== undefined && open.has(source)) {
        selfAlias ??= node;
        size = limit;
      } else {
        size = sizeOf(source);
      }
    } else if (isPair(node)) {
      size = sizeOf(node.key) + sizeOf(node.value);
    } else if (isMap(node) || isSeq(node)) {
      for (const item of node.items) {
        size += sizeOf(item);
        if (size >= limit) break;
      }
    }
    open.delete(node);
    size = Math.min(size, limit);
    sizes.set(node, size);
    return size;
  };
  const total = sizeOf(doc.contents);
  if (selfAlias !== null) {
    const alias = selfAlias as { source: string; range?: [number, number, number] };
    problems.list.push({
      path: "",
      message: `the alias *${alias.source} is used inside the value it names: it would never end`,
      ...lineAndColumn(problems, alias.range),
    });
    return true;
  }
  if (total < limit) return null;
  // Down to the value that grows past the limit by itself (the last level of a billion laughs).
  let node: YamlNode = doc.contents;
  const path: Segment[] = [];
  while (true) {
    let next: [YamlNode, Segment] | null = null;
    if (isMap(node)) {
      for (const pair of node.items) {
        if (sizeOf(pair.value) >= limit) {
          next = [pair.value, String(isScalar(pair.key) ? pair.key.value : pair.key)];
          break;
        }
      }
    } else if (isSeq(node)) {
      const at = node.items.findIndex((item) => sizeOf(item) >= limit);
      if (at >= 0) next = [node.items[at], at];
    }
    if (next === null || isAlias(next[0])) break;
    [node, path[path.length]] = next;
  }
  problems.add(
    path,
    `holds more than ${MAX_SUITE_VALUES.toLocaleString("en")} values once its aliases are ` +
      "expanded: anchors used over and over (a YAML bomb?)",
  );
  return true;
}

function lineAndColumn(
  problems: Problems,
  range: [number, number, number] | undefined,
): { line: number | null; column: number | null } {
  const at = range ? problems.positions?.offset(range[0]) : null;
  return { line: at?.line ?? null, column: at?.column ?? null };
}

/** Every text (value or key) holding a NUL character, at its path. */
function addNulProblems(value: unknown, path: Segment[], problems: Problems): void {
  if (typeof value === "string") {
    if (value.includes("\0")) problems.add(path, "holds a NUL character (\\0)");
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => addNulProblems(item, [...path, i], problems));
    return;
  }
  if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes("\0")) problems.add([...path, key], "holds a NUL character (\\0)");
      else addNulProblems(item, [...path, key], problems);
    }
  }
}
