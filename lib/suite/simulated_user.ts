// The simulated user: a model that plays the scenario's persona in its situation. Given the
// conversation so far it writes the user's next message, or ends the conversation by calling the
// `end_conversation` tool — an explicit signal, never a guess from the wording. It is told who it
// is and what it wants, not what the scenario tests.
import type { Message, Model, ToolSpec } from "../model/mod.ts";
import { ReinsError } from "../core/errors.ts";

export const END_TOOL: ToolSpec = {
  name: "end_conversation",
  description: "End the conversation: your goal is met, or you give up.",
  parameters: {
    type: "object",
    properties: { reason: { type: "string", description: "why the conversation ends" } },
    additionalProperties: false,
  },
};

export type UserMove = { kind: "say"; text: string } | { kind: "end"; reason: string };

export interface Exchange {
  /** The user's message, and the agent's answer to it (null when it gave none). */
  user: string;
  agent: string | null;
}

/** The simulated user could not go on: the scenario cannot run (status error). */
export class SimulatedUserError extends ReinsError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("run_failed", message, options);
    this.name = "SimulatedUserError";
  }
}

function systemPrompt(persona: Record<string, unknown>, instruction: string): string {
  return [
    "You play a user talking to an AI agent. Stay in character: write only what this user would",
    "say next, as plain text, without quoting or narrating. When the user's goal is met, or the",
    "user would give up, call the `end_conversation` tool instead of writing a message.",
    Object.keys(persona).length ? `\nWho you are: ${JSON.stringify(persona)}` : "",
    instruction ? `\nYour situation: ${instruction}` : "",
  ].join(" ").replace(/ \n/g, "\n");
}

/**
 * The conversation from the simulated user's side: its own messages are the assistant's, the
 * agent's answers are the user's.
 */
function historyOf(
  persona: Record<string, unknown>,
  instruction: string,
  exchanges: readonly Exchange[],
): Message[] {
  const history: Message[] = [{ role: "system", text: systemPrompt(persona, instruction) }];
  history.push({ role: "user", text: "(The agent is waiting. Write your first message.)" });
  for (const exchange of exchanges) {
    history.push({ role: "assistant", text: exchange.user, toolCalls: [] });
    history.push({ role: "user", text: exchange.agent?.trim() || "(The agent said nothing.)" });
  }
  return history;
}

/** Asks the simulated user for its next move. */
export async function nextUserMove(
  model: Model,
  scenario: { persona: Record<string, unknown>; instruction: string },
  exchanges: readonly Exchange[],
  signal: AbortSignal,
): Promise<UserMove> {
  let output;
  try {
    output = await model.complete({
      history: historyOf(scenario.persona, scenario.instruction, exchanges),
      tools: [END_TOOL],
      purpose: "turn",
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new SimulatedUserError(
      `The simulated user (${model.name}) could not answer: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const end = output.toolCalls.find((call) => call.name === END_TOOL.name);
  if (end) {
    const reason = (end.args as { reason?: unknown } | null)?.reason;
    return {
      kind: "end",
      reason: typeof reason === "string" && reason ? reason : "the user ended it",
    };
  }
  const text = (output.text ?? "").trim();
  if (text === "") {
    throw new SimulatedUserError(
      `The simulated user (${model.name}) neither wrote a message nor ended the conversation`,
    );
  }
  return { kind: "say", text };
}
