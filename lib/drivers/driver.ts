// The driver interface: one prompt in, events out. A driver emits the events of the turn (never
// the terminal `completed` / `failed`: the run command appends those from the result it returns)
// and must stop promptly when its signal aborts. It does not touch the run store directly.
import { assertNever } from "../core/assert_never.ts";
import type {
  AgentProcess,
  BudgetLedger,
  DriverName,
  HarnessDriver,
  Settings,
} from "../core/mod.ts";
import { UsageError } from "../core/errors.ts";
import type { AgentFacts, EventInput } from "../store/mod.ts";
import type { Confinement } from "../confine/mod.ts";

/**
 * What to run, by kind of driver: each kind carries only the fields it uses. `loop`: the built-in
 * loop and its model (`mock:FILE`, `replay:RUN`, `openai:MODEL`; null: the demo model); `command`:
 * any program; `harness`: one of the agent CLIs reins knows. `idleTimeoutSeconds`: seconds of
 * silence after which the program counts as hung (null: the driver's default).
 */
export type AgentSpec =
  | { kind: "loop"; model: string | null; baseUrl: string | null }
  | {
    kind: "command";
    exec: string;
    idleTimeoutSeconds: number | null;
    /**
     * What reins writes on the program's stdin: "prompt" (the default) the prompt, then it closes;
     * "events" JSON lines — the prompt, then the answers and decisions to what the program asks
     * for — until the program exits (docs/event-protocol.md).
     */
    stdin?: CommandStdin;
  }
  | {
    kind: "harness";
    driver: HarnessDriver;
    idleTimeoutSeconds: number | null;
    /**
     * This run's model, passed with the CLI's own model flag (opencode: PROVIDER/MODEL), over the
     * config's `drivers.<name>.model`; null or absent: the config's.
     */
    model?: string | null;
    /** This run's raw arguments, appended after the config's `drivers.<name>.args`. */
    args?: readonly string[];
  };

export const COMMAND_STDIN = ["prompt", "events"] as const;
export type CommandStdin = typeof COMMAND_STDIN[number];

/** The driver an agent spec runs on (`loop`, `command`, or the harness's own name). */
export function driverNameOf(agent: AgentSpec): DriverName {
  switch (agent.kind) {
    case "loop":
      return "loop";
    case "command":
      return "command";
    case "harness":
      return agent.driver;
    default:
      return assertNever(agent, "agent kind");
  }
}

/**
 * The input's agent spec when it is of `kind`; a UsageError when a driver is handed another kind's
 * (a front end that built the wrong spec), so no driver reads a field that is not there.
 */
export function agentOf<K extends AgentSpec["kind"]>(
  input: Pick<DriverInput, "agent">,
  kind: K,
  driver: string,
): Extract<AgentSpec, { kind: K }> {
  if (input.agent.kind === kind) return input.agent as Extract<AgentSpec, { kind: K }>;
  throw new UsageError(
    `Cannot run the ${driver} driver with a ${input.agent.kind} agent: it takes a ${kind} agent`,
    { hint: `give --driver ${driverNameOf(input.agent)}'s flags to that driver` },
  );
}

export type ApprovalPolicy = "auto" | "ask" | "deny";

export interface Budget {
  maxTurns?: number;
  maxTokens?: number;
  maxUsd?: number;
}

/** A decision on an approval a driver asked for (from the policy or from `reins approve`). */
export interface Decision {
  decision: "allow" | "deny";
  by: string;
  reason: string | null;
}

/** Answers to what a driver asks while it runs; the run command backs it with the run's log. */
export interface Decisions {
  /** Waits until `approval.resolved` for `approvalId` is in the run's log (or the signal aborts). */
  waitForApproval(approvalId: string, signal: AbortSignal): Promise<Decision>;
  /** Waits until `question.answered` for `questionId` is in the run's log. */
  waitForAnswer(questionId: string, signal: AbortSignal): Promise<string>;
}

/** Where one route of a harness's model calls goes (the gateway's RouteTarget, structurally). */
export interface ModelRoute {
  /** The base URL the CLI would have called without reins (its own setting, or its default). */
  upstream: string;
  /** A request with this header goes to `upstream` instead (Codex signed in with ChatGPT). */
  whenHeader?: { name: string; upstream: string };
}

/** How a harness's model calls can go through the gateway: its routes, by name. */
export interface ModelRoutePlan {
  routes: Record<string, ModelRoute>;
  /** What the driver needs again to point its CLI at the routes (its own business). */
  details?: Record<string, string>;
}

