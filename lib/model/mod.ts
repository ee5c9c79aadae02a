// The model room: the interface every model answers through (model.ts) and the models that are
// not the loop's own business — the demo, mock and replay models that answer inside reins, the
// OpenAI-compatible client — with `--model SPEC` resolved to one of them. The built-in loop, a
// suite's judge and its simulated user sit above it; import from here rather than the files behind.
export { defaultStopReason, ModelError, SUMMARY_PREFIX } from "./model.ts";
export type { Message, Model, ModelOutput, ModelPurpose, ModelRequest, ToolSpec } from "./model.ts";
export { estimateTokens, messageChars } from "./tokens.ts";
export { checkModelSpec, MODEL_SPECS, resolveModel } from "./resolve_model.ts";
export type { ResolveModelOptions } from "./resolve_model.ts";
export { DEMO_MODEL_NAME, DEMO_NOTES_FILE, demoModel } from "./demo_model.ts";
export { loadMockScript, mockModel, recordedModel, scriptedModel } from "./mock_model.ts";
export type { MockResponse } from "./mock_model.ts";
export { OPENAI_RETRY, openaiModel } from "./openai_model.ts";
export type { OpenAIModelOptions } from "./openai_model.ts";
export { readServerSentEvents } from "./sse.ts";
export type { ServerSentEvent } from "./sse.ts";
export { modelFacts } from "./model_facts.ts";

// What the other rooms use besides:
