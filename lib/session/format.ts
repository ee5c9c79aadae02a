// A recording as text for people: `short` (one line per event) and `verbose` (the same line, then
// previews of texts, reasoning, tool arguments and results, errors with hints, and timings), a
// header from the run's record, and what the run waits for with the command that answers it.
// Pure: events in, lines out; reading files and following runs are the callers' business.
import { assertNever } from "../core/assert_never.ts";
import type { PendingDecision, RunEvent, RunRecord } from "../store/mod.ts";
import { RunTally, statsSummary } from "./stats.ts";
import {
  CONTROL_BUT_NEWLINE,
  countChars,
  formatBytes,
  formatCost,
  formatDuration,
  formatOffset,
  groupDigits,
  isoMs,
  oneLine,
  plural,
  preview,
  previewValue,
  quoted,
} from "./text.ts";

export type ShowMode = "short" | "verbose";

/** How much of each thing a line shows, in characters. */
export const LIMITS = {
  short: { text: 60, args: 60, result: 40, error: 80 },
  verbose: { text: 400, reasoning: 200, args: 240, result: 240, error: 400 },
} as const;

// sequence (5) + 2 + offset (9) + 2: where an event's text starts, and its detail lines.
const MARGIN = " ".repeat(18);

/** Loose payload fields (ones a driver adds beyond the contract) by name. */
function extra(payload: unknown, field: string): unknown {
  return (payload as Record<string, unknown>)[field];
}

function extraString(payload: unknown, field: string): string | null {
  const value = extra(payload, field);
  return typeof value === "string" && value !== "" ? value : null;
}

function msBetween(from: string | null | undefined, to: string | null | undefined): number | null {
  if (!from || !to) return null;
  const ms = isoMs(to) - isoMs(from);
  return Number.isFinite(ms) ? ms : null;
}

/** Whether `text` holds a control character other than its `newlines` joining newlines. */
function hasControls(text: string, newlines: number): boolean {
  if (CONTROL_BUT_NEWLINE.test(text)) return true;
  let count = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) {
    if (++count > newlines) return true;
  }
  return false;
}

/**
 * Raw `lines` (EventFormatter.addLines) joined by newlines, each on one line as oneLine makes it.
 * The joined text is looked at once for control characters: when its only ones are the newlines
 * that join the lines (nearly always), it is the text; otherwise each line is made one-line first.
 * A line at a time cost a copy of every line (`deno task bench views`, "reins show"). The lines
 * are left as they were.
 */
export function joinOneLine(lines: readonly string[]): string {
  const text = lines.join("\n");
  if (!hasControls(text, lines.length - 1)) return text;
  return lines.map(oneLine).join("\n");
}

/** Hints for errors the loop's tools report, for the person reading the transcript. */
function hintFor(error: string): string | null {
  if (error.startsWith("denied by policy")) {
    return "the run had --approve deny; run with --approve ask or auto to let tools run";
  }
  if (/^The command timed out after/.test(error)) {
    return "the model may pass run_command a larger timeoutSeconds (at most 600)";
  }
  return null;
}

/**
 * Formats a run's events one at a time, keeping what later lines need: the run's start (for the
 * time offsets), when the model was last asked (for call durations) and the names of tools in
 * flight (for results that do not repeat them).
 */
export class EventFormatter {
  readonly mode: ShowMode;
  readonly #startMs: number;
  #modelRequestedAt: string | null = null;
  readonly #tools = new Map<string, string>();
  // What one event's lines are made of, kept from event to event: a run's events come in bursts
  // within one millisecond, and most have no detail lines (see `deno task bench views`).
  readonly #details: string[] = [];
  #timestamp: string | null = null;
  #offsetMs = NaN;
  #offset = "";

  constructor(mode: ShowMode, startedAt: string) {
    this.mode = mode;
    this.#startMs = isoMs(startedAt);
  }

