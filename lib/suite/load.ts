// Reading a suite file: YAML or JSON text → the checked, resolved suite the runner plays. Every
// problem is collected, not just the first, each with its exact path (`scenarios[2].checks[0].regex:
// invalid regular expression`) and, where the text has one, its line and column. Paths in the file
// (workdir, exec, mock: models) are resolved against the file's folder here, so nothing later
// depends on the directory reins was started in.
import { createHash } from "node:crypto";
import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import type { DriverName } from "../core/config.ts";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { dirnameOf, resolvePath } from "../core/paths.ts";
import { nearest } from "../core/suggest.ts";
import {
  Budget,
  type Check,
  CHECK_KINDS,
  type CheckKind,
  JudgeCheck,
  Retry,
  ScenarioFile,
  SimulatedUser,
  SuiteFile,
  Timeouts,
} from "./format.ts";
import { compileRegex } from "./regex.ts";

export type Conversation =
  | { kind: "scripted"; turns: string[] }
  | { kind: "simulated"; user: SimulatedUser };

/** One scenario with the suite's defaults applied and its paths made absolute. */
export interface ScenarioSpec {
  /** Its place in the file, from 0. */
  index: number;
  key: string;
  name: string;
  persona: Record<string, unknown>;
  instruction: string;
  tests: string;
  driver: DriverName;
  exec: string | null;
  model: string | null;
  approve: "auto" | "ask" | "deny";
  budget: Budget;
  turnSeconds: number | null;
  scenarioSeconds: number | null;
  retryErrors: number;
  /** Absolute; null: each scenario starts in an empty directory. */
  workdir: string | null;
  setup: string[];
  env: Record<string, string>;
  conversation: Conversation;
  /** Why it is not run, or null. */
  skip: string | null;
  checks: Check[];
}

export interface Suite {
  name: string;
  description: string | null;
  /** The suite file, absolute. */
  file: string;
  /** `sha256:<hex>` of the file's bytes. */
  digest: string;
  jobs: number | null;
  /** How the platform shows the calls. */
  modality: "text" | "voice";
  scenarios: ScenarioSpec[];
}

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

type Segment = string | number;

/** `["scenarios", 2, "checks", 0, "regex"]` → `scenarios[2].checks[0].regex`. */
export function formatPath(path: readonly Segment[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? part : `.${part}`;
  }
  return out;
}

interface Positions {
  /** Where the value at `path` is; with `key`, where its key is written. */
  at(
    path: readonly Segment[],
    options?: { key?: boolean },
  ): { line: number; column: number } | null;
}

type Ranged = { range?: [number, number, number] };

