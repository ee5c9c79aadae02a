// A suite run's cells read straight from its states (begun.jsonl's last line of each row, or an
// older reins's state file), for `reins suite compare`: only the fields a cell holds are checked
// (by hand, not by the zod schema of state.ts, which costs as much as the JSON.parse itself over
// thousands of rows). A state those checks refuse is read again through the schema, so what is
// wrong with it is said in the state files' own words.
import type { DataRoot } from "../store/mod.ts";
import { joinPath } from "../core/paths.ts";
import { type Cell, cellsOf } from "./aggregate.ts";
import { CHECK_OUTCOMES, type CheckResult, SCENARIO_STATUSES } from "./results.ts";
import {
  type BegunStates,
  hasScenarioFiles,
  readBegun,
  readScenarioState,
  scenarioPath,
  type SuiteRunFile,
} from "./state.ts";

const STATUSES = new Set<unknown>(SCENARIO_STATUSES);
const OUTCOMES = new Set<unknown>(CHECK_OUTCOMES);
const KINDS = new Set<unknown>(["file", "regex", "command", "tool", "cost", "judge"]);

type Loose = Record<string, unknown>;

const isObject = (v: unknown): v is Loose =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const numberOrNull = (v: unknown) => v === null || (typeof v === "number" && Number.isFinite(v));
const stringOrNull = (v: unknown) => v === null || typeof v === "string";

function isCheck(v: unknown): v is CheckResult {
  return isObject(v) && typeof v.name === "string" && KINDS.has(v.kind) &&
    OUTCOMES.has(v.outcome) &&
    typeof v.met === "boolean" && typeof v.checkpoint === "boolean" &&
    typeof v.detail === "string" &&
    stringOrNull(v.reason ?? null);
}

/** The cell of one parsed state file, or null when a field a cell reads is not what it should be. */
function cellOf(raw: unknown, instanceId: string): Cell | null {
  if (!isObject(raw) || raw.type !== "reins.suite-scenario" || !isObject(raw.instance)) return null;
  const instance = raw.instance;
  if (instance.id !== instanceId || typeof instance.key !== "string") return null;
  if (!Number.isInteger(instance.repeat) || !STATUSES.has(raw.status)) return null;
  if (!stringOrNull(raw.reason) || !numberOrNull(raw.costUsd) || !numberOrNull(raw.durationMs)) {
    return null;
  }
  if (!Array.isArray(raw.checks) || !raw.checks.every(isCheck)) return null;
  if (raw.tokens !== undefined && !numberOrNull(raw.tokens)) return null;
  return cellsOf([raw as never])[0];
}

/**
 * begun.jsonl's last line of each scenario, parsed but not checked; a torn last line is left out
 * (readBegun's rules). A line that is not JSON is said by the schema's reader, as `suite show`
 * says it: a damaged journal is never read past (regression: a row whose last line was damaged
 * was read from the line before, still running, so compare counted its finished play as none).
 */
function rawBegun(root: DataRoot, dir: string): Map<string, unknown> {
  const raws = new Map<string, unknown>();
  const text = root.readText(joinPath(dir, "begun.jsonl"));
  if (text === null) return raws;
  const lines = text.split("\n");
  lines.pop();
  for (const line of lines) {
    if (line === "") continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      readBegun(root, dir); // throws, naming the line
      throw new Error(`begun.jsonl of ${dir} has a line that is not JSON`);
    }
    const id = isObject(raw) && isObject(raw.instance) ? raw.instance.id : undefined;
    if (typeof id === "string") raws.set(id, raw);
  }
  return raws;
}

/** The cells of a suite run, in its order; a scenario not begun is an unfinished cell. */
export function readCells(root: DataRoot, header: SuiteRunFile): Cell[] {
  const dir = root.layout.suite(header.id);
  // begun.jsonl, read once: the states of suite runs now, of cells in flight in older ones.
  const raws = rawBegun(root, dir);
  let begun: BegunStates | undefined;
  const files = hasScenarioFiles(dir);
  return header.instances.map((instance) => {
    // An older reins's state file, where there is one.
    const text = files ? root.readText(scenarioPath(dir, instance.id)) : null;
    let raw: unknown = raws.get(instance.id);
    if (text !== null) {
      try {
        raw = JSON.parse(text);
      } catch {
        raw = undefined; // said below, by the schema's reader
      }
    }
    const cell = raw === undefined ? null : cellOf(raw, instance.id);
    // Not begun, or refused above: the schema's reader makes the pending state or says what is wrong.
    return cell ??
      cellsOf([readScenarioState(root, dir, instance, begun ??= readBegun(root, dir), files)])[0];
  });
}
