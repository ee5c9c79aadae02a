// The built-in agent loop: the `loop` driver and the pieces the run, replay and show commands
// need. Its models are the model room's (lib/model/mod.ts). Import from here rather than from the
// files behind it.
export { createLoopDriver, LOOP_DRIVER_NAME, LOOP_HARNESS } from "./loop_driver.ts";
export type { LoopDriverOptions } from "./loop_driver.ts";
export { combineHooks, recordingHooks } from "./hooks.ts";
export type { LoopHooks, ModelCall, ToolOutcome } from "./hooks.ts";
export { COMPACTION_STAGES, DEFAULT_COMPACTION } from "./compaction.ts";
export type { CompactionOptions, CompactionStage } from "./compaction.ts";
export { historyFromEvents } from "./history.ts";
export { createToolbox, TOOL_NAMES } from "./tools.ts";
export type { Toolbox, ToolboxOptions, ToolResult } from "./tools.ts";