  /** The event's line (short), or its line and detail lines (verbose), joined by newlines. */
  format(event: RunEvent): string {
    const details = this.#details;
    details.length = 0;
    // Names and ids come from harnesses too: nothing of theirs reaches the terminal raw.
    const line = oneLine(this.#line(event, details));
    if (this.mode === "short" || details.length === 0) return line;
    return `${line}\n${details.map((detail) => `${MARGIN}  ${oneLine(detail)}`).join("\n")}`;
  }

  /**
   * What format() makes of each of `events`, joined by newlines: the same text, made for many
   * events at once (see addLines and joinOneLine).
   */
  formatAll(events: readonly RunEvent[]): string {
    const lines: string[] = [];
    this.addLines(events, lines);
    return joinOneLine(lines);
  }

  /**
   * Appends the lines format() makes of each of `events` to `lines`, raw: with any control
   * characters their fields hold. joinOneLine makes them what format() gives; a caller gathers
   * the lines of many pieces of a log and joins them once, just before writing them.
   */
  addLines(events: readonly RunEvent[], lines: string[]): void {
    const details = this.#details;
    const verbose = this.mode === "verbose";
    for (let i = 0; i < events.length; i++) {
      details.length = 0;
      lines.push(this.#line(events[i], details));
      if (verbose) {
        for (let d = 0; d < details.length; d++) lines.push(`${MARGIN}  ${details[d]}`);
      }
    }
  }

  /** The event's line as it is, before oneLine; detail lines go into `details`. */
  #line(event: RunEvent, details: string[]): string {
    // The same time as the last event's (a burst) is the same offset: not read again.
    if (event.timestamp !== this.#timestamp) {
      this.#timestamp = event.timestamp;
      const ms = isoMs(event.timestamp) - this.#startMs;
      if (ms !== this.#offsetMs) {
        this.#offsetMs = ms;
        this.#offset = formatOffset(ms).padStart(9);
      }
    }
    const line = `${String(event.sequence).padStart(5)}  ${this.#offset}  ${
      this.#body(event, details)
    }`;
    return event.ignored === undefined ? line : `${line}  [ignored: ${event.ignored}]`;
  }

  #body(event: RunEvent, details: string[]): string {
    const verbose = this.mode === "verbose";
    const limit = LIMITS[this.mode];
    switch (event.type) {
      case "run.started": {
        const p = event.payload;
        if (verbose) {
          details.push(`cwd: ${p.cwd}`);
          if (p.goal !== null) details.push(`goal: ${quoted(p.goal, LIMITS.verbose.text)}`);
          if (p.contextId !== null) details.push(`context: ${p.contextId}`);
          if (p.resumeOf !== null) details.push(`resumes: ${p.resumeOf}`);
          return `start ${p.harness} (driver ${p.driver})`;
        }
        return `start ${p.harness} (driver ${p.driver})${
          p.goal === null ? "" : `: ${quoted(p.goal, limit.text)}`
        }`;
      }
      case "session.linked":
        return `session linked: native id ${event.payload.nativeSessionId}`;
      case "message.delta":
      case "message.completed": {
        const { role, text } = event.payload;
        const what = event.type === "message.delta" ? `${role} (part)` : role;
        if (verbose) {
          details.push(quoted(text, LIMITS.verbose.text));
          return `${what}: ${plural(countChars(text), "char")}`;
        }
        return `${what}: ${quoted(text, limit.text)}`;
      }
      case "model.requested": {
        const p = event.payload;
        this.#modelRequestedAt = event.timestamp;
        const purpose = extraString(p, "purpose");
        return `→ model${purpose && purpose !== "turn" ? ` (${purpose})` : ""}: history ${
          groupDigits(p.historyLength)
        }, ${plural(p.toolCount, "tool")}`;
      }
      case "model.completed": {
        const p = event.payload;
        const requestedAt = this.#modelRequestedAt;
        this.#modelRequestedAt = null;
        const usage = p.usage;
        const tokens =
          usage && (usage.inputTokens !== undefined || usage.outputTokens !== undefined)
            ? ` [${groupDigits(usage.inputTokens ?? 0)} in / ${
              groupDigits(usage.outputTokens ?? 0)
            } out]`
            : "";
        if (!verbose) {
          const what = p.toolCalls.length > 0
            ? `${plural(p.toolCalls.length, "tool call")}: ${
              p.toolCalls.length === 1
                ? p.toolCalls[0].name
                : p.toolCalls.map((call) => call.name).join(", ")
            }`
            : p.text === null
            ? "no text"
            : quoted(p.text, limit.text);
          return `← model: ${what}${tokens}`;
        }
        const took = msBetween(requestedAt, event.timestamp);
        if (p.stopReason !== null) details.push(`stop: ${p.stopReason}`);
        if (p.reasoning) {
          details.push(`reasoning: ${quoted(p.reasoning, LIMITS.verbose.reasoning)}`);
        }
        if (p.text !== null && p.text !== "") {
          details.push(`text: ${quoted(p.text, LIMITS.verbose.text)}`);
        }
        for (const call of p.toolCalls) {
          details.push(
            `call ${call.id} ${call.name} ${previewValue(call.args, LIMITS.verbose.args)}`,
          );
        }
        if (usage) {
          const more = [
            usage.cacheReadTokens ? `${groupDigits(usage.cacheReadTokens)} cache read` : "",
            usage.cacheWriteTokens ? `${groupDigits(usage.cacheWriteTokens)} cache write` : "",
            usage.reasoningTokens ? `${groupDigits(usage.reasoningTokens)} reasoning` : "",
            usage.costUsd !== undefined ? formatCost(usage.costUsd) : "",
          ].filter(Boolean);
          if (more.length > 0) details.push(`usage: ${more.join(", ")}`);
        }
        return `← model: ${
          p.toolCalls.length > 0 ? plural(p.toolCalls.length, "tool call") : "answer"
        }${tokens}${took === null ? "" : `, ${formatDuration(took)}`}`;
      }
      case "model.call.started": {
        const p = event.payload;
        const what = p.wire === "opaque" ? `${p.method} ${p.path}` : p.wire;
        if (verbose) {
          details.push(`${p.method} ${p.route}${p.path}`);
          if (p.body !== null) details.push(`request body: ${formatBytes(p.body.bytes)}`);
        }
        return `→ ${p.callId} ${what}${p.model ? ` ${p.model}` : ""}${p.stream ? " (stream)" : ""}`;
      }
      case "model.call.completed":
        return this.#callCompleted(event.payload, details);
      case "tool.started": {
        const p = event.payload;
        this.#tools.set(p.callId, p.tool);
        if (verbose) {
          details.push(`args: ${previewValue(p.args, LIMITS.verbose.args)}`);
          return `  → ${p.tool} (${p.callId})`;
        }
        return `  → ${p.tool} ${previewValue(p.args, limit.args)}`;
      }
      case "tool.completed":
        return this.#toolCompleted(event.payload, details);
      case "approval.requested": {
        const p = event.payload;
        return `? approval ${p.approvalId} asked: ${p.tool} ${previewValue(p.args, limit.args)}`;
      }
      case "approval.resolved": {
        const p = event.payload;
        const reason = p.reason ? `: ${quoted(p.reason, limit.text)}` : "";
        return `${p.decision === "allow" ? "✓" : "✗"} approval ${p.approvalId} ${
          p.decision === "allow" ? "allowed" : "denied"
        } by ${p.by}${reason}`;
      }
      case "question.requested":
        return `? question ${event.payload.questionId}: ${quoted(event.payload.text, limit.text)}`;
      case "question.answered":
        return `✓ question ${event.payload.questionId} answered: ${
          quoted(event.payload.answer, limit.text)
        }`;
      case "usage.updated": {
        // One of every model call's events: written piece by piece, no list to join.
        const p = event.payload;
        let text = `usage so far: ${
          p.inputTokens === null ? "-" : groupDigits(p.inputTokens)
        } in / ${p.outputTokens === null ? "-" : groupDigits(p.outputTokens)} out tokens`;
        if (p.cacheReadTokens || p.cacheWriteTokens) {
          text += `, cache ${groupDigits(p.cacheReadTokens ?? 0)} read / ${
            groupDigits(p.cacheWriteTokens ?? 0)
          } write`;
        }
        if (p.costUsd !== null) {
          text += `, ${formatCost(p.costUsd)}${p.costEstimated ? " (estimated)" : ""}`;
        }
        if (p.requests !== null) text += `, ${plural(p.requests, "request")}`;
        return text;
      }
      case "compaction.started":
        return `⇩ compaction ${event.payload.stage}`;
      case "compaction.completed": {
        const p = event.payload;
        return `⇧ compaction ${p.stage}: ${groupDigits(p.before)} → ${
          groupDigits(p.after)
        } tokens (estimated)`;
      }
      case "budget.warning": {
        const p = event.payload;
        const of = p.limit ? ` of ${p.limit}` : "";
        const scope = extraString(p, "scope");
        const whose = scope ? ` of the ${scope}'s` : "";
        return p.ratio >= 1
          ? `≫ budget reached${
            p.limit ? ` (${p.limit}${whose ? `,${whose.slice(3)}` : ""})` : ""
          }: ` +
            "no model call starts past it"
          : `≫ budget warning: ${Math.round(p.ratio * 100)}%${of}${
            whose ? ` (${scope})` : ""
          } used`;
      }
      case "heartbeat":
        return `iteration ${event.payload.iteration}`;
      case "network.connection": {
        const p = event.payload;
        const verdict = p.allowed ? "→" : "✗ refused";
        if (p.reason) details.push(`reason: ${p.reason}`);
        return `${verdict} ${p.host}:${p.port} (${formatBytes(p.bytesSent)} out, ` +
          `${formatBytes(p.bytesReceived)} in)`;
      }
      case "attachment.added": {
        const p = event.payload;
        if (verbose) details.push(`path: ${p.path}`, `sha256: ${p.sha256}`);
        return `+ attachment ${p.name} (${formatBytes(p.bytes)}, ${p.contentType})`;
      }
      case "status.changed": {
        const p = event.payload;
        return `status ${p.status}${p.reason ? `: ${preview(p.reason, limit.error)}` : ""}`;
      }
      case "problem": {
        const p = event.payload;
        if (verbose && p.text !== undefined) {
          details.push(`line: ${preview(p.text, LIMITS.verbose.result)}`);
        }
        return `! problem from ${p.source}: ${preview(p.reason, limit.error)}`;
      }
      case "completed":
      case "failed": {
        const p = event.payload;
        const hint = extraString(p, "hint");
        if (verbose) {
          if (p.reason !== null) details.push(`reason: ${preview(p.reason, LIMITS.verbose.error)}`);
          if (hint !== null) details.push(`hint: ${hint}`);
          if (p.result !== null && p.result !== undefined) {
            details.push(`result: ${previewValue(p.result, LIMITS.verbose.text)}`);
          }
          return `■ ${event.type}`;
        }
        const why = p.reason === null ? "" : ` (${preview(p.reason, limit.error)})`;
        const result = p.result === null || p.result === undefined
          ? ""
          : `: ${previewValue(p.result, limit.text)}`;
        return `■ ${event.type}${why}${result}`;
      }
      default:
        return assertNever(event, "event type");
    }
  }