/** A plan, or why this harness's calls cannot go through the gateway this turn. */
export type ModelRoutes = ModelRoutePlan | { unavailable: string };

/** The gateway a harness turn is pointed at: each route is `${baseUrl}/${route}`. */
export interface GatewayRoute {
  baseUrl: string;
  plan: ModelRoutePlan;
}

export interface DriverInput {
  prompt: string;
  /** Absolute working directory. */
  cwd: string;
  runId: string;
  /** reins's session id for this conversation. */
  sessionId: string;
  contextId: string | null;
  /** The harness session to continue, or null for a new conversation. */
  resume: { sessionId: string; nativeSessionId: string | null } | null;
  /** Events of earlier runs of this session, oldest first (the loop rebuilds its history from them). */
  history: readonly EventInput[];
  approval: ApprovalPolicy;
  budget: Budget;
  /** What to run: the fields of this driver's kind (see AgentSpec). */
  agent: AgentSpec;
  /** Extra variables for a child process (added to the inherited environment). */
  env: Record<string, string>;
  settings: Settings;
  decisions: Decisions;
  /**
   * Aborted when stopping must not wait (a second SIGINT): kill the child at once. The `signal`
   * passed to start() is always aborted first.
   */
  kill: AbortSignal;
  /**
   * Told of each process the driver starts (the agent, a tool's command), each the leader of a
   * group of its own: the turn keeps them with the run, so that the group can be stopped should
   * reins die before it does (lib/core/process_group.ts).
   */
  onProcess?: (agent: AgentProcess) => void;
  /**
   * The model gateway this turn's harness is to call its model through (docs/gateway.md); null
   * or absent: it calls its model directly.
   */
  gateway?: GatewayRoute | null;
  /**
   * The turn's budget ledger (lib/core/budget.ts), shared with the gateway: the built-in loop asks
   * it before each model call. Absent: a driver makes its own from `budget`.
   */
  ledger?: BudgetLedger;
  /**
   * The turn's confinement (--confine, docs/confinement.md): every process the driver starts is
   * wrapped in it. Absent or null: they run with reins's rights.
   */
  confine?: Confinement | null;
}

/** Receives a driver's events; each is validated and appended before emit returns. */
export interface EventSink {
  emit(event: EventInput): void;
}

export interface DriverResult {
  status: "completed" | "failed" | "interrupted";
  /** Why it ended, for people: null when it simply completed. */
  reason: string | null;
  /** The final answer, if any. */
  result: string | null;
  /** The child's exit code, when there was a child. */
  exitCode: number | null;
  /** Files the agent declared as the run's products (absolute paths), copied in by the caller. */
  attachments?: string[];
  /** A machine-readable code of the outcome, kept on the terminal event (`budget_exhausted`). */
  code?: string;
}

export interface Driver {
  /** The driver's name (`loop`, `claude`, `command`, …). */
  readonly name: string;
  /** What it drives: the harness name recorded on the run (`reins`, `claude-code`, …). */
  readonly harness: string;
  /**
   * What of the turn's budget (--max-turns, --max-tokens, --max-usd) this driver cannot hold the
   * agent to while it runs, in words said before it starts; none when it enforces all of it.
   */
  budgetNotes?(input: Pick<DriverInput, "budget" | "agent" | "settings">): string[];
  /**
   * What of the turn's cost this driver cannot tell, in words said before it starts: a CLI that
   * reports tokens but no cost, on a model reins has no price for. None when the cost is known.
   */
  costNotes?(input: Pick<DriverInput, "agent" | "settings">): string[];
  /**
   * What it knows of its agent before starting it — the model's provider, the model asked for,
   * how its harness counts input tokens — recorded on run.started (AgentFacts, docs/events.md).
   * Without it (the command driver) the run records none.
   */
  agentFacts?(input: Pick<DriverInput, "agent" | "settings">): AgentFacts;
  /**
   * Where this driver's agent sends its model calls, so that the turn engine can put the model
   * gateway there (the four harness drivers); without it, a run has no gateway.
   */
  modelRoutes?(
    input: Pick<DriverInput, "agent" | "settings" | "env" | "cwd">,
  ): ModelRoutes | Promise<ModelRoutes>;
  /**
   * For a CLI that retries a failing model server without end (opencode): how many failed model
   * calls in a row the gateway lets pass before reins ends the turn. Without it, the CLI's own
   * retries decide.
   */
  readonly upstreamFailuresTolerated?: number;
  start(input: DriverInput, sink: EventSink, signal: AbortSignal): Promise<DriverResult>;
}
