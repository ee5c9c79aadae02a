// One turn of Claude Code as reins reads it: each stream-json line checked against its wire schema
// (claude_wire.ts) and mapped to events — the session link, messages, tools, the approvals and
// questions Claude Code asks over stdin (--permission-prompt-tool stdio), the usage of its result
// line — and the outcome from the result line and the exit. Loaded by claude.ts once the CLI has
// been started, while it starts up: nothing here is needed before the spawn.
import { nowIso } from "../core/clock.ts";
import type { Decision, DriverInput, DriverResult, EventSink } from "./driver.ts";
import {
  exitFailure,
  type Line,
  obj,
  readableLine,
  reportCliError,
  str,
  textOf,
  type TurnMapping,
  UsageTotals,
} from "./harness.ts";
import type { BudgetWatch } from "./budget_watch.ts";
import type { AgentFacts, CallUsage, ModelCallRef } from "../store/mod.ts";
import type { HarnessExit, HarnessProcess } from "./process.ts";
import type {
  ClaudeAssistant,
  ClaudeBlock,
  ClaudeControlRequest,
  ClaudeResult,
  ClaudeSystem,
  ClaudeUser,
} from "./claude_wire.ts";
import { validateClaudeLine } from "./wire_checks.gen.ts";
import { CLAUDE_ASK_TOOL, CLAUDE_AUTO_PERMISSION_MODE, CLI } from "./claude_names.ts";

export class ClaudeTurn implements TurnMapping {
  #answer: string | null = null;
  #result: ClaudeResult | null = null;
  #linked: string | null = null;
  #approvals = 0;
  #questions = 0;
  readonly #toolStarts = new Map<string, string>();
  readonly #messageIds = new Set<string>();
  readonly #usage = new UsageTotals();
  /** Tokens of each API message as streamed so far (its output tokens arrive late). */
  readonly #messageTokens = new Map<string, number>();
  #budget: BudgetWatch | null = null;

  constructor(
    readonly input: DriverInput,
    readonly sink: EventSink,
    readonly signal: AbortSignal,
  ) {}

  async begin(child: HarnessProcess): Promise<void> {
    await child.send({ type: "user", message: { role: "user", content: this.input.prompt } });
  }

  answer(): string | null {
    return this.#answer;
  }

  watchBudget(watch: BudgetWatch): void {
    this.#budget = watch;
  }

  async line(value: Line, child: HarnessProcess): Promise<void> {
    if (!readableLine(this.sink, "claude", CLI, validateClaudeLine, value)) return;
    const type = value.type;
    switch (type) {
      case "system":
        return this.#system(value as ClaudeSystem);
      case "assistant":
        return this.#assistant(value as ClaudeAssistant);
      case "user":
        return this.#user(value as ClaudeUser);
      case "control_request":
        return await this.#controlRequest(value as ClaudeControlRequest, child);
      case "result":
        // One turn per process: closing stdin lets Claude Code exit once the turn is over — at
        // once, so that it winds down while reins records the result, not after.
        await child.closeStdin();
        this.#result = value as ClaudeResult;
        this.#finalUsage(this.#result);
        return;
      default:
        // stream_event, control_response, keep_alive, tool_progress…: nothing reins records.
        return;
    }
  }

  #link(sessionId: string | undefined, native: Line, agent: AgentFacts = {}): void {
    if (sessionId === undefined || sessionId === "" || sessionId === this.#linked) return;
    this.#linked = sessionId;
    this.sink.emit({
      type: "session.linked",
      payload: {
        nativeSessionId: sessionId,
        ...(Object.keys(agent).length > 0 ? { agent } : {}),
      },
      native,
    });
  }

