// Reading a suite file: YAML or JSON text → the checked, resolved suite the runner plays. Every
// problem is collected, not just the first, each with its exact path (`scenarios[2].checks[0].regex:
// invalid regular expression`) and, where the text has one, its line and column. Paths in the file
// (workdir, exec, mock: models) are resolved against the file's folder here, so nothing later
// depends on the directory reins was started in.
import { createHash } from "node:crypto";
import type { z } from "zod";
import type { DriverName } from "../core/mod.ts";
import { NotFoundError, UsageError } from "../core/errors.ts";
import { deviceNameOf } from "../core/ids.ts";
import { dirnameOf, resolvePath } from "../core/paths.ts";
import { isSandboxRefusal } from "../core/sandbox.ts";
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
  SuiteAgent,
  SuiteFile,
  Timeouts,
} from "./format.ts";
import { compileRegex } from "./regex.ts";
import { formatPath, Problems, type Segment, SuiteFileError } from "./problems.ts";
import { MAX_SUITE_FILE_BYTES, readSuiteText, sizeProblem } from "./suite_text.ts";

export { formatPath, formatProblem, SuiteFileError, type SuiteProblem } from "./problems.ts";

export type Conversation =
  | { kind: "scripted"; turns: string[] }
  | { kind: "simulated"; user: SimulatedUser };

/** One scenario with the suite's defaults applied and its paths made absolute. */
/** What an agent of `agents:` makes of one scenario: the fields it sets of the scenario's spec. */
export type AgentPart = Pick<
  ScenarioSpec,
  "driver" | "exec" | "model" | "args" | "approve" | "budget" | "env"
>;

export interface ScenarioSpec {
  /** Its place in the file, from 0. */
  index: number;
  key: string;
  /**
   * The agent of `agents:` this spec is played by (cellSpec), or null: the scenario's own. A
   * matrix scenario's own spec carries its first agent's part, so that what reads it alone (the
   * sandbox's needs of one cell) reads a real agent.
   */
  agent: string | null;
  /** In a suite with `agents:`, each agent's part of this scenario, in the file's order. */
  perAgent: Record<string, AgentPart> | null;
  name: string;
  persona: Record<string, unknown>;
  instruction: string;
  tests: string;
  driver: DriverName;
  exec: string | null;
  model: string | null;
  /** A harness CLI's extra arguments (`args`), after the config's. */
  args: string[];
  approve: "auto" | "ask" | "deny";
  budget: Budget;
  turnSeconds: number | null;
  scenarioSeconds: number | null;
  retryErrors: number;
  /** Absolute; null: each scenario starts in an empty directory. */
  workdir: string | null;
  setup: string[];
  env: Record<string, string>;
  /** Confined (true), not (false), or as the command line and config say (null). */
  confine: boolean | null;
  allowHosts: string[];
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
  /** The agents of `agents:` in the file's order; null: the suite has none (no matrix). */
  agents: string[] | null;
  /** `epochs:`; null: not given (one, unless --epochs says). */
  epochs: number | null;
  /** How the platform shows the calls. */
  modality: "text" | "voice";
  scenarios: ScenarioSpec[];
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
  if (path.length === 2 && path[0] === "agents") return keysOf(SuiteAgent);
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
    // A key of a record (an agent's name) that its pattern refuses: the pattern's own words.
    const message = issue.code === "invalid_key"
      ? issue.issues[0]?.message ?? issue.message
      : issue.message;
    problems.add(path, missing ? "is required" : lowerFirst(message));
  }
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
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

/** What is at `path` (links followed), or why it cannot be told: a loop of links, say. */
function pathKind(path: string): "file" | "directory" | "other" | "missing" | { error: string } {
  try {
    const info = Deno.statSync(path);
    return info.isDirectory ? "directory" : info.isFile ? "file" : "other";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return "missing";
    }
    if (isSandboxRefusal(error)) throw error;
    // ELOOP, EACCES, a name too long: said at the line that names the path.
    return { error: (error as Error).message.replace(/ \(os error \d+\)/, "").split(":")[0] };
  }
}

function checkModelFile(spec: string, path: readonly Segment[], problems: Problems): void {
  if (!spec.startsWith("mock:")) return;
  const file = spec.slice(5);
  const kind = pathKind(file);
  if (typeof kind === "object") {
    problems.add(path, `the mock model file ${file} cannot be read: ${lowerFirst(kind.error)}`);
  } else if (kind !== "file") {
    problems.add(path, `the mock model file ${file} does not exist`);
  }
}

/** The keys that say what the agent is: an agent's of `agents:`, or a scenario's own. */
const AGENT_KEYS = ["driver", "exec", "model", "args"] as const;

/**
 * An agent's exec, model and args for `driver`, checked (each problem at the path that set it),
 * relative paths resolved from the suite file's folder.
 */
