// The built-in demo model, used when --model is absent: deterministic, no network, no key. It
// plays a tiny agent through the loop's tools — list the directory, read one file, write
// NOTES.md about them, answer — and on a later turn of the same conversation shows that it sees
// the earlier one. It understands nothing of the prompt beyond quoting it.
import {
  type Message,
  type Model,
  type ModelOutput,
  type ModelRequest,
  SUMMARY_PREFIX,
} from "./model.ts";
import { estimateTokens } from "./tokens.ts";
import type { ToolCall } from "../store/mod.ts";

export const DEMO_MODEL_NAME = "demo";
export const DEMO_NOTES_FILE = "NOTES.md";

type ToolMessage = Extract<Message, { role: "tool" }>;
type Answer = Pick<ModelOutput, "text" | "toolCalls" | "stopReason" | "reasoning">;

export function demoModel(): Model {
  return {
    name: DEMO_MODEL_NAME,
    complete(request) {
      return Promise.resolve(withUsage(request, answer(request)));
    },
  };
}

function answer(request: ModelRequest): Answer {
  if (request.purpose === "summary") return say(summarize(request.history));
  const conversation = readConversation(request.history);
  const { prompt, earlier, turn, results } = conversation;
  const canUseTools = request.tools.length > 0;
  const failed = results.find((result) => !result.ok);
  if (failed) {
    return say(
      `I could not finish: ${failed.name} failed (${firstLine(failed.content)}). ` +
        `You asked: “${prompt}”.`,
    );
  }
  const listing = results.find((result) => result.name === "list_files");
  const read = results.find((result) => result.name === "read_file");
  const written = results.find((result) => result.name === "write_file");
  const readPath = read ? argsPathOf(request.history, read.callId) : null;
  if (!canUseTools || written) {
    const reading = read ? { path: readPath, content: read.content } : null;
    return say(finalAnswer(conversation, listing, reading, written, !canUseTools));
  }
  if (!listing) return call(turn, 1, "list_files", { path: "." });
  const files = entriesOf(listing);
  const target = pickFile(files, earlier.length > 0);
  if (!read && target) return call(turn, 2, "read_file", { path: target });
  return call(turn, 3, "write_file", {
    path: DEMO_NOTES_FILE,
    content: notes(prompt, earlier, files, readPath, read?.content ?? null),
  });
}

interface Conversation {
  prompt: string;
  /** The user's requests of earlier turns, oldest first. */
  earlier: string[];
  /** 1 for the first turn of the conversation, 2 for the next… (makes call ids unique). */
  turn: number;
  /** Tool results of this turn so far. */
  results: ToolMessage[];
}

function readConversation(history: readonly Message[]): Conversation {
  const requests: number[] = [];
  history.forEach((message, index) => {
    if (message.role === "user" && !message.text.startsWith(SUMMARY_PREFIX)) requests.push(index);
  });
  const at = requests[requests.length - 1] ?? -1;
  const prompt = at >= 0 ? (history[at] as { text: string }).text : "";
  const earlier = requests.slice(0, -1).map((index) => (history[index] as { text: string }).text);
  const results = history.slice(at + 1).filter((m): m is ToolMessage => m.role === "tool");
  return { prompt, earlier, turn: requests.length, results };
}

function say(text: string): Answer {
  return { text, toolCalls: [], stopReason: "end_turn", reasoning: null };
}

function call(
  turn: number,
  step: number,
  name: string,
  args: Record<string, unknown>,
): Answer {
  const toolCall: ToolCall = { id: `demo_${turn}_${step}`, name, args };
  return { text: null, toolCalls: [toolCall], stopReason: "tool_use", reasoning: null };
}

function entriesOf(listing: ToolMessage): string[] {
  if (listing.content === "(empty)") return [];
  return listing.content.split("\n").filter((line) => line && !line.startsWith("[…"));
}

/** On a later turn the notes it wrote; otherwise a README, else the first plain file. */
function pickFile(entries: readonly string[], laterTurn: boolean): string | null {
  const files = entries.filter((entry) => !entry.endsWith("/") && !entry.endsWith("@"));
  if (laterTurn && files.includes(DEMO_NOTES_FILE)) return DEMO_NOTES_FILE;
  const others = files.filter((file) => file !== DEMO_NOTES_FILE);
  return others.find((file) => /^readme/i.test(file)) ?? others[0] ?? null;
}

