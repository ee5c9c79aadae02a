// The A2A methods over reins: a task is a run (its id is the run id), a contextId is a reins
// context (a new uuid v7 when the message has none), a message on a waiting task answers what it
// asked, CancelTask stops the agent and records the run interrupted. Turns run through the
// TurnRunner the command gives; at most `maxTurns` at once, and a message beyond that is refused
// with an error that says so rather than queued out of sight.
import { sleep } from "../core/clock.ts";
import { describeError } from "../core/errors.ts";
import { redact } from "../core/redact.ts";
import { isSafeName, newId } from "../core/ids.ts";
import type { RunEvent } from "../store/mod.ts";
import type { z } from "zod";
import {
  CancelTaskRequest,
  ForgetContextRequest,
  GetTaskRequest,
  ListTasksRequest,
  type ListTasksResponse,
  type MessageIn,
  SendMessageRequest,
  SubscribeToTaskRequest,
  type Task,
  type TaskState,
  TERMINAL_STATES,
} from "./a2a/wire.ts";
import { errorInfo, invalidParams, RPC, RpcError } from "./jsonrpc.ts";
import { LiveTask, type Subscription, type TurnControl } from "./live_task.ts";
import { drainUntilEnd, finalStream, type StreamBody, streamOf } from "./streams.ts";
import { approvalAnswer, checkAcceptedOutput, messageText } from "./messages.ts";
import { listTasks } from "./task_list.ts";
import { TaskLookup } from "./task_lookup.ts";
import { CANCEL_REASON, recordState, type TaskRecord, TaskView } from "./task_view.ts";
import type { ServeStore, TurnRunner } from "./turns.ts";

/** The reason turns still running when the server stops are stopped with. */
export const SHUTDOWN_REASON = "reins serve stopped";
/** The method of the forget extension, and its URI (declared in the agent card). */
export const FORGET_METHOD = "ForgetContext";
export const FORGET_EXTENSION = "urn:reins:a2a:context-forget:v1";

export interface ServiceOptions {
  store: ServeStore;
  runTurn: TurnRunner;
  /** At most this many turns at once. */
  maxTurns: number;
  /** How long CancelTask lets the agent stop before killing it. */
  cancelGraceMs?: number;
  warn?(message: string): void;
  /** A line for the operator when a task starts and when it ends. */
  log?(message: string): void;
}

/** A method's answer: a result object (or its JSON text), or a stream of items (SSE). */
export type CallResult =
  | { result: unknown }
  | { resultJson: string }
  | { stream: StreamBody };

function parse<S extends z.ZodType>(schema: S, params: Record<string, unknown>): z.infer<S> {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue.path.map(String).join(".") || "params";
  const message = issue.code === "invalid_type" && issue.input === undefined
    ? "is required"
    : issue.message;
  throw invalidParams(field, message);
}

function unsupported(message: string, reason: string, taskId?: string): RpcError {
  return new RpcError(RPC.unsupportedOperation, message, [
    errorInfo(reason, taskId === undefined ? {} : { taskId }),
  ]);
}

interface Started {
  live: LiveTask;
  subscription: Subscription | null;
}

export class A2AService {
  readonly #store: ServeStore;
  readonly #runTurn: TurnRunner;
  readonly #maxTurns: number;
  readonly #cancelGraceMs: number;
  readonly #warn: (message: string) => void;
  readonly #log: (message: string) => void;
  readonly #lookup: TaskLookup;
  /** Tasks whose turns run in this server, by task id. */
  readonly #live = new Map<string, LiveTask>();
  /** Every turn under way, created or still waiting to be, for the drain. */
  readonly #turns = new Set<{ control: TurnControl; done: Promise<void> }>();
  #stopping = false;

