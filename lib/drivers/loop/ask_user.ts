// The loop's `ask_user` tool: the model asks the person a question and the answer comes back as
// the tool's result. The loop records `question.requested`, the run waits (`waiting`) for
// `reins answer RUN question-N TEXT` — or a server's, or a replay's — and goes on with what it
// was told. It is no tool use to approve: --approve does not apply to it.
import type { ToolSpec } from "../../model/mod.ts";

export const ASK_USER = "ask_user";

export const ASK_USER_SPEC: ToolSpec = {
  name: ASK_USER,
  description: "Ask the user a question and wait for the answer, which is this tool's result. " +
    "Ask only what you cannot find out with the other tools; the run waits until someone answers.",
  parameters: {
    type: "object",
    properties: {
      question: { type: "string", description: "the question, as the user will read it" },
    },
    required: ["question"],
    additionalProperties: false,
  },
};

/** The question of an ask_user call, or the error the model reads for arguments that lack one. */
export function questionOf(args: unknown): { ok: true; question: string } | {
  ok: false;
  error: string;
} {
  let value = args;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return { ok: false, error: "Invalid arguments for ask_user: not JSON" };
    }
  }
  const question = (value as { question?: unknown } | null)?.question;
  if (typeof question !== "string" || question.trim() === "") {
    return {
      ok: false,
      error: "Invalid arguments for ask_user: give the question as a non-empty string at " +
        "args.question",
    };
  }
  return { ok: true, question };
}
