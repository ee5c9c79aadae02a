// The suite file's schema: what a person writes (YAML or JSON) to describe a set of scenarios, the
// agent that plays them and the checks that judge them. Every object is strict, so a misspelt key
// is an error rather than a setting silently ignored. Checks are told apart by the key that names
// their kind (`file`, `regex`, `command`, `tool`, `maxUsd`, `judge`); load.ts picks the schema by
// that key so that a mistake is reported against the one kind it was meant to be.
import { z } from "zod";
import { DRIVER_NAMES } from "../core/config.ts";

/** Scenario keys travel as the platform's scenario_key (an HTTP header) and name state files. */
export const SCENARIO_KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,119}$/;

const Text = z.string().min(1, "must not be empty");
const Seconds = z.number().positive("must be more than 0 seconds");

export const Budget = z.object({
  maxUsd: z.number().nonnegative().optional(),
  maxTurns: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  /** The same limits over all of a scenario's turns (their sum), as each turn's are per turn. */
  scenarioMaxUsd: z.number().nonnegative().optional(),
  scenarioMaxTurns: z.number().int().positive().optional(),
  scenarioMaxTokens: z.number().int().positive().optional(),
}).strict();
export type Budget = z.infer<typeof Budget>;

export const Timeouts = z.object({
  /** One turn of the agent (a run): the run fails with "timed out after N s". */
  turnSeconds: Seconds.optional(),
  /** The whole scenario: setup, every turn, the simulated user and the checks. */
  scenarioSeconds: Seconds.optional(),
}).strict();
export type Timeouts = z.infer<typeof Timeouts>;

export const Retry = z.object({
  /** Extra attempts of a scenario that could not run (status error). Failures never retry. */
  errors: z.number().int().min(0).max(10),
}).strict();
export type Retry = z.infer<typeof Retry>;

/** A model for the simulated user or a judge: the loop's mock:FILE, replay:RUN or openai:MODEL. */
const ModelSpec = z.string().regex(
  /^(mock|replay|openai):.+$/,
  "must be mock:FILE, replay:RUN or openai:MODEL",
);

export const SimulatedUser = z.object({
  model: ModelSpec,
  /** User turns at most, the first included; reaching it ends the conversation. */
  maxTurns: z.number().int().positive().max(100).default(8),
  /** A fixed first message; the model writes the rest. */
  opening: Text.optional(),
  /** Base URL of the OpenAI-compatible endpoint for openai:MODEL (default OPENAI_BASE_URL). */
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
}).strict();
export type SimulatedUser = z.infer<typeof SimulatedUser>;

const CheckName = { name: Text.max(255).optional() };

export const FileCheck = z.object({
  ...CheckName,
  /** Relative to the scenario's working directory (its copy of `workdir`). */
  file: Text,
  contains: z.string().optional(),
  regex: z.string().optional(),
  /** The file must not exist (with `contains`/`regex`: must not contain it). */
  absent: z.boolean().optional(),
}).strict();

export const RegexCheck = z.object({
  ...CheckName,
  regex: z.string(),
  /** `final`: the agent's last answer; `any`: anything the agent said in the scenario. */
  in: z.enum(["final", "any"]).default("final"),
  absent: z.boolean().optional(),
}).strict();

export const CommandCheck = z.object({
  ...CheckName,
  /** Run with `sh -c` in the scenario's working directory once the last turn has ended. */
  command: Text,
  exit: z.number().int().min(0).max(255).default(0),
  timeoutSeconds: Seconds.default(60),
}).strict();

export const ToolCheck = z.object({
  ...CheckName,
  /** The tool's name as the harness records it (`write_file`, `Bash`, `issue_refund`). */
  tool: Text,
  /** Passes when the tool was never called, or every call of it was refused. */
  absent: z.boolean().default(false),
}).strict();

export const CostCheck = z.object({
  ...CheckName,
  /** The scenario's agent cost (every turn), in dollars. */
  maxUsd: z.number().nonnegative(),
  /** How an undecidable check (a turn without cost data) counts. */
  unknown: z.enum(["pass", "fail"]).default("fail"),
}).strict();

export const JudgeCheck = z.object({
  ...CheckName,
  judge: z.object({
    model: ModelSpec,
    /** What the judge is asked; it answers a score from 0 to 1 and a reason. */
    rubric: Text,
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  }).strict(),
  /** With it, the score also makes a checkpoint: met when score ≥ pass. */
  pass: z.number().min(0).max(1).optional(),
}).strict();

/** The key that makes each kind, in the order they are recognised. */
export const CHECK_KINDS = [
  ["judge", JudgeCheck],
  ["command", CommandCheck],
  ["tool", ToolCheck],
  ["maxUsd", CostCheck],
  ["file", FileCheck],
  ["regex", RegexCheck],
] as const;
export type CheckKind = "judge" | "command" | "tool" | "cost" | "file" | "regex";