  #system(value: ClaudeSystem): void {
    switch (value.subtype) {
      case "init":
        // What Claude Code says of itself as the session starts: its version, the model it uses.
        this.#link(value.session_id, value, {
          ...(value.model ? { model: value.model } : {}),
          ...(value.claude_code_version ? { version: value.claude_code_version } : {}),
        });
        return;
      case "permission_denied": {
        // Denied by Claude Code's own permission mode, without asking us: recorded as an
        // approval asked and refused on the spot, so `reins show` says why the tool failed.
        const approvalId = `approval-${++this.#approvals}`;
        const tool = value.tool_name ?? "unknown";
        this.sink.emit({
          type: "approval.requested",
          payload: { approvalId, tool, args: null, callId: value.tool_use_id },
          native: value,
        });
        this.sink.emit({
          type: "approval.resolved",
          payload: {
            approvalId,
            decision: "deny",
            by: "claude-code",
            reason: value.message ?? null,
          },
        });
        return;
      }
      case "api_retry":
        this.sink.emit({
          type: "problem",
          payload: {
            source: "claude",
            reason: `${CLI} is retrying the model API${
              value.attempt !== undefined ? ` (attempt ${value.attempt})` : ""
            }: ${
              (typeof value.error === "string" ? value.error : value.error?.message) ??
                "no reason given"
            }`,
          },
          native: value,
        });
        return;
      default:
        return;
    }
  }

  #assistant(value: ClaudeAssistant): void {
    this.#link(value.session_id, value);
    const message = value.message;
    const blocks = blocksOf(message?.content);
    if (value.is_api_error_message === true || message?.model === "<synthetic>") {
      const text = blocks.map((block) => block.text ?? "").join("").trim();
      reportCliError(this.sink, "claude", CLI, text || "an API error", value);
      return;
    }
    const id = message?.id;
    // Claude Code reports each API call only through its message's lines (one per block, the
    // usage growing): each event of the message names the call, for the trace export's chat spans.
    const call: { modelCall?: ModelCallRef } = id ? { modelCall: modelCallOf(id, message) } : {};
    if (id) {
      this.#messageIds.add(id);
      const usage = message?.usage;
      const tokens = (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0);
      this.#messageTokens.set(id, Math.max(tokens, this.#messageTokens.get(id) ?? 0));
      let sum = 0;
      for (const count of this.#messageTokens.values()) sum += count;
      this.#budget?.observe({ requests: this.#messageIds.size, tokens: sum, costUsd: null });
    }
    for (const block of blocks) {
      switch (block.type) {
        case "text": {
          const text = block.text ?? "";
          if (text === "") break;
          if (value.parent_tool_use_id == null) this.#answer = text;
          this.sink.emit({
            type: "message.completed",
            payload: { role: "assistant", text, ...call },
            native: value,
          });
          break;
        }
        case "tool_use": {
          const callId = block.id ?? `tool-${this.#toolStarts.size + 1}`;
          this.#toolStarts.set(callId, nowIso());
          this.sink.emit({
            type: "tool.started",
            payload: { callId, tool: block.name ?? "unknown", args: block.input ?? null, ...call },
            native: value,
          });
          break;
        }
        default:
          // thinking and redacted_thinking: kept by Claude Code in its transcript, not here.
          break;
      }
    }
  }

  #user(value: ClaudeUser): void {
    for (const block of blocksOf(value.message?.content)) {
      if (block.type !== "tool_result") continue;
      const callId = block.tool_use_id ?? "unknown";
      const output = textOf(block.content);
      const ok = block.is_error !== true;
      this.sink.emit({
        type: "tool.completed",
        payload: {
          callId,
          ok,
          ...(ok ? { result: output } : { error: output || "the tool failed" }),
          startedAt: this.#toolStarts.get(callId) ?? null,
          finishedAt: nowIso(),
        },
        native: value,
      });
    }
  }

  async #controlRequest(value: ClaudeControlRequest, child: HarnessProcess): Promise<void> {
    const requestId = value.request_id;
    const request = value.request;
    if (request.subtype !== "can_use_tool") {
      this.sink.emit({
        type: "problem",
        payload: {
          source: "claude",
          reason: `${CLI} asked reins for ${
            JSON.stringify(request.subtype)
          }, which reins does not answer`,
        },
        native: value,
      });
      await child.send({
        type: "control_response",
        response: {
          subtype: "error",
          request_id: requestId,
          error: `reins does not handle ${String(request.subtype)} requests`,
        },
      });
      return;
    }
    const tool = request.tool_name ?? "unknown";
    const args = request.input ?? {};
    if (tool === CLAUDE_ASK_TOOL) return await this.#askUser(requestId, obj(args), child);
    const approvalId = `approval-${++this.#approvals}`;
    this.sink.emit({
      type: "approval.requested",
      payload: { approvalId, tool, args, callId: request.tool_use_id },
      native: value,
    });
    let decision: Decision;
    if (this.input.approval === "ask") {
      try {
        decision = await child.hold(
          untilAborted(this.input.decisions.waitForApproval(approvalId, this.signal), this.signal),
        );
      } catch (error) {
        // Stopped while waiting: the child is being stopped too; nothing to answer.
        if (this.signal.aborted) return;
        throw error;
      }
    } else {
      // Under auto, acceptEdits has already let through what it allows: this is what it asks
      // about (a write outside the working directory, say), refused as that mode refuses it.
      const why = str(request.decision_reason);
      decision = {
        decision: "deny",
        by: "policy",
        reason: this.input.approval === "auto"
          ? `--approve auto runs Claude Code in ${CLAUDE_AUTO_PERMISSION_MODE} mode, which asks ` +
            `before this${why ? ` (${why})` : ""}`
          : `--approve ${this.input.approval}`,
      };
      this.sink.emit({
        type: "approval.resolved",
        payload: {
          approvalId,
          decision: decision.decision,
          by: decision.by,
          reason: decision.reason,
        },
      });
    }
    await child.send({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: requestId,
        response: decision.decision === "allow" ? { behavior: "allow", updatedInput: args } : {
          behavior: "deny",
          message: `Denied by ${decision.by}${decision.reason ? `: ${decision.reason}` : ""}`,
        },
      },
    });
  }

  /**
   * AskUserQuestion: each of its questions becomes `question.requested` (question-1, …) with
   * its options; once `reins answer` has answered them all, Claude Code gets the answers, keyed
   * by question text, in the tool's input (`answers`), as its own dialog gives them.
   */
  async #askUser(requestId: string, input: Line, child: HarnessProcess): Promise<void> {
    const questions = Array.isArray(input.questions) ? input.questions.map(obj) : [];
    const answers: Record<string, string> = {};
    for (const asked of questions) {
      const question = str(asked.question) ?? "";
      const options = Array.isArray(asked.options) ? asked.options.map(obj) : [];
      const labels = options.map((option) =>
        `${str(option.label) ?? "?"}${str(option.description) ? `: ${option.description}` : ""}`
      );
      const questionId = `question-${++this.#questions}`;
      this.sink.emit({
        type: "question.requested",
        payload: {
          questionId,
          text: labels.length > 0 ? `${question} (${labels.join(" · ")})` : question,
          header: str(asked.header) ?? null,
          options: options.map((option) => str(option.label) ?? ""),
          multiSelect: asked.multiSelect === true,
        },
      });
      try {
        answers[question] = await child.hold(
          untilAborted(this.input.decisions.waitForAnswer(questionId, this.signal), this.signal),
        );
      } catch (error) {
        // Stopped while waiting: the child is being stopped too; nothing to answer.
        if (this.signal.aborted) return;
        throw error;
      }
    }
    await child.send({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: requestId,
        response: { behavior: "allow", updatedInput: { ...input, answers } },
      },
    });
  }

  #finalUsage(value: ClaudeResult): void {
    const usage = value.usage ?? undefined;
    this.#usage.set({
      inputTokens: usage?.input_tokens ?? null,
      outputTokens: usage?.output_tokens ?? null,
      cacheReadTokens: usage?.cache_read_input_tokens ?? null,
      cacheWriteTokens: usage?.cache_creation_input_tokens ?? null,
      reasoningTokens: usage?.output_tokens_details?.thinking_tokens ?? null,
      costUsd: value.total_cost_usd ?? null,
      requests: this.#messageIds.size,
    });
    this.#usage.emit(this.sink, value);
  }

  settle(exit: HarnessExit): DriverResult {
    const result = this.#result;
    if (result === null) {
      return exitFailure(CLI, exit, {
        what: exit.code === 0 ? "it ended without a result line" : null,
        withStderr: true,
        answer: this.#answer,
      });
    }
    const text = result.result ?? this.#answer;
    const limit = result.subtype === "error_max_turns"
      ? `--max-turns ${this.input.budget.maxTurns ?? "?"}`
      : result.subtype === "error_max_budget_usd"
      ? `--max-usd ${this.input.budget.maxUsd ?? "?"}`
      : null;
    if (limit !== null) {
      return {
        status: "failed",
        reason: `budget exhausted: ${CLI} stopped at ${limit} (${result.subtype})`,
        result: text ?? null,
        exitCode: exit.code,
      };
    }
    if (result.is_error === true || (result.subtype ?? "success") !== "success") {
      const why = result.terminal_reason ?? result.subtype ?? "error";
      return {
        status: "failed",
        reason: `${CLI} failed (${why})${text ? `: ${text}` : ""}`,
        result: text ?? null,
        exitCode: exit.code,
      };
    }
    return { status: "completed", reason: null, result: text ?? null, exitCode: exit.code };
  }
}