  #callCompleted(
    p: Extract<RunEvent, { type: "model.call.completed" }>["payload"],
    details: string[],
  ): string {
    const limit = LIMITS[this.mode];
    const usage = p.usage;
    const tokens = usage && (usage.inputTokens !== undefined || usage.outputTokens !== undefined)
      ? ` [${groupDigits(usage.inputTokens ?? 0)} in / ${groupDigits(usage.outputTokens ?? 0)} out]`
      : "";
    const timing = `${
      p.firstByteMs === null ? "" : `, first byte ${formatDuration(p.firstByteMs)}`
    }, ${formatDuration(p.durationMs)}`;
    const said = p.error ? `: ${preview(p.error, limit.error)}` : "";
    if (this.mode === "verbose") {
      if (usage) {
        const more = [
          usage.cacheReadTokens ? `${groupDigits(usage.cacheReadTokens)} cache read` : "",
          usage.cacheWriteTokens ? `${groupDigits(usage.cacheWriteTokens)} cache write` : "",
          usage.reasoningTokens ? `${groupDigits(usage.reasoningTokens)} reasoning` : "",
          usage.costUsd !== undefined ? `${formatCost(usage.costUsd)} (estimated)` : "",
        ].filter(Boolean);
        if (more.length > 0) details.push(`usage: ${more.join(", ")}`);
      }
      if (p.body !== null) {
        details.push(
          `answer body: ${formatBytes(p.body.bytes)} in ${plural(p.chunks.length, "chunk")}`,
        );
      }
      if (p.model) details.push(`model: ${p.model}`);
    }
    switch (p.outcome) {
      case "ok":
        return `← ${p.callId} ${p.status ?? ""} ${p.stopReason ?? "answered"}${tokens}${timing}`;
      case "error":
        return `← ${p.callId} error ${p.status ?? ""}${said}${timing}`;
      case "refused":
        return `✗ ${p.callId} refused${said}`;
      case "failed":
        return `✗ ${p.callId} failed${said}${timing}`;
      case "aborted":
        return `✗ ${p.callId} abandoned by the harness${timing}`;
      default:
        return assertNever(p.outcome, "call outcome");
    }
  }

  #toolCompleted(p: Extract<RunEvent, { type: "tool.completed" }>["payload"], details: string[]) {
    const tool = extraString(p, "tool") ?? this.#tools.get(p.callId) ?? p.callId;
    this.#tools.delete(p.callId);
    const took = msBetween(p.startedAt, p.finishedAt);
    const timing = took === null ? "" : `, ${formatDuration(took)}`;
    const limit = LIMITS[this.mode];
    const result = p.result as Record<string, unknown> | undefined;
    const isCommand = typeof result === "object" && result !== null && "exitCode" in result &&
      ("stdout" in result || "stderr" in result);
    if (this.mode === "short") {
      if (!p.ok) {
        return `  ✗ ${tool} failed${timing}: ${preview(p.error ?? "no error given", limit.error)}`;
      }
      if (isCommand) {
        const stdout = typeof result.stdout === "string" && result.stdout !== ""
          ? `, stdout ${quoted(result.stdout, limit.result)}`
          : "";
        return `  ← ${tool} ok${timing}: exit code ${String(result.exitCode)}${stdout}`;
      }
      const shown = p.result === undefined ? "" : `: ${previewValue(p.result, limit.result)}`;
      return `  ← ${tool} ok${timing}${shown}`;
    }
    if (!p.ok) {
      const error = p.error ?? "no error given";
      details.push(`error: ${preview(error, LIMITS.verbose.error)}`);
      const hint = extraString(p, "hint") ??
        (typeof result?.hint === "string" ? result.hint : null) ?? hintFor(error);
      if (hint !== null) details.push(`hint: ${hint}`);
    }
    if (isCommand) {
      details.push(`exit code: ${String(result.exitCode)}`);
      for (const stream of ["stdout", "stderr"] as const) {
        const text = result[stream];
        if (typeof text === "string" && text !== "") {
          details.push(`${stream}: ${quoted(text, LIMITS.verbose.result)}`);
        }
      }
    } else if (p.result !== undefined) {
      details.push(`result: ${previewValue(p.result, LIMITS.verbose.result)}`);
    }
    return `  ${p.ok ? "←" : "✗"} ${tool} (${p.callId}) ${p.ok ? "ok" : "failed"}${timing}`;
  }
}