function agentFields(
  given: { driver: DriverName; exec?: string; model?: string; args?: string[] },
  paths: Record<"driver" | "exec" | "model" | "args", readonly Segment[]>,
  problems: Problems,
  suiteDir: string,
): Pick<ScenarioSpec, "exec" | "model" | "args"> {
  const { driver } = given;
  const exec = given.exec ?? null;
  const model = given.model ?? null;
  const args = given.args ?? [];
  if (driver === "command" && exec === null) {
    problems.add(paths.driver, "the command driver needs exec");
  }
  if (driver !== "command" && exec !== null) {
    problems.add(paths.exec, `exec goes with driver: command, not ${driver}`);
  }
  if (driver === "command" && model !== null) {
    problems.add(paths.model, "model does not go with driver: command");
  }
  const harness = driver !== "loop" && driver !== "command";
  if (!harness && args.length > 0) {
    problems.add(
      paths.args,
      `args go with a harness driver (claude, codex, gemini, opencode), not ${driver}`,
    );
  }
  if (driver === "opencode" && model !== null && !/^[^/\s]+\/\S+$/.test(model)) {
    problems.add(paths.model, "opencode's model must be PROVIDER/MODEL");
  }
  if (driver === "loop" && model !== null && model !== "demo") {
    if (!/^(mock|replay|openai):.+$/.test(model)) {
      problems.add(
        paths.model,
        "the loop's model must be demo, mock:FILE, replay:RUN or openai:MODEL",
      );
    }
  }
  const loopModel = driver === "loop" && model !== null ? resolveModelPath(model, suiteDir) : model;
  if (driver === "loop" && loopModel !== null) checkModelFile(loopModel, paths.model, problems);
  return { exec: exec === null ? null : resolveExec(exec, suiteDir), model: loopModel, args };
}

/** An agent of `agents:` with its exec, model and args checked and resolved. */
type ResolvedAgent =
  & Pick<ScenarioSpec, "driver" | "exec" | "model" | "args">
  & Pick<SuiteAgent, "approve" | "budget" | "env">;

/** The agents of `agents:`, checked, in the file's order; null when the file has none. */
function resolveAgents(
  file: SuiteFile,
  problems: Problems,
  suiteDir: string,
): [string, ResolvedAgent][] | null {
  if (file.agents === undefined) return null;
  const entries = Object.entries(file.agents);
  if (entries.length === 0) {
    problems.add(["agents"], "needs at least one agent (or leave agents out)");
    return null;
  }
  for (const key of AGENT_KEYS) {
    if (file[key] !== undefined) {
      problems.add([key], `${key} goes in agents: (the suite is a matrix of its agents)`);
    }
  }
  const seen = new Map<string, string>();
  return entries.map(([name, agent]) => {
    const at = (key: string): Segment[] => ["agents", name, key];
    // By lower case, as scenario keys: the name goes in state file names.
    const clash = seen.get(name.toLowerCase());
    if (clash !== undefined) {
      problems.add(["agents", name], `"${name}" differs from the agent "${clash}" only in case`);
    }
    seen.set(name.toLowerCase(), name);
    const fields = agentFields(
      agent,
      { driver: at("driver"), exec: at("exec"), model: at("model"), args: at("args") },
      problems,
      suiteDir,
    );
    const resolved: ResolvedAgent = {
      driver: agent.driver,
      ...fields,
      approve: agent.approve,
      budget: agent.budget,
      env: agent.env,
    };
    return [name, resolved];
  });
}

/**
 * The spec of one cell of a matrix: the scenario played by `agent` (its part over the scenario's
 * spec); the scenario's own spec when `agent` is null. A name the scenario has no part for is a
 * suite run of another version of the file: an internal error here, refused earlier by the
 * digest checks.
 */
export function cellSpec(spec: ScenarioSpec, agent: string | null): ScenarioSpec {
  if (agent === null || spec.perAgent === null) return spec;
  const part = spec.perAgent[agent];
  if (part === undefined) {
    throw new UsageError(`The suite file has no agent ${JSON.stringify(agent)}`, {
      hint: `its agents are ${Object.keys(spec.perAgent).join(", ")}`,
    });
  }
  return { ...spec, ...part, agent };
}

