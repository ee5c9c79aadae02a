// The claude driver: Claude Code as `claude -p --output-format stream-json --verbose
// --input-format stream-json`, the prompt sent as a user message on stdin. A new conversation
// gets reins's session id with --session-id, a later turn --resume. With --approve ask or deny
// Claude Code asks us before a tool runs (--permission-prompt-tool stdio); --approve auto runs
// it in the acceptEdits permission mode instead. See docs/harnesses.md for the line mapping.
import { nowIso } from "../core/clock.ts";
import type { Decision, Driver, DriverInput, DriverResult, EventSink } from "./driver.ts";
import {
  driveHarness,
  driverSettings,
  exitFailure,
  type Line,
  num,
  obj,
  reportCliError,
  str,
  textOf,
  type TurnMapping,
  UsageTotals,
} from "./harness.ts";
import type { HarnessExit, HarnessProcess } from "./process.ts";

const CLI = "Claude Code";

/** The unattended permission mode --approve auto maps to (see docs/harnesses.md for why). */
export const CLAUDE_AUTO_PERMISSION_MODE = "acceptEdits";

/** The arguments of one turn (the prompt itself goes on stdin). */
export function claudeArgs(input: DriverInput): string[] {
  const { extraArgs, model } = driverSettings(input, "claude");
  const args = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
  ];
  // A session Claude Code never confirmed (no system/init line was seen) was never written:
  // start it under the same id rather than resume what does not exist.
  if (input.resume?.nativeSessionId) args.push("--resume", input.resume.nativeSessionId);
  else args.push("--session-id", input.resume?.sessionId ?? input.sessionId);
  if (input.approval === "auto") args.push("--permission-mode", CLAUDE_AUTO_PERMISSION_MODE);
  else args.push("--permission-prompt-tool", "stdio");
  if (model !== null) args.push("--model", model);
  return [...args, ...extraArgs];
}

class ClaudeTurn implements TurnMapping {
  #answer: string | null = null;
  #result: Line | null = null;
  #linked: string | null = null;
  #approvals = 0;
  readonly #toolStarts = new Map<string, string>();
  readonly #messageIds = new Set<string>();
  readonly #usage = new UsageTotals();

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

  async line(value: Line, child: HarnessProcess): Promise<void> {
    switch (value.type) {
      case "system":
        return this.#system(value);
      case "assistant":
        return this.#assistant(value);
      case "user":
        return this.#user(value);
      case "control_request":
        return await this.#controlRequest(value, child);
      case "result":
        this.#result = value;
        this.#finalUsage(value);
        // One turn per process: closing stdin lets Claude Code exit once the turn is over.
        await child.closeStdin();
        return;
      default:
        // stream_event, control_response, keep_alive, tool_progress…: nothing reins records.
        return;
    }
  }

  #link(sessionId: unknown, native: Line): void {
    if (typeof sessionId !== "string" || sessionId === "" || sessionId === this.#linked) return;
    this.#linked = sessionId;
    this.sink.emit({ type: "session.linked", payload: { nativeSessionId: sessionId }, native });
  }

  #system(value: Line): void {
    switch (value.subtype) {
      case "init":
        this.#link(value.session_id, value);
        return;
      case "permission_denied": {
        // Denied by Claude Code's own permission mode, without asking us: recorded as an
        // approval asked and refused on the spot, so `reins show` says why the tool failed.
        const approvalId = `approval-${++this.#approvals}`;
        const tool = str(value.tool_name) ?? "unknown";
        this.sink.emit({
          type: "approval.requested",
          payload: { approvalId, tool, args: null, callId: str(value.tool_use_id) },
          native: value,
        });
        this.sink.emit({
          type: "approval.resolved",
          payload: {
            approvalId,
            decision: "deny",
            by: "claude-code",
            reason: str(value.message) ?? null,
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
              num(value.attempt) !== undefined ? ` (attempt ${value.attempt})` : ""
            }: ${str(value.error) ?? str(obj(value.error).message) ?? "no reason given"}`,
          },
          native: value,
        });
        return;
      default:
        return;
    }
  }

  #assistant(value: Line): void {
    this.#link(value.session_id, value);
    const message = obj(value.message);
    const blocks = Array.isArray(message.content) ? message.content as Line[] : [];
    if (value.is_api_error_message === true || message.model === "<synthetic>") {
      const text = blocks.map((block) => str(block.text) ?? "").join("").trim();
      reportCliError(this.sink, "claude", CLI, text || "an API error", value);
      return;
    }
    const id = str(message.id);
    if (id) this.#messageIds.add(id);
    for (const block of blocks) {
      switch (block.type) {
        case "text": {
          const text = str(block.text) ?? "";
          if (text === "") break;
          if (value.parent_tool_use_id == null) this.#answer = text;
          this.sink.emit({
            type: "message.completed",
            payload: { role: "assistant", text },
            native: value,
          });
          break;
        }
        case "tool_use": {
          const callId = str(block.id) ?? `tool-${this.#toolStarts.size + 1}`;
          this.#toolStarts.set(callId, nowIso());
          this.sink.emit({
            type: "tool.started",
            payload: { callId, tool: str(block.name) ?? "unknown", args: block.input ?? null },
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

  #user(value: Line): void {
    const message = obj(value.message);
    const blocks = Array.isArray(message.content) ? message.content as Line[] : [];
    for (const block of blocks) {
      if (block.type !== "tool_result") continue;
      const callId = str(block.tool_use_id) ?? "unknown";
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

  async #controlRequest(value: Line, child: HarnessProcess): Promise<void> {
    const requestId = str(value.request_id) ?? "";
    const request = obj(value.request);
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
    const approvalId = `approval-${++this.#approvals}`;
    const tool = str(request.tool_name) ?? "unknown";
    const args = request.input ?? {};
    this.sink.emit({
      type: "approval.requested",
      payload: { approvalId, tool, args, callId: str(request.tool_use_id) },
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
      decision = {
        decision: this.input.approval === "auto" ? "allow" : "deny",
        by: "policy",
        reason: `--approve ${this.input.approval}`,
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

  #finalUsage(value: Line): void {
    const usage = obj(value.usage);
    this.#usage.set({
      inputTokens: num(usage.input_tokens) ?? null,
      outputTokens: num(usage.output_tokens) ?? null,
      cacheReadTokens: num(usage.cache_read_input_tokens) ?? null,
      cacheWriteTokens: num(usage.cache_creation_input_tokens) ?? null,
      reasoningTokens: num(obj(usage.output_tokens_details).thinking_tokens) ?? null,
      costUsd: num(value.total_cost_usd) ?? null,
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
    const text = str(result.result) ?? this.#answer;
    if (result.is_error === true || (str(result.subtype) ?? "success") !== "success") {
      const why = str(result.terminal_reason) ?? str(result.subtype) ?? "error";
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

export function createClaudeDriver(): Driver {
  return {
    name: "claude",
    harness: "claude-code",
    start(input, sink, signal) {
      return driveHarness(
        { driver: "claude", cli: CLI, args: claudeArgs(input), stdin: "piped" },
        new ClaudeTurn(input, sink, signal),
        { input, sink, signal },
      );
    },
  };
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