/** The lines above the events: the run, its status and where it ran (verbose: every field). */
export function formatHeader(
  record: RunRecord,
  mode: ShowMode,
  extra: { snapshot?: string } = {},
): string[] {
  const reason = record.terminalReason ? ` (${preview(record.terminalReason, 120)})` : "";
  const lines = [
    `run ${record.id} · ${record.status}${reason} · ${record.harness} (driver ${record.driver}) · ${record.trigger}`,
  ];
  if (record.relation !== null && record.resumedFromRunId !== null) {
    lines.push(`  ${record.relation} of ${record.resumedFromRunId}`);
  } else if (record.resumedFromRunId !== null) {
    lines.push(`  resumes ${record.resumedFromRunId}`);
  }
  if (record.parentRunId !== null) lines.push(`  child of ${record.parentRunId}`);
  if (mode === "verbose") {
    lines.push(
      `  session ${record.sessionId}${
        record.nativeSessionId ? ` (native ${record.nativeSessionId})` : ""
      }${record.contextId ? `, context ${record.contextId}` : ""}`,
    );
    lines.push(`  cwd ${record.cwd}${extra.snapshot ? `: ${extra.snapshot}` : ""}`);
    if (record.goal !== null) lines.push(`  goal ${quoted(record.goal, LIMITS.verbose.text)}`);
  }
  const ended = record.endedAt === null
    ? ""
    : `, ended ${record.endedAt} (${
      formatDuration(msBetween(record.startedAt, record.endedAt) ?? 0)
    })`;
  const exit = record.exitCode === null ? "" : `, exit code ${record.exitCode}`;
  lines.push(`  started ${record.startedAt}${ended}${exit}`);
  return lines.map(oneLine);
}