function positionsOf(text: string): Positions {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true });
  const position = (node: Ranged | null | undefined) => {
    if (!node?.range) return null;
    const { line, col } = lineCounter.linePos(node.range[0]);
    return { line, column: col };
  };
  return {
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

class Problems {
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

// The keys each kind of object takes, to suggest one for a misspelt key.
const CHECK_SCHEMAS = new Map<string, z.ZodObject>(
  CHECK_KINDS.map(([key, schema]) => [key, schema as unknown as z.ZodObject]),
);
function knownKeys(path: readonly Segment[], raw: unknown): string[] {
  const last = path[path.length - 1];
  const parent = path[path.length - 2];
  const keysOf = (schema: z.ZodObject) => Object.keys(schema.shape);
  if (path.length === 0) return keysOf(SuiteFile);
  if (path.length === 2 && path[0] === "scenarios") return keysOf(ScenarioFile);
  if (typeof last === "number" && parent === "checks") {
    const check = valueAt(raw, path) as Record<string, unknown> | undefined;
    const kind = CHECK_KINDS.find(([key]) => check && key in check)?.[0];
    return kind ? keysOf(CHECK_SCHEMAS.get(kind)!) : CHECK_KINDS.map(([key]) => key);
  }
  switch (last) {
    case "budget":
      return keysOf(Budget);
    case "timeouts":
      return keysOf(Timeouts);
    case "retry":
      return keysOf(Retry);
    case "user":
      return keysOf(SimulatedUser);
    case "judge":
      return keysOf(JudgeCheck.shape.judge);
    default:
      return [];
  }
}

function valueAt(raw: unknown, path: readonly Segment[]): unknown {
  let value = raw;
  for (const part of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function addZodIssues(
  problems: Problems,
  error: z.ZodError,
  prefix: readonly Segment[],
  raw: unknown,
): void {
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path as Segment[]];
    if (issue.code === "unrecognized_keys") {
      const candidates = knownKeys(path, raw);
      for (const key of issue.keys) {
        const guess = nearest(key, candidates);
        problems.add(
          [...path, key],
          `unknown key${guess ? ` (did you mean '${guess}'?)` : ""}`,
          { key: true },
        );
      }
      continue;
    }
    const missing = issue.code === "invalid_type" && valueAt(raw, path) === undefined;
    problems.add(path, missing ? "is required" : lowerFirst(issue.message));
  }
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** Parses the text as the file's extension says (.json: JSON; anything else: YAML). */
function parseText(file: string, text: string, problems: Problems): unknown {
  if (file.endsWith(".json")) {
    try {
      return JSON.parse(text);
    } catch (error) {
      problems.add([], `is not JSON: ${(error as Error).message}`);
      return undefined;
    }
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true, prettyErrors: false });
  for (const error of doc.errors) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    problems.list.push({
      path: "",
      message: `is not valid YAML: ${error.message.split("\n")[0]}`,
      line,
      column: col,
    });
  }
  if (doc.errors.length > 0) return undefined;
  return doc.toJS({ maxAliasCount: 1000 });
}

function defaultCheckName(check: Check): string {
  switch (check.kind) {
    case "file":
      return `file ${check.file}`;
    case "regex":
      return `${check.absent ? "no " : ""}${check.in} text /${check.regex}/`;
    case "command":
      return check.command;
    case "tool":
      return `${check.absent ? "no " : ""}tool ${check.tool}`;
    case "cost":
      return `cost at most $${check.maxUsd}`;
    case "judge":
      return "judge";
  }
}

const KIND_OF_KEY: Record<typeof CHECK_KINDS[number][0], CheckKind> = {
  judge: "judge",
  command: "command",
  tool: "tool",
  maxUsd: "cost",
  file: "file",
  regex: "regex",
};

/** One raw check → a typed one, or null with its problems added. */
function parseCheck(
  raw: Record<string, unknown>,
  path: readonly Segment[],
  problems: Problems,
  fileRaw: unknown,
  suiteDir: string,
): Check | null {
  const found = CHECK_KINDS.find(([key]) => key in raw);
  if (!found) {
    problems.add(
      path,
      `is not a check: give one of ${CHECK_KINDS.map(([key]) => key).join(", ")}`,
    );
    return null;
  }
  const [key, schema] = found;
  const parsed = (schema as z.ZodType).safeParse(raw);
  if (!parsed.success) {
    addZodIssues(problems, parsed.error, path, fileRaw);
    return null;
  }
  const check = { ...(parsed.data as object), kind: KIND_OF_KEY[key] } as Check;
  let ok = true;
  const regexAt = (source: string, where: Segment) => {
    const compiled = compileRegex(source);
    if (!compiled.ok) {
      problems.add([...path, where], compiled.reason);
      ok = false;
    }
  };
  switch (check.kind) {
    case "regex":
      regexAt(check.regex, "regex");
      break;
    case "file":
      if (check.contains !== undefined && check.regex !== undefined) {
        problems.add([...path, "regex"], "give contains or regex, not both");
        ok = false;
      }
      if (check.regex !== undefined) regexAt(check.regex, "regex");
      if (check.file.startsWith("/") || check.file.split("/").includes("..")) {
        problems.add([...path, "file"], "must be a path inside the scenario's working directory");
        ok = false;
      }
      break;
    case "judge":
      check.judge = { ...check.judge, model: resolveModelPath(check.judge.model, suiteDir) };
      break;
    case "command":
    case "tool":
    case "cost":
      break;
  }
  if (!ok) return null;
  check.name ??= defaultCheckName(check);
  return check;
}

/** `mock:relative.json` → `mock:/abs/relative.json`, from the suite file's folder. */
export function resolveModelPath(spec: string, suiteDir: string): string {
  return spec.startsWith("mock:") ? `mock:${resolvePath(spec.slice(5), suiteDir)}` : spec;
}

/** A relative program (`./agents/shop.sh`) is taken from the suite file's folder. */
function resolveExec(exec: string, suiteDir: string): string {
  const match = /^(\s*)(\.{1,2}\/\S*)(.*)$/s.exec(exec);
  if (!match) return exec;
  return `${match[1]}${resolvePath(match[2], suiteDir)}${match[3]}`;
}

function fileExists(path: string): "file" | "directory" | null {
  try {
    const info = Deno.statSync(path);
    return info.isDirectory ? "directory" : info.isFile ? "file" : null;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw error;
  }
}

function checkModelFile(spec: string, path: readonly Segment[], problems: Problems): void {
  if (!spec.startsWith("mock:")) return;
  const file = spec.slice(5);
  if (fileExists(file) !== "file") problems.add(path, `the mock model file ${file} does not exist`);
}

/** Builds each scenario from the file's raw value (already structurally valid). */
function resolveScenarios(
  file: SuiteFile,
  raw: unknown,
  problems: Problems,
  suiteDir: string,
): ScenarioSpec[] {
  const suiteChecks: Check[] = [];
  (file.checks ?? []).forEach((check, j) => {
    const parsed = parseCheck(check, ["checks", j], problems, raw, suiteDir);
    if (parsed) suiteChecks.push(parsed);
  });
  const seenKeys = new Map<string, number>();
  const out: ScenarioSpec[] = [];
  file.scenarios.forEach((scenario, i) => {
    const at = (...rest: Segment[]) => ["scenarios", i, ...rest];
    const earlier = seenKeys.get(scenario.key);
    if (earlier !== undefined) {
      problems.add(at("key"), `"${scenario.key}" is also the key of scenarios[${earlier}]`);
    } else {
      seenKeys.set(scenario.key, i);
    }
    // Where an effective value came from, to point a problem at the line that set it.
    const from = (key: keyof SuiteFile & keyof ScenarioFile) =>
      scenario[key] !== undefined ? at(key) : [key];
    const driver = scenario.driver ?? file.driver ?? "loop";
    // The top's exec and model go with the top's driver: a scenario that changes the driver
    // gives its own.
    const inherits = driver === (file.driver ?? "loop");
    const exec = scenario.exec ?? (inherits ? file.exec : undefined) ?? null;
    const model = scenario.model ?? (inherits ? file.model : undefined) ?? null;
    if (driver === "command" && exec === null) {
      problems.add(scenario.driver ? at("driver") : ["driver"], "the command driver needs exec");
    }
    if (driver !== "command" && exec !== null) {
      problems.add(from("exec"), `exec goes with driver: command, not ${driver}`);
    }
    if (driver === "command" && model !== null) {
      problems.add(from("model"), "model does not go with driver: command");
    }
    if (driver === "loop" && model !== null && model !== "demo") {
      if (!/^(mock|replay|openai):.+$/.test(model)) {
        problems.add(
          from("model"),
          "the loop's model must be demo, mock:FILE, replay:RUN or openai:MODEL",
        );
      }
    }
    const loopModel = driver === "loop" && model !== null
      ? resolveModelPath(model, suiteDir)
      : model;
    if (driver === "loop" && loopModel !== null) checkModelFile(loopModel, from("model"), problems);

    let conversation: Conversation | null = null;
    if (scenario.turns !== undefined && scenario.user !== undefined) {
      problems.add(at("user"), "give turns or user, not both");
    } else if (scenario.turns !== undefined) {
      conversation = { kind: "scripted", turns: scenario.turns };
    } else {
      const user = scenario.user ?? file.user;
      if (user === undefined) {
        problems.add(at(), "needs turns (scripted user turns) or user (a simulated user)");
      } else {
        const resolved = { ...user, model: resolveModelPath(user.model, suiteDir) };
        checkModelFile(resolved.model, [...from("user"), "model"], problems);
        conversation = { kind: "simulated", user: resolved };
      }
    }

    const checks: Check[] = [];
    (scenario.checks ?? []).forEach((check, j) => {
      const parsed = parseCheck(check, at("checks", j), problems, raw, suiteDir);
      if (parsed) checks.push(parsed);
    });
    const names = new Map<string, string>();
    const all = [...checks, ...suiteChecks];
    all.forEach((check, j) => {
      const where = j < checks.length ? at("checks", j) : ["checks", j - checks.length];
      const clash = names.get(check.name);
      if (clash !== undefined) {
        problems.add([...where, "name"], `"${check.name}" is also the name of ${clash}`);
      } else {
        names.set(check.name, formatPath(where));
      }
      if (check.kind === "judge") {
        checkModelFile(check.judge.model, [...where, "judge", "model"], problems);
      }
    });

    const workdirRaw = scenario.workdir ?? file.workdir ?? null;
    const workdir = workdirRaw === null ? null : resolvePath(workdirRaw, suiteDir);
    if (workdir !== null && fileExists(workdir) !== "directory") {
      problems.add(from("workdir"), `${workdir} is not a directory`);
    }
    const timeouts = { ...file.timeouts, ...scenario.timeouts };
    const skip = scenario.skip === undefined || scenario.skip === false
      ? null
      : scenario.skip === true
      ? "skipped in the suite file"
      : scenario.skip;
    if (conversation === null) return;
    out.push({
      index: i,
      key: scenario.key,
      name: scenario.name ?? scenario.key,
      persona: scenario.persona ?? {},
      instruction: scenario.instruction ?? "",
      tests: scenario.tests ?? "",
      driver,
      exec: exec === null ? null : resolveExec(exec, suiteDir),
      model: loopModel,
      approve: scenario.approve ?? file.approve ?? "auto",
      budget: { ...file.budget, ...scenario.budget },
      turnSeconds: timeouts.turnSeconds ?? null,
      scenarioSeconds: timeouts.scenarioSeconds ?? null,
      retryErrors: (scenario.retry ?? file.retry)?.errors ?? 0,
      workdir,
      setup: scenario.setup ?? file.setup ?? [],
      env: { ...file.env, ...scenario.env },
      conversation,
      skip,
      checks: all,
    });
  });
  return out;
}

/** Every check object of a raw file, with its path, whatever else is wrong with the file. */
function rawChecks(raw: unknown): [Segment[], Record<string, unknown>][] {
  const found: [Segment[], Record<string, unknown>][] = [];
  const isObject = (value: unknown): value is Record<string, unknown> =>
    value !== null && typeof value === "object" && !Array.isArray(value);
  const take = (checks: unknown, prefix: Segment[]) => {
    if (!Array.isArray(checks)) return;
    checks.forEach((check, j) => {
      if (isObject(check)) found.push([[...prefix, "checks", j], check]);
    });
  };
  if (!isObject(raw)) return found;
  take(raw.checks, []);
  if (Array.isArray(raw.scenarios)) {
    raw.scenarios.forEach((scenario, i) => {
      if (isObject(scenario)) take(scenario.checks, ["scenarios", i]);
    });
  }
  return found;
}

/** Checks a suite file's text; `file` (absolute) names it and anchors its relative paths. */
export function parseSuite(file: string, bytes: Uint8Array): Suite {
  const text = new TextDecoder().decode(bytes);
  const problems = new Problems(null);
  const raw = parseText(file, text, problems);
  if (problems.list.length > 0) throw new SuiteFileError(file, problems.list);
  const located = new Problems(positionsOf(text));
  const parsed = SuiteFile.safeParse(raw);
  if (!parsed.success) {
    addZodIssues(located, parsed.error, [], raw);
    // The checks are checked apart from the rest, so their problems are told now too.
    for (const [path, check] of rawChecks(raw)) {
      parseCheck(check, path, located, raw, dirnameOf(file));
    }
    throw new SuiteFileError(file, located.sorted());
  }
  const scenarios = resolveScenarios(parsed.data, raw, located, dirnameOf(file));
  if (located.list.length > 0) throw new SuiteFileError(file, located.sorted());
  return {
    name: parsed.data.suite,
    description: parsed.data.description ?? null,
    file,
    digest: sha256(bytes),
    jobs: parsed.data.jobs ?? null,
    modality: parsed.data.modality ?? "text",
    scenarios,
  };
}

/** Reads and checks the suite file at `path` (relative to the working directory). */
export async function loadSuite(path: string): Promise<Suite> {
  const file = resolvePath(path);
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new NotFoundError(`No suite file ${file}`, {
        hint: "give the path of a suite file (YAML or JSON); see docs/suites.md",
      });
    }
    if (error instanceof Deno.errors.IsADirectory) {
      throw new UsageError(`Cannot read the suite file ${file}: it is a directory`);
    }
    throw error;
  }
  return parseSuite(file, bytes);
}
