// What the interop checks need to know about each real CLI: its driver, its fake model server
// (answering the CLI's side calls apart), how to read the history a model call carries, the
// call of its shell tool that writes out.txt, and which API errors it gives up on.
import { createClaudeDriver } from "../../lib/drivers/claude.ts";
import { createCodexDriver } from "../../lib/drivers/codex.ts";
import { createGeminiDriver } from "../../lib/drivers/gemini.ts";
import { createOpencodeDriver } from "../../lib/drivers/opencode.ts";
import { anthropicTranscript, startFakeAnthropic } from "../fixtures/fake_anthropic.ts";
import { chatTranscript, startFakeChat } from "../fixtures/fake_chat.ts";
import { geminiTranscript, isGeminiTurnCall, startFakeGemini } from "../fixtures/fake_gemini.ts";
import {
  answeringAside,
  type RecordedRequest,
  text,
  toolCall,
} from "../fixtures/fake_model_server.ts";
import { responsesTranscript, startFakeResponses } from "../fixtures/fake_responses.ts";
import type { HarnessSpec } from "./_suite.ts";

const WRITE_FILE = "echo tool-ran > out.txt; echo done";

export const claudeSpec: HarnessSpec = {
  driver: "claude",
  cli: "Claude Code",
  create: createClaudeDriver,
  serve: startFakeAnthropic,
  isTurnCall: (request) => request.modelCall,
  transcript: anthropicTranscript,
  shellTool: toolCall("Bash", { command: WRITE_FILE, description: "Write out.txt" }),
  fatalStatuses: [401, 500],
  idleTimeoutSeconds: 60,
};

export const codexSpec: HarnessSpec = {
  driver: "codex",
  cli: "Codex",
  create: createCodexDriver,
  serve: startFakeResponses,
  isTurnCall: (request) => request.modelCall,
  transcript: responsesTranscript,
  shellTool: toolCall("exec_command", { cmd: WRITE_FILE }),
  fatalStatuses: [401, 500],
  idleTimeoutSeconds: 60,
};

export const geminiSpec: HarnessSpec = {
  driver: "gemini",
  cli: "Gemini CLI",
  create: createGeminiDriver,
  // Side calls (`:generateContent`) are answered apart so they take no scripted reply.
  serve: (script) =>
    startFakeGemini(answeringAside((request) => !isGeminiTurnCall(request), text("{}"), script)),
  isTurnCall: isGeminiTurnCall,
  transcript: geminiTranscript,
  shellTool: toolCall("run_shell_command", { command: WRITE_FILE }),
  fatalStatuses: [401, 500],
  idleTimeoutSeconds: 60,
};

function isTitleCall(request: RecordedRequest): boolean {
  const first = (request.body as { messages?: { content?: unknown }[] } | null)?.messages?.[0];
  return JSON.stringify(first?.content ?? "").includes("title generator");
}

export const opencodeSpec: HarnessSpec = {
  driver: "opencode",
  cli: "opencode",
  create: createOpencodeDriver,
  // opencode first asks the model for the conversation's title.
  serve: (script) => startFakeChat(answeringAside(isTitleCall, text("A title"), script)),
  isTurnCall: (request) => request.modelCall && !isTitleCall(request),
  transcript: chatTranscript,
  shellTool: toolCall("bash", { command: WRITE_FILE, description: "Write out.txt" }),
  // A 5xx is retried forever (opencode_test.ts checks the idle timeout ends it).
  fatalStatuses: [401],
  // Its start-up alone can take 20 s on a loaded two-core machine.
  idleTimeoutSeconds: 90,
};