/** Builds each scenario from the file's raw value (already structurally valid). */
function resolveScenarios(
  file: SuiteFile,
  raw: unknown,
  problems: Problems,
  suiteDir: string,
): ScenarioSpec[] {
  const agents = resolveAgents(file, problems, suiteDir);
  const suiteChecks: Check[] = [];
  (file.checks ?? []).forEach((check, j) => {
    const parsed = parseCheck(check, ["checks", j], problems, raw, suiteDir);
    if (parsed) suiteChecks.push(parsed);
  });
  // By lower case: a key names its state file, and macOS and Windows do not tell case apart.
  const seenKeys = new Map<string, number>();
  const out: ScenarioSpec[] = [];
  file.scenarios.forEach((scenario, i) => {
    const at = (...rest: Segment[]) => ["scenarios", i, ...rest];
    const device = deviceNameOf(scenario.key);
    const earlier = seenKeys.get(scenario.key.toLowerCase());
    if (device !== null) {
      // It names the scenario's state file (and its --repeat copies, CON.1): Windows would open
      // the device instead, whatever the case.
      problems.add(
        at("key"),
        `"${scenario.key}" is a device name on Windows (${device.toUpperCase()}): give another key`,
      );
    } else if (earlier !== undefined) {
      const other = file.scenarios[earlier].key;
      problems.add(
        at("key"),
        other === scenario.key
          ? `"${scenario.key}" is also the key of scenarios[${earlier}]`
          : `"${scenario.key}" differs from the key of scenarios[${earlier}] ("${other}") only in case`,
      );
    } else {
      seenKeys.set(scenario.key.toLowerCase(), i);
    }
    // Where an effective value came from, to point a problem at the line that set it.
    const from = (key: keyof SuiteFile & keyof ScenarioFile) =>
      scenario[key] !== undefined ? at(key) : [key];
    let own: AgentPart;
    let perAgent: Record<string, AgentPart> | null = null;
    if (agents === null) {
      const driver = scenario.driver ?? file.driver ?? "loop";
      // The top's exec, model and args go with the top's driver: a scenario that changes the
      // driver gives its own.
      const inherits = driver === (file.driver ?? "loop");
      own = {
        driver,
        ...agentFields(
          {
            driver,
            exec: scenario.exec ?? (inherits ? file.exec : undefined),
            model: scenario.model ?? (inherits ? file.model : undefined),
            args: scenario.args ?? (inherits ? file.args : undefined),
          },
          {
            driver: scenario.driver ? at("driver") : ["driver"],
            exec: from("exec"),
            model: from("model"),
            args: scenario.args !== undefined ? at("args") : ["args"],
          },
          problems,
          suiteDir,
        ),
        approve: scenario.approve ?? file.approve ?? "auto",
        budget: { ...file.budget, ...scenario.budget },
        env: { ...file.env, ...scenario.env },
      };
    } else {
      // The agent is the agents' to say: a scenario's own would leave the comparison unclear.
      for (const key of AGENT_KEYS) {
        if (scenario[key] !== undefined) {
          problems.add(at(key), `${key} goes in agents: (the suite is a matrix of its agents)`);
        }
      }
      perAgent = {};
      for (const [name, agent] of agents) {
        perAgent[name] = {
          driver: agent.driver,
          exec: agent.exec,
          model: agent.model,
          args: agent.args,
          approve: scenario.approve ?? agent.approve ?? file.approve ?? "auto",
          budget: { ...file.budget, ...agent.budget, ...scenario.budget },
          env: { ...file.env, ...agent.env, ...scenario.env },
        };
      }
      own = perAgent[agents[0][0]];
    }

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
    const workdirKind = workdir === null ? null : pathKind(workdir);
    if (workdirKind !== null && typeof workdirKind === "object") {
      problems.add(from("workdir"), `${workdir} cannot be read: ${lowerFirst(workdirKind.error)}`);
    } else if (workdirKind !== null && workdirKind !== "directory") {
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
      ...own,
      agent: agents === null ? null : agents[0][0],
      perAgent,
      turnSeconds: timeouts.turnSeconds ?? null,
      scenarioSeconds: timeouts.scenarioSeconds ?? null,
      retryErrors: (scenario.retry ?? file.retry)?.errors ?? 0,
      workdir,
      setup: scenario.setup ?? file.setup ?? [],
      confine: scenario.confine ?? file.confine ?? null,
      allowHosts: [...file.allowHosts ?? [], ...scenario.allowHosts ?? []],
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
  const { raw, positions } = readSuiteText(file, bytes);
  const located = new Problems(positions);
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
    agents: parsed.data.agents === undefined ? null : Object.keys(parsed.data.agents),
    epochs: parsed.data.epochs ?? null,
    modality: parsed.data.modality ?? "text",
    scenarios,
  };
}

/** Reads and checks the suite file at `path` (relative to the working directory). */
export async function loadSuite(path: string): Promise<Suite> {
  const file = resolvePath(path);
  let bytes: Uint8Array;
  try {
    bytes = await readAtMost(file, MAX_SUITE_FILE_BYTES);
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

/** The file's bytes, refused unread past `limit` (a FIFO or a device is no suite file either). */
async function readAtMost(file: string, limit: number): Promise<Uint8Array> {
  const info = await Deno.stat(file);
  if (info.isDirectory) throw new Deno.errors.IsADirectory(file);
  if (!info.isFile) {
    throw new SuiteFileError(file, [{
      path: "",
      message: "is not a regular file",
      line: null,
      column: null,
    }]);
  }
  const tooBig = sizeProblem(info.size);
  if (tooBig) throw new SuiteFileError(file, [tooBig]);
  using handle = await Deno.open(file, { read: true });
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total <= limit) {
    const chunk = new Uint8Array(Math.min(1 << 20, limit + 1 - total));
    const read = await handle.read(chunk);
    if (read === null) break;
    chunks.push(chunk.subarray(0, read));
    total += read;
  }
  // It grew past the limit after the stat: refused as it is now.
  const grown = sizeProblem(total);
  if (grown) throw new SuiteFileError(file, [grown]);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}