export type Check =
  | ({ kind: "file"; name: string } & Omit<z.infer<typeof FileCheck>, "name">)
  | ({ kind: "regex"; name: string } & Omit<z.infer<typeof RegexCheck>, "name">)
  | ({ kind: "command"; name: string } & Omit<z.infer<typeof CommandCheck>, "name">)
  | ({ kind: "tool"; name: string } & Omit<z.infer<typeof ToolCheck>, "name">)
  | ({ kind: "cost"; name: string } & Omit<z.infer<typeof CostCheck>, "name">)
  | ({ kind: "judge"; name: string } & Omit<z.infer<typeof JudgeCheck>, "name">);

/** Checks stay loose here: load.ts validates each against its kind's schema. */
const RawChecks = z.array(z.record(z.string(), z.unknown()));

/** What a scenario may set for itself, over the suite's defaults. */
const Overridable = {
  driver: z.enum(DRIVER_NAMES).optional(),
  /** The program, for the command driver; a relative path is from the suite file's folder. */
  exec: Text.optional(),
  /** The loop's model spec, or the model a harness is told to use (opencode: PROVIDER/MODEL). */
  model: Text.optional(),
  /** Raw arguments for a harness CLI, after the config's (`reins run --arg`). */
  args: z.array(z.string()).optional(),
  approve: z.enum(["auto", "ask", "deny"]).optional(),
  budget: Budget.optional(),
  timeouts: Timeouts.optional(),
  retry: Retry.optional(),
  /** Copied fresh for each scenario; relative to the suite file's folder. */
  workdir: Text.optional(),
  /** `sh -c` commands run in the copy before the first turn; one failing is a scenario error. */
  setup: z.array(Text).optional(),
  /** Extra environment variables for the agent's process. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "is not a variable name"), z.string())
    .optional(),
  user: SimulatedUser.optional(),
  /** Run this scenario's agent, setup and command checks confined (docs/confinement.md). */
  confine: z.boolean().optional(),
  /** Hosts its confined agent may reach (--allow-host), besides the command line's and config's. */
  allowHosts: z.array(Text).optional(),
};

/** An agent's name in `agents:`: it goes in row names (`key.NAME.N`) and state file names. */
export const AGENT_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * One named agent of a matrix (`agents:`): what runs every scenario as this agent. The same keys
 * as a scenario's, and they mean the same; a scenario's own approve, budget and env go over them.
 */
export const SuiteAgent = z.object({
  driver: z.enum(DRIVER_NAMES),
  exec: Text.optional(),
  model: Text.optional(),
  args: z.array(z.string()).optional(),
  approve: z.enum(["auto", "ask", "deny"]).optional(),
  budget: Budget.optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "is not a variable name"), z.string())
    .optional(),
}).strict();
export type SuiteAgent = z.infer<typeof SuiteAgent>;

export const ScenarioFile = z.object({
  key: z.string().regex(
    SCENARIO_KEY,
    "must be 1 to 120 ASCII letters, digits, '_' or '-', starting with a letter or digit",
  ),
  name: Text.max(255).optional(),
  /** Carried whole to the platform's persona record. */
  persona: z.record(z.string(), z.unknown()).optional(),
  instruction: z.string().optional(),
  tests: z.string().optional(),
  /** Scripted user turns, sent in order. */
  turns: z.array(Text).min(1, "needs at least one turn").optional(),
  /** Not run: `true`, or the reason. */
  skip: z.union([z.boolean(), Text]).optional(),
  checks: RawChecks.optional(),
  ...Overridable,
}).strict();
export type ScenarioFile = z.infer<typeof ScenarioFile>;

export const SuiteFile = z.object({
  /** The platform test's name. */
  suite: Text.max(255).regex(
    // deno-lint-ignore no-control-regex
    /^[^\u0000-\u001f\u007f]*$/,
    "must be one line, without control characters (it names the suite run in every list)",
  ),
  description: z.string().optional(),
  /** Scenarios at once. */
  jobs: z.number().int().positive().max(256).optional(),
  /** How the platform shows the calls: "voice" for spoken scenarios (their recordings play). */
  modality: z.enum(["text", "voice"]).optional(),
  /** Checks every scenario gets, after its own. */
  checks: RawChecks.optional(),
  /** Named agents: every scenario runs against each (a matrix), each cell its own context. */
  agents: z.record(
    z.string().regex(
      AGENT_NAME,
      "must be 1 to 64 ASCII letters, digits, '_' or '-', starting with a letter",
    ),
    SuiteAgent,
  ).optional(),
  /** Times each scenario (each cell) is played, every epoch its own context (--epochs). */
  epochs: z.number().int().positive().max(1000).optional(),
  ...Overridable,
  scenarios: z.array(ScenarioFile).min(1, "needs at least one scenario"),
}).strict();
export type SuiteFile = z.infer<typeof SuiteFile>;
