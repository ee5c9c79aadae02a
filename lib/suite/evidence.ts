// What a scenario's conversation left to judge: each turn's run (status, cost, answer) and the
// transcript of all of them in order, tool calls included. Built from the recorded runs through
// the same mapping a platform report uses, so what the checks see is what the platform is sent.
import type { RecordingSource, TranscriptItem } from "../platform/mod.ts";

export interface TurnEvidence {
  runId: string;
  /** What the user said to start the turn. */
  prompt: string;
  status: "completed" | "failed" | "interrupted";
  reason: string | null;
  /** null when the harness reported no cost for the turn. */
  costUsd: number | null;
  /** Input + output tokens of the turn; null when the harness reported neither. */
  tokens?: number | null;
  /** The turn's final answer. */
  result: string | null;
}

export interface Evidence {
  /** The scenario's working directory (its copy of the workdir). */
  cwd: string;
  turns: TurnEvidence[];
  /** Every turn's transcript, in order. */
  transcript: TranscriptItem[];
  /** Files the turns attached (recordings), for the platform report. */
  recordings: RecordingSource[];
}

/** The agent's last answer: the last turn's result, else the last thing it said. */
export function finalText(evidence: Evidence): string | null {
  const last = evidence.turns[evidence.turns.length - 1];
  if (last?.result) return last.result;
  const said = assistantTexts(evidence);
  return said.length ? said[said.length - 1] : null;
}

/** Everything the agent said, in order. */
export function assistantTexts(evidence: Evidence): string[] {
  const said: string[] = [];
  for (const item of evidence.transcript) {
    if (item.kind === "message" && item.speaker === "assistant") said.push(item.text);
  }
  return said;
}

/** The agent's cost over every turn, or null when any turn has no cost data. */
export function scenarioCost(evidence: Evidence): number | null {
  let total = 0;
  for (const turn of evidence.turns) {
    if (turn.costUsd === null) return null;
    total += turn.costUsd;
  }
  return total;
}

/** The tokens (input + output) over every turn, or null when any turn reported none. */
export function scenarioTokens(evidence: Evidence): number | null {
  let total = 0;
  for (const turn of evidence.turns) {
    if (turn.tokens === null || turn.tokens === undefined) return null;
    total += turn.tokens;
  }
  return total;
}

/** The cost that is known (turns without cost data count 0), for the table and the report. */
export function knownCost(evidence: Evidence): number {
  return evidence.turns.reduce((sum, turn) => sum + (turn.costUsd ?? 0), 0);
}

export interface ToolUse {
  name: string;
  refused: boolean;
}

export function toolUses(evidence: Evidence): ToolUse[] {
  const uses: ToolUse[] = [];
  for (const item of evidence.transcript) {
    if (item.kind === "tool") uses.push({ name: item.name, refused: item.refused === true });
  }
  return uses;
}

/** The transcript as plain lines, for a judge or a simulated user to read. */
export function transcriptText(items: readonly TranscriptItem[], limit = 60_000): string {
  const lines: string[] = [];
  for (const item of items) {
    if (item.kind === "message") {
      const who = item.speaker === "assistant"
        ? "Agent"
        : item.speaker === "user"
        ? "User"
        : item.speaker;
      lines.push(`${who}: ${item.text.trim()}`);
    } else {
      const args = JSON.stringify(item.arguments ?? {});
      const outcome = item.error ??
        (typeof item.result === "string" ? item.result : JSON.stringify(item.result ?? ""));
      lines.push(
        `[tool ${item.name}(${args.slice(0, 500)})${item.refused ? " refused" : ""} → ${
          String(outcome).slice(0, 500)
        }]`,
      );
    }
  }
  const text = lines.join("\n");
  // Keep the end: the outcome is what a judge grades.
  return text.length > limit ? `…${text.slice(text.length - limit)}` : text;
}