/**
 * What the run waits for, each with the command that answers it. A settled run can wait for
 * nothing: its unanswered requests are listed as such, without a command.
 */
export function formatPending(record: RunRecord, pending: readonly PendingDecision[]): string[] {
  const active = record.status === "queued" || record.status === "running" ||
    record.status === "waiting";
  const lines: string[] = [];
  for (const decision of pending) {
    const p = decision.payload as Record<string, unknown>;
    if (decision.kind === "approval") {
      const what = `${String(p.tool)} ${previewValue(p.args, LIMITS.short.args)}`;
      lines.push(
        active
          ? `waiting for approval ${decision.id} (${what}): reins approve ${record.id} ${decision.id} [--deny]`
          : `approval ${decision.id} (${what}) was never answered: the run ${record.status} first`,
      );
    } else {
      const what = quoted(String(p.text), LIMITS.short.text);
      lines.push(
        active
          ? `waiting for an answer to ${decision.id} (${what}): reins answer ${record.id} ${decision.id} TEXT`
          : `question ${decision.id} (${what}) was never answered: the run ${record.status} first`,
      );
    }
  }
  return lines.map(oneLine);
}

/**
 * The last line: how the run ended (or that it is still going) and what it took. A run still
 * going has gone on from its start until `nowMs`, however long ago its last event was (a run
 * waiting for approval writes nothing while it waits).
 */
