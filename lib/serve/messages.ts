// What a client's message means to reins: the prompt of a new turn (its text parts, and its data
// parts as JSON), or the answer to what a waiting task asked (allow/deny for an approval, the text
// for a question). Files (raw or url parts) are refused with ContentTypeNotSupported: a turn's
// input is text.
import type { MessageIn, PartIn } from "./a2a/wire.ts";
import { invalidParams, RPC, RpcError } from "./jsonrpc.ts";

/** Media types a client may accept that our text artifact satisfies. */
const TEXT_OUTPUT = /^(text\/plain|text\/\*|\*\/\*|\*)(\s*;.*)?$/i;

function contentTypeNotSupported(message: string): RpcError {
  return new RpcError(RPC.contentTypeNotSupported, message);
}

function partText(part: PartIn, index: number): string {
  if (part.raw !== undefined || part.url !== undefined) {
    throw contentTypeNotSupported(
      `message.parts[${index}] is a file (${
        part.mediaType || "raw or url"
      }): reins serve takes text and data parts`,
    );
  }
  if (part.text !== undefined) return part.text;
  if (part.data !== undefined) return JSON.stringify(part.data, null, 2);
  throw invalidParams(`message.parts[${index}]`, "a part needs one of text, raw, url or data");
}

/** The text of a message: its parts in order, blank-line separated. */
export function messageText(message: MessageIn): string {
  if (message.role !== "ROLE_USER") {
    throw invalidParams("message.role", "a client's message has the role ROLE_USER");
  }
  const text = message.parts.map(partText).filter((t) => t !== "").join("\n\n");
  if (text.trim() === "") throw invalidParams("message.parts", "the message has no text");
  return text;
}

/** Refuses a request whose client accepts no output reins gives (all of it is text/plain). */
export function checkAcceptedOutput(modes: readonly string[] | undefined): void {
  if (modes === undefined || modes.length === 0) return;
  if (modes.some((mode) => TEXT_OUTPUT.test(mode.trim()))) return;
  throw contentTypeNotSupported(
    `configuration.acceptedOutputModes does not accept text/plain, which is all reins answers: got ${
      modes.join(", ")
    }`,
  );
}

export interface ApprovalAnswer {
  decision: "allow" | "deny";
  reason: string | null;
}

const ALLOW = /^(allow|allowed|approve|approved|yes|y|ok|okay)\b/i;
const DENY = /^(deny|denied|reject|rejected|refuse|no|n)\b/i;

/**
 * The decision a message gives on an approval: a data part `{decision: "allow"|"deny", reason?}`,
 * or text that starts with allow/yes/approve or deny/no/reject (the rest is the reason).
 */
export function approvalAnswer(message: MessageIn): ApprovalAnswer {
  for (const part of message.parts) {
    const data = part.data as { decision?: unknown; reason?: unknown } | undefined;
    if (
      data && typeof data === "object" && (data.decision === "allow" || data.decision === "deny")
    ) {
      return {
        decision: data.decision,
        reason: typeof data.reason === "string" && data.reason !== "" ? data.reason : null,
      };
    }
  }
  const text = message.parts.map((p) => p.text ?? "").join(" ").trim();
  const decision = ALLOW.test(text) ? "allow" : DENY.test(text) ? "deny" : null;
  if (decision === null) {
    throw invalidParams(
      "message.parts",
      'the task waits for an approval: answer "allow" or "deny" (or a data part {"decision": "allow"})',
    );
  }
  const rest = text.replace(decision === "allow" ? ALLOW : DENY, "").replace(/^[\s:,.;-]+/, "");
  return { decision, reason: rest === "" ? null : rest };
}