  constructor(options: ServiceOptions) {
    this.#store = options.store;
    this.#runTurn = options.runTurn;
    this.#maxTurns = options.maxTurns;
    this.#cancelGraceMs = options.cancelGraceMs ?? 5_000;
    this.#warn = options.warn ?? (() => {});
    this.#log = options.log ?? (() => {});
    this.#lookup = new TaskLookup(options.store);
  }

  /** Turns under way (running, or waiting for their context). */
  get activeTurns(): number {
    return this.#turns.size;
  }

  async call(method: string, params: Record<string, unknown>): Promise<CallResult> {
    switch (method) {
      case "SendMessage":
        return { result: await this.#sendMessage(parse(SendMessageRequest, params)) };
      case "SendStreamingMessage":
        return await this.#sendStreamingMessage(parse(SendMessageRequest, params));
      case "GetTask":
        return { resultJson: this.#getTask(parse(GetTaskRequest, params)) };
      case "ListTasks":
        return { result: this.#listTasks(parse(ListTasksRequest, params)) };
      case "CancelTask":
        return { result: await this.#cancelTask(parse(CancelTaskRequest, params)) };
      case "SubscribeToTask":
        return this.#subscribe(parse(SubscribeToTaskRequest, params));
      case FORGET_METHOD:
        return { result: this.#forget(parse(ForgetContextRequest, params)) };
      case "CreateTaskPushNotificationConfig":
      case "GetTaskPushNotificationConfig":
      case "ListTaskPushNotificationConfigs":
      case "DeleteTaskPushNotificationConfig":
        throw new RpcError(
          RPC.pushNotificationNotSupported,
          "Push notifications are not supported: stream with SendStreamingMessage or SubscribeToTask, or poll GetTask",
        );
      case "GetExtendedAgentCard":
        throw unsupported(
          "This agent has no extended agent card: the public card is all there is",
          "EXTENDED_AGENT_CARD_NOT_SUPPORTED",
        );
      default:
        throw new RpcError(RPC.methodNotFound, `Method not found: ${JSON.stringify(method)}`);
    }
  }

  // ---- SendMessage / SendStreamingMessage --------------------------------------------------

  async #sendMessage(request: SendMessageRequest): Promise<{ task: Task }> {
    checkAcceptedOutput(request.configuration?.acceptedOutputModes);
    const historyLength = request.configuration?.historyLength;
    const blocking = request.configuration?.returnImmediately !== true;
    if (request.message.taskId !== undefined) {
      const live = this.#answer(request.message);
      if (blocking) await this.#untilSettledOrInterrupted(live);
      return { task: live.view.snapshot({ historyLength }) };
    }
    const { live, subscription } = await this.#start(
      request.message,
      blocking ? { historyLength: 0 } : null,
    );
    if (subscription) await drainUntilEnd(subscription, true);
    return { task: live.view.snapshot({ historyLength }) };
  }

  async #sendStreamingMessage(request: SendMessageRequest): Promise<CallResult> {
    checkAcceptedOutput(request.configuration?.acceptedOutputModes);
    const historyLength = request.configuration?.historyLength;
    let subscription: Subscription | null;
    if (request.message.taskId !== undefined) {
      const live = this.#answer(request.message);
      subscription = live.subscribe((view) => view.snapshot({ historyLength }));
      if (subscription === null) {
        // The answer let the turn end in the same instant: what remains is its final state.
        return finalStream(live.view.snapshot({ historyLength }));
      }
    } else {
      subscription = (await this.#start(request.message, { historyLength })).subscription;
    }
    return { stream: streamOf(subscription!, { closeAtInterrupted: true, closeAtFirst: true }) };
  }

  /**
   * Starts a turn for a new task; resolves once its run exists, with a subscription that begins
   * with the Task as it is then (its history as `subscribe` says), unless `subscribe` is null.
   */
  async #start(
    message: MessageIn,
    subscribe: { historyLength: number | undefined } | null,
  ): Promise<Started> {
    if (this.#stopping) {
      throw new RpcError(RPC.internalError, "reins serve is stopping: it starts no new tasks", [
        errorInfo("SERVER_STOPPING"),
      ]);
    }
    if (this.#turns.size >= this.#maxTurns) {
      throw new RpcError(
        RPC.internalError,
        `reins serve is running as many turns as it may at once (${this.#maxTurns}, --max-turns): send again when one has finished`,
        [errorInfo("TOO_MANY_TURNS", { maxTurns: String(this.#maxTurns) })],
      );
    }
    const contextId = message.contextId ?? newId();
    if (!isSafeName(contextId)) {
      throw invalidParams(
        "message.contextId",
        "a context id is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit",
      );
    }
    const prompt = messageText(message);
    const control: TurnControl = { stop: new AbortController(), kill: new AbortController() };
    let live: LiveTask | null = null;
    const early: RunEvent[] = [];
    let resolveStarted!: (started: Started) => void;
    let rejectStarted!: (error: unknown) => void;
    const started = new Promise<Started>((resolve, reject) => {
      resolveStarted = resolve;
      rejectStarted = reject;
    });
    const turn = this.#runTurn({ prompt, messageId: message.messageId, contextId }, {
      stop: control.stop.signal,
      kill: control.kill.signal,
    }, {
      warn: (text) => this.#warn(text),
      onEvent: (event) => live ? live.publish(event) : early.push(event),
      onCreated: (runId) => {
        try {
          live = new LiveTask(
            new TaskView(this.#startedRecord(runId, early), {
              promptMessageId: message.messageId,
            }),
            control,
            (after, before) => this.#readRange(runId, after, before),
          );
          for (const event of early.splice(0)) live.publish(event);
          this.#live.set(runId, live);
          this.#log(`task ${runId} started on context ${contextId}`);
          // Subscribed here, before the driver starts, so that no event of the turn is missed.
          const subscription = subscribe
            ? live.subscribe((view) => view.snapshot(subscribe))
            : null;
          resolveStarted({ live, subscription });
        } catch (error) {
          // The turn fails with this (its run records why); the request hears of it at once.
          rejectStarted(error);
          throw error;
        }
      },
    });
    const entry = {
      control,
      done: turn.then(
        () => {
          if (live === null) rejectStarted(new Error("the turn ended before its run existed"));
        },
        (error) => {
          if (live === null) rejectStarted(error);
          else this.#warn(`task ${live.taskId}: ${describeError(error)}`);
        },
      ).finally(() => {
        this.#turns.delete(entry);
        const ended = live as LiveTask | null;
        if (ended === null) return;
        ended.end();
        if (TERMINAL_STATES.has(ended.view.state)) this.#lookup.keep(ended.view);
        this.#live.delete(ended.taskId);
        this.#log(`task ${ended.taskId} ${stateWord(ended.view.state)}`);
      }),
    };
    this.#turns.add(entry);
    try {
      return await started;
    } catch (error) {
      throw new RpcError(
        RPC.internalError,
        `The task could not start: ${redact(describeError(error))}`,
        [errorInfo("TURN_NOT_STARTED")],
      );
    }
  }

  /**
   * What a new task's view starts from: its run.started event, which the turn hands over before
   * the run is created (as stored: redacted, its time the record's start), so that starting a task
   * reads nothing from disk; the run's record when a runner did not hand it over.
   */
  #startedRecord(runId: string, early: readonly RunEvent[]): TaskRecord {
    const started = early.find((e) => e.type === "run.started" && e.runId === runId);
    if (started?.type !== "run.started") return this.#store.loadRun(runId);
    const { payload } = started;
    return {
      id: runId,
      contextId: payload.contextId,
      sessionId: started.sessionId,
      driver: payload.driver,
      goal: payload.goal,
      startedAt: started.timestamp,
      status: "running",
      terminalReason: null,
    };
  }

  #readRange(runId: string, after: number, before: number): RunEvent[] {
    return this.#store.readEvents(runId).events.filter((e) =>
      e.sequence > after && e.sequence < before
    );
  }