/** An API message as the model call it reports, its usage in reins's names. */
function modelCallOf(id: string, message: ClaudeAssistant["message"]): ModelCallRef {
  const usage = message?.usage;
  const counts: CallUsage = {};
  const count = (name: keyof CallUsage, value: number | undefined) => {
    // The contract counts whole tokens: a count that is not one is left out, not recorded.
    if (value !== undefined && Number.isInteger(value)) counts[name] = value;
  };
  count("inputTokens", usage?.input_tokens);
  count("outputTokens", usage?.output_tokens);
  count("cacheReadTokens", usage?.cache_read_input_tokens);
  count("cacheWriteTokens", usage?.cache_creation_input_tokens);
  return {
    id,
    ...(message?.model ? { model: message.model } : {}),
    ...(message?.stop_reason !== undefined ? { stopReason: message.stop_reason } : {}),
    ...(Object.keys(counts).length > 0 ? { usage: counts } : {}),
  };
}

/** A message's content blocks (a plain-string content has none reins reads). */
function blocksOf(content: string | (string | ClaudeBlock)[] | undefined): ClaudeBlock[] {
  if (!Array.isArray(content)) return [];
  return content.filter((block): block is ClaudeBlock => typeof block !== "string");
}

/** `work`, or a rejection as soon as `signal` aborts (whether or not `work` heeds it). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
