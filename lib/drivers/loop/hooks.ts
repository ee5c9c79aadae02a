// Hooks around the loop's model and tool calls: observers that the recorder (which turns them
// into events) and the progress line plug in. They see calls; they cannot change or veto them
// (the approval policy decides about tools before `beforeTool`).
import type { EventSink } from "../driver.ts";
import type { ToolCall } from "../../store/mod.ts";
import type { Message, ModelOutput, ModelPurpose, ToolSpec } from "../../model/mod.ts";
import type { ToolResult } from "./tools.ts";

export interface ModelCall {
  /** The loop's iteration (0-based); summaries run inside the iteration that needed them. */
  iteration: number;
  purpose: ModelPurpose;
  history: readonly Message[];
  tools: readonly ToolSpec[];
}

export type ToolOutcome = ToolResult & { startedAt: string; finishedAt: string };

export interface LoopHooks {
  beforeModel?(call: ModelCall): void | Promise<void>;
  afterModel?(call: ModelCall, output: ModelOutput): void | Promise<void>;
  beforeTool?(call: ToolCall): void | Promise<void>;
  afterTool?(call: ToolCall, outcome: ToolOutcome): void | Promise<void>;
}

/** Runs each hook of `hooks` in order; a hook that throws ends the run (it is a bug). */
export function combineHooks(hooks: readonly LoopHooks[]): Required<LoopHooks> {
  return {
    async beforeModel(call) {
      for (const hook of hooks) await hook.beforeModel?.(call);
    },
    async afterModel(call, output) {
      for (const hook of hooks) await hook.afterModel?.(call, output);
    },
    async beforeTool(call) {
      for (const hook of hooks) await hook.beforeTool?.(call);
    },
    async afterTool(call, outcome) {
      for (const hook of hooks) await hook.afterTool?.(call, outcome);
    },
  };
}

/**
 * The recorder: model and tool calls as `model.*` and `tool.*` events. `model` is the model's
 * spec, recorded with each request (the trace export names the model from it).
 */
export function recordingHooks(sink: EventSink, options: { model?: string } = {}): LoopHooks {
  return {
    beforeModel(call) {
      sink.emit({
        type: "model.requested",
        payload: {
          historyLength: call.history.length,
          toolCount: call.tools.length,
          purpose: call.purpose,
          ...(options.model === undefined ? {} : { model: options.model }),
        },
      });
    },
    afterModel(_call, output) {
      sink.emit({ type: "model.completed", payload: output });
    },
    beforeTool(call) {
      sink.emit({
        type: "tool.started",
        payload: { callId: call.id, tool: call.name, args: call.args },
      });
    },
    afterTool(call, outcome) {
      const payload = outcome.ok
        ? { callId: call.id, tool: call.name, ok: true, result: outcome.result }
        : {
          callId: call.id,
          tool: call.name,
          ok: false,
          error: outcome.error,
          ...(outcome.result === undefined ? {} : { result: outcome.result }),
        };
      sink.emit({
        type: "tool.completed",
        payload: { ...payload, startedAt: outcome.startedAt, finishedAt: outcome.finishedAt },
      });
    },
  };
}