  /** Answers what task `message.taskId` waits for with the message; returns the live task. */
  #answer(message: MessageIn): LiveTask {
    const taskId = message.taskId!;
    const live = this.#live.get(taskId);
    const view = live?.view ?? this.#lookup.view(taskId);
    if (message.contextId !== undefined && message.contextId !== view.contextId) {
      throw invalidParams(
        "message.contextId",
        `task ${taskId} belongs to context ${JSON.stringify(view.contextId)}, not ${
          JSON.stringify(message.contextId)
        }`,
      );
    }
    if (TERMINAL_STATES.has(view.state)) {
      throw unsupported(
        `Task ${taskId} is ${
          stateWord(view.state)
        }: it takes no more messages (send a new message on its context to go on)`,
        "TASK_TERMINAL",
        taskId,
      );
    }
    if (live === undefined || live.ended) {
      throw unsupported(
        `Task ${taskId} is not run by this server: it takes no messages here`,
        "TASK_NOT_RUN_HERE",
        taskId,
      );
    }
    const pending = live.view.pending;
    if (pending === null || view.state !== "TASK_STATE_INPUT_REQUIRED") {
      throw unsupported(
        `Task ${taskId} is working and has asked nothing: a message on it answers an approval or a question (send new work as a new message on its context)`,
        "TASK_NOT_WAITING",
        taskId,
      );
    }
    let stored: RunEvent;
    if (pending.kind === "approval") {
      const { decision, reason } = approvalAnswer(message);
      stored = this.#store.appendToRun(taskId, {
        type: "approval.resolved",
        payload: {
          approvalId: pending.id,
          decision,
          by: "a2a",
          reason,
          messageId: message.messageId,
        },
      });
    } else {
      const answer = message.parts.map((p) => p.text ?? "").join("\n").trim();
      if (answer === "") throw invalidParams("message.parts", "the answer has no text");
      stored = this.#store.appendToRun(taskId, {
        type: "question.answered",
        payload: { questionId: pending.id, answer, messageId: message.messageId },
      });
    }
    live.publish(stored);
    return live;
  }

  async #untilSettledOrInterrupted(live: LiveTask): Promise<void> {
    const state = live.view.state;
    if (TERMINAL_STATES.has(state) || state === "TASK_STATE_INPUT_REQUIRED") return;
    const subscription = live.subscribe((view) => view.snapshot({ historyLength: 0 }));
    if (subscription) await drainUntilEnd(subscription, true);
  }

  // ---- GetTask / ListTasks ------------------------------------------------------------------

  #view(taskId: string): TaskView {
    return this.#live.get(taskId)?.view ?? this.#lookup.view(taskId);
  }

  #getTask(request: GetTaskRequest): string {
    if (request.historyLength !== undefined && request.historyLength < 0) {
      throw invalidParams("historyLength", "must be 0 or more");
    }
    return this.#view(request.id).snapshotText({ historyLength: request.historyLength });
  }

  #listTasks(request: ListTasksRequest): ListTasksResponse {
    const rows = this.#lookup.records(request.contextId).map((record) => {
      const live = this.#live.get(record.id);
      return {
        record,
        state: live ? live.view.state : recordState(record),
        timestamp: live ? live.view.statusTimestamp : (record.endedAt ?? record.startedAt),
      };
    });
    return listTasks(
      request,
      rows,
      (row, options) =>
        (this.#live.get(row.record.id)?.view ?? this.#lookup.view(row.record.id, row.record))
          .snapshot(options),
    );
  }

  // ---- CancelTask / SubscribeToTask ---------------------------------------------------------

  async #cancelTask(request: CancelTaskRequest): Promise<Task> {
    const live = this.#live.get(request.id);
    const view = live?.view ?? this.#lookup.view(request.id);
    if (TERMINAL_STATES.has(view.state)) {
      throw new RpcError(
        RPC.taskNotCancelable,
        `Task ${request.id} is ${stateWord(view.state)} already: there is nothing to cancel`,
        [errorInfo("TASK_NOT_CANCELABLE", { taskId: request.id })],
      );
    }
    if (live === undefined || live.ended) {
      throw new RpcError(
        RPC.taskNotCancelable,
        `Task ${request.id} is not run by this server, which cannot stop it`,
        [errorInfo("TASK_NOT_CANCELABLE", { taskId: request.id })],
      );
    }
    // The outcome is recorded first, so that whatever the agent does while it stops, the run
    // is interrupted by the cancel; then the agent (its whole process group) is stopped.
    live.publish(this.#store.appendToRun(request.id, {
      type: "status.changed",
      payload: { status: "interrupted", reason: CANCEL_REASON },
    }));
    await stopTurn(live, CANCEL_REASON, this.#cancelGraceMs);
    return live.view.snapshot();
  }

  #subscribe(request: SubscribeToTaskRequest): CallResult {
    const live = this.#live.get(request.id);
    const view = live?.view ?? this.#lookup.view(request.id);
    if (TERMINAL_STATES.has(view.state)) {
      throw unsupported(
        `Task ${request.id} is ${
          stateWord(view.state)
        }: there is nothing more to stream (GetTask has it all)`,
        "TASK_TERMINAL",
        request.id,
      );
    }
    const subscription = live?.subscribe((v) => v.snapshot());
    if (!subscription) {
      throw unsupported(
        `Task ${request.id} is not run by this server, which can stream only its own turns`,
        "TASK_NOT_RUN_HERE",
        request.id,
      );
    }
    // A subscriber to a task that waits for input watches on until its next pause.
    return { stream: streamOf(subscription, { closeAtInterrupted: true, closeAtFirst: false }) };
  }

  // ---- ForgetContext (extension) ------------------------------------------------------------

  #forget(request: ForgetContextRequest): Record<string, unknown> {
    if (!isSafeName(request.contextId)) {
      throw invalidParams("contextId", "is not a context id reins could have made");
    }
    const dropped = this.#store.contexts.forget(request.contextId);
    return { contextId: request.contextId, forgotten: dropped !== null, sessionId: dropped };
  }

  // ---- stopping -----------------------------------------------------------------------------

  /**
   * Starts no new task; lets the turns under way finish for up to `graceMs`, then stops them
   * (killing what has not stopped `killGraceMs` later) and waits for every one to be recorded.
   */
  async drain(graceMs: number, killGraceMs = 5_000): Promise<void> {
    this.#stopping = true;
    const all = () => Promise.all([...this.#turns].map((turn) => turn.done));
    const finished = all();
    if (await within(finished, graceMs)) return;
    for (const turn of this.#turns) turn.control.stop.abort(SHUTDOWN_REASON);
    if (await within(finished, killGraceMs)) return;
    for (const turn of this.#turns) turn.control.kill.abort(SHUTDOWN_REASON);
    await all();
  }
}

/** After a kill, how long the turn may take to record its end before CancelTask answers anyway. */
const KILLED_TURN_WAIT_MS = 15_000;

/** Stops a turn: stop now, kill after `graceMs`, resolved once the turn has returned. */
async function stopTurn(live: LiveTask, reason: string, graceMs: number): Promise<void> {
  live.control.stop.abort(reason);
  if (await within(live.finished, graceMs)) return;
  live.control.kill.abort(reason);
  await within(live.finished, KILLED_TURN_WAIT_MS);
}

/** Whether `work` settles within `ms` (its timer cleared either way). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      work.then(() => true),
      sleep(ms, timer.signal).then(() => false, () => false),
    ]);
  } finally {
    timer.abort();
  }
}

function stateWord(state: TaskState): string {
  return state.replace("TASK_STATE_", "").toLowerCase().replace("_", "-");
}
