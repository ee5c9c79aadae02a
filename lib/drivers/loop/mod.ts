// The built-in agent loop: the `loop` driver, its models and the pieces the run, replay and
// show commands need. Import from here rather than from the files behind it.
export { createLoopDriver, LOOP_DRIVER_NAME, LOOP_HARNESS } from "./loop_driver.ts";
export type { LoopDriverOptions } from "./loop_driver.ts";
export { checkModelSpec, MODEL_SPECS, resolveModel } from "./resolve_model.ts";
export type { ResolveModelOptions } from "./resolve_model.ts";
export { defaultStopReason, ModelError } from "./model.ts";
export type { Message, Model, ModelOutput, ModelPurpose, ModelRequest, ToolSpec } from "./model.ts";
export { DEMO_MODEL_NAME, DEMO_NOTES_FILE, demoModel } from "./demo_model.ts";
export { loadMockScript, mockModel, recordedModel, scriptedModel } from "./mock_model.ts";
export type { MockResponse } from "./mock_model.ts";
export { OPENAI_RETRY, openaiModel } from "./openai_model.ts";
export type { OpenAIModelOptions } from "./openai_model.ts";
export { combineHooks, recordingHooks } from "./hooks.ts";
export type { LoopHooks, ModelCall, ToolOutcome } from "./hooks.ts";
export { COMPACTION_STAGES, DEFAULT_COMPACTION, SUMMARY_PREFIX } from "./compaction.ts";
export type { CompactionOptions, CompactionStage } from "./compaction.ts";
export { historyFromEvents } from "./history.ts";
export { createToolbox, TOOL_NAMES } from "./tools.ts";
export type { Toolbox, ToolboxOptions, ToolResult } from "./tools.ts";