function argsPathOf(history: readonly Message[], callId: string): string | null {
  for (const message of history) {
    if (message.role !== "assistant") continue;
    const found = message.toolCalls.find((toolCall) => toolCall.id === callId);
    const path = (found?.args as { path?: unknown } | undefined)?.path;
    if (typeof path === "string") return path;
  }
  return null;
}

function notes(
  prompt: string,
  earlier: readonly string[],
  files: readonly string[],
  readPath: string | null,
  content: string | null,
): string {
  const lines = [
    "# Notes",
    "",
    `Written by reins's built-in demo model for the request “${prompt}”.`,
    "",
    "## Files in the working directory",
    "",
    ...(files.length ? files.map((file) => `- ${file}`) : ["(none)"]),
  ];
  if (readPath !== null && content !== null) {
    const body = content.split("\n").filter((line) => line.trim() !== "");
    lines.push(
      "",
      `## ${readPath}`,
      "",
      ...body.slice(0, 5).map((line) => `> ${line}`),
      "",
      `(${body.length} non-empty lines, ${content.length} characters)`,
    );
  }
  if (earlier.length > 0) {
    lines.push("", "## Earlier requests", "", ...earlier.map((request) => `- “${request}”`));
  }
  return lines.join("\n") + "\n";
}

function finalAnswer(
  conversation: Conversation,
  listing: ToolMessage | undefined,
  read: { path: string | null; content: string } | null,
  written: ToolMessage | undefined,
  outOfBudget: boolean,
): string {
  const { prompt, earlier } = conversation;
  const done: string[] = [];
  if (listing) done.push(`listed the working directory (${entriesOf(listing).length} entries)`);
  if (read) {
    const lines = read.content.split("\n").filter((line) => line.trim() !== "").length;
    const what = read.path === DEMO_NOTES_FILE && earlier.length > 0
      ? `re-read the ${DEMO_NOTES_FILE} I wrote last time`
      : `read ${read.path ?? "a file"}`;
    done.push(`${what} (${lines} non-empty lines)`);
  }
  if (written) {
    done.push(
      earlier.length > 0
        ? `updated ${DEMO_NOTES_FILE} with what I found and your earlier requests`
        : `wrote ${DEMO_NOTES_FILE} with a summary of what I found`,
    );
  }
  const work = done.length === 0
    ? "I stopped before doing anything."
    : `I ${done.slice(0, -1).join(", ")}${done.length > 1 ? " and " : ""}${done.at(-1)}.`;
  const stopped = outOfBudget && !written ? " The budget ran out, so I stopped there." : "";
  if (earlier.length === 0) return `You asked: “${prompt}”. ${work}${stopped}`;
  return `Last time you asked “${
    earlier[earlier.length - 1]
  }”. This time you asked: “${prompt}”. ` +
    `${work}${stopped}`;
}

function summarize(history: readonly Message[]): string {
  const transcript = history.filter((m) => m.role === "user").map((m) =>
    (m as { text: string })
      .text
  ).join("\n");
  const requests = transcript.split("\n").filter((line) => line.startsWith("User: "));
  const tools = transcript.split("\n").filter((line) => line.startsWith("Assistant called "));
  return `Earlier the user made ${requests.length} request(s)` +
    (requests.length ? `, the last: ${requests[requests.length - 1].slice(6)}` : "") +
    `; the agent made ${tools.length} tool call(s).`;
}

function firstLine(text: string): string {
  return text.split("\n")[0].replace(/^Error: /, "");
}

/** Usage as a real model would report it, estimated the same way every time. */
function withUsage(request: ModelRequest, output: Answer): ModelOutput {
  const outputChars = (output.text?.length ?? 0) + JSON.stringify(output.toolCalls).length;
  return {
    ...output,
    usage: {
      inputTokens: estimateTokens(request.history),
      outputTokens: Math.ceil(outputChars / 4),
      costUsd: 0,
    },
  };
}