export function formatFooter(record: RunRecord, tally: RunTally, nowMs = Date.now()): string {
  const stats = tally.stats(record);
  const active = record.status === "queued" || record.status === "running" ||
    record.status === "waiting";
  const sinceStart = Math.max(stats.durationMs, nowMs - Date.parse(record.startedAt));
  const state = active
    ? `${record.status} for ${
      formatDuration(Number.isFinite(sinceStart) ? sinceStart : stats.durationMs)
    } so far (follow it: reins show ${record.id} --follow)`
    : `${record.status} after ${formatDuration(stats.durationMs)}`;
  return `${state} · ${plural(stats.events, "event")} · ${statsSummary(stats)}`;
}

/** A whole transcript: header, one entry per event, what the run waits for, the footer. */
export function formatTranscript(
  record: RunRecord,
  events: readonly RunEvent[],
  pending: readonly PendingDecision[],
  mode: ShowMode,
  nowMs = Date.now(),
): string {
  const formatter = new EventFormatter(mode, record.startedAt);
  const tally = new RunTally();
  const lines = formatHeader(record, mode);
  lines.push("");
  for (const event of events) {
    lines.push(formatter.format(event));
    tally.add(event);
  }
  lines.push("");
  lines.push(...formatPending(record, pending));
  lines.push(formatFooter(record, tally, nowMs));
  return lines.join("\n");
}
