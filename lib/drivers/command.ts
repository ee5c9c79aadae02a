// The command driver: any program is an agent. The prompt goes to its stdin and REINS_PROMPT;
// stdout lines that are JSON of our event protocol (docs/event-protocol.md) become events, any
// other line is assistant text. With `--exec-stdin events` its stdin stays open and carries JSON
// lines: the prompt, then the answers to its questions and the decisions on its approvals
// (command_replies.ts). Exit 0 completes the run; anything else fails it with the code and
// the tail of stderr. It neither retries nor interprets the program's output beyond that.
import { assertNever } from "../core/assert_never.ts";
import { ReinsError } from "../core/errors.ts";
import type { EventInput } from "../store/mod.ts";
import { parseEventInput } from "../store/contract_runtime.ts";
import {
  agentOf,
  type Driver,
  type DriverInput,
  type DriverResult,
  type EventSink,
} from "./driver.ts";
import { splitCommandLine } from "../core/command_line.ts";
import { CommandReplies } from "./command_replies.ts";
import { BUDGET_EXHAUSTED } from "../core/budget.ts";
// budgetUse from here, not harness.ts: the command driver loads none of the harness drivers' code.
import { type BudgetSupport, budgetUse, BudgetWatch, limitsSet } from "./budget_watch.ts";
import { describeExit, HarnessProcess, HarnessStartError, stderrSummary } from "./process.ts";
import { resolvePath } from "../core/paths.ts";

/** What the program said about its own outcome through protocol lines. */
interface Declared {
  status: "completed" | "failed" | null;
  reason: string | null;
  result: string | null;
  lastAssistant: string | null;
  /** Files declared with `{"type":"attachment.added","payload":{"path":…}}`, as given. */
  attachments: string[];
}

type Ask = Extract<EventInput, { type: "question.requested" | "approval.requested" }>;

function takeLine(
  line: string,
  sink: EventSink,
  declared: Declared,
  text: string[],
  asked: (ask: Ask) => void,
): void {
  const trimmed = line.trimStart();
  if (trimmed.startsWith("{")) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (value !== null && typeof value === "object" && "type" in value) {
      if (isAttachmentDeclaration(value)) {
        declared.attachments.push(value.payload.path);
        return;
      }
      const parsed = parseEventInput(value);
      if (!parsed.ok) {
        sink.emit({
          type: "problem",
          payload: {
            source: "command",
            reason: `a protocol line was refused: ${parsed.reason}`,
            text: line.slice(0, 4096),
          },
        });
        return;
      }
      takeEvent(parsed.event, sink, declared, asked);
      return;
    }
  }
  text.push(line);
  sink.emit({ type: "message.delta", payload: { role: "assistant", text: `${line}\n` } });
}

/** `attachment.added` with only a path: the program declares a file; reins copies and hashes it. */
function isAttachmentDeclaration(value: object): value is { payload: { path: string } } {
  const { type, payload } = value as { type?: unknown; payload?: Record<string, unknown> };
  return type === "attachment.added" && typeof payload === "object" && payload !== null &&
    typeof payload.path === "string" && payload.path !== "" && payload.sha256 === undefined;
}

function takeEvent(
  event: EventInput,
  sink: EventSink,
  declared: Declared,
  asked: (ask: Ask) => void,
): void {
  switch (event.type) {
    case "completed":
    case "failed": {
      // The program's own verdict; the run command appends the terminal event once it has
      // weighed it against the exit code.
      declared.status = event.type;
      declared.reason = event.payload.reason;
      declared.result = typeof event.payload.result === "string"
        ? event.payload.result
        : event.payload.result === undefined || event.payload.result === null
        ? null
        : JSON.stringify(event.payload.result);
      return;
    }
    case "message.completed":
      if (event.payload.role === "assistant") declared.lastAssistant = event.payload.text;
      sink.emit(event);
      return;
    case "run.started":
    case "network.connection":
      sink.emit({
        type: "problem",
        payload: {
          source: "command",
          reason: event.type === "run.started"
            ? "a program may not start a run: line ignored"
            : "a program may not report its own connections (reins's proxy does): line ignored",
          text: JSON.stringify(event),
        },
      });
      return;
    case "approval.requested":
    case "question.requested":
      sink.emit(event);
      asked(event);
      return;
    case "session.linked":
    case "message.delta":
    case "model.requested":
    case "model.completed":
    case "model.call.started":
    case "model.call.completed":
    case "tool.started":
    case "tool.completed":
    case "approval.resolved":
    case "question.answered":
    case "usage.updated":
    case "compaction.started":
    case "compaction.completed":
    case "budget.warning":
    case "heartbeat":
    case "attachment.added":
    case "status.changed":
    case "problem":
      sink.emit(event);
      return;
    default:
      assertNever(event, "event");
  }
}

/** A program's own usage.updated lines are running totals as it goes: all three limits hold. */
const COMMAND_BUDGET: BudgetSupport = { native: [], live: ["turns", "tokens", "usd"], atEnd: [] };

export function createCommandDriver(): Driver {
  return {
    name: "command",
    harness: "command",
    budgetNotes: (input) =>
      limitsSet(input.budget).length === 0 ? [] : [
        "--driver command: the budget holds only through the usage.updated lines the program " +
        "reports (docs/event-protocol.md); reins stops it once they cross a limit, and cannot " +
        "if it reports none",
      ],
    async start(input: DriverInput, given: EventSink, signal: AbortSignal): Promise<DriverResult> {
      const agent = agentOf(input, "command", "command");
      // The usage the program reports holds it to --max-turns/--max-tokens/--max-usd.
      let child: HarnessProcess | null = null;
      const watch = new BudgetWatch(input.budget, COMMAND_BUDGET, {
        sink: given,
        stop: () => child?.stop("signal"),
      });
      const sink: EventSink = {
        emit(event) {
          given.emit(event);
          if (event.type === "usage.updated") watch.observe(budgetUse(event.payload));
        },
      };
      if (!agent.exec) {
        throw new ReinsError("usage", "The command driver needs --exec 'PROGRAM ARGS'", {
          hint: "reins run --driver command --exec './my-agent --flag' 'the prompt'",
        });
      }
      const [program, ...args] = splitCommandLine(agent.exec);
      // The request first, as every driver records it: a later turn (of any driver on the
      // context, the built-in loop's included) reads the conversation from these messages.
      sink.emit({ type: "message.completed", payload: { role: "user", text: input.prompt } });
      const env: Record<string, string> = {
        ...input.env,
        REINS_PROMPT: input.prompt,
        REINS_RUN_ID: input.runId,
        REINS_SESSION_ID: input.sessionId,
        REINS_CONTEXT_ID: input.contextId ?? "",
      };
      if (input.resume?.nativeSessionId) env.REINS_NATIVE_SESSION_ID = input.resume.nativeSessionId;
      try {
        child = HarnessProcess.start({
          cli: program,
          program,
          args,
          cwd: input.cwd,
          env,
          stdin: "piped",
          // Any program may think for as long as it likes, unless --idle-timeout says otherwise.
          idleTimeoutSeconds: agent.idleTimeoutSeconds ?? 0,
          signal,
          kill: input.kill,
          onStarted: input.onProcess,
          confine: input.confine,
        });
      } catch (error) {
        if (error instanceof HarnessStartError) {
          return { status: "failed", reason: error.message, result: null, exitCode: null };
        }
        throw error;
      }
      const replies = new CommandReplies({ input, sink, program, child }, signal);
      // The program may not read its stdin: fine, the prompt is in REINS_PROMPT too. With events
      // on stdin it stays open for the replies until the program has given its verdict.
      const writePrompt = replies.listening
        ? replies.sendPrompt()
        : child.write(input.prompt).then(() => child.closeStdin());

      const declared: Declared = {
        status: null,
        reason: null,
        result: null,
        lastAssistant: null,
        attachments: [],
      };
      const text: string[] = [];
      let sinkError: unknown = null;
      for await (const batch of child.lineBatches()) {
        if (sinkError) continue; // drain so the child is never blocked on a full pipe
        try {
          for (const line of batch) {
            const before = declared.status;
            takeLine(line, sink, declared, text, (ask) => replies.take(ask));
            if (before === null && declared.status !== null && replies.listening) {
              void child.closeStdin();
            }
          }
        } catch (error) {
          sinkError = error;
          child.stop("signal");
        }
      }
      const exit = await child.finished();
      await replies.finish();
      await writePrompt;
      if (sinkError) throw sinkError;

      const plain = text.length > 0 ? text.join("\n") : null;
      if (plain !== null) {
        sink.emit({ type: "message.completed", payload: { role: "assistant", text: plain } });
      }
      const result = declared.result ?? declared.lastAssistant ?? plain;
      const attachments = declared.attachments.map((path) => resolvePath(path, input.cwd));
      const exitCode = exit.code;
      if (watch.exhausted !== null) {
        return {
          status: "failed",
          reason: BudgetWatch.reason(watch.exhausted),
          code: BUDGET_EXHAUSTED,
          result,
          exitCode,
          attachments,
        };
      }
      if (exit.stoppedBy === "signal" || exit.stoppedBy === "kill") {
        return {
          status: "interrupted",
          reason: `stopped by a signal; ${program} ${describeExit(exit)}`,
          result,
          exitCode,
          attachments,
        };
      }
      if (exit.stoppedBy === "idle") {
        return {
          status: "failed",
          reason:
            `${program} said nothing for ${agent.idleTimeoutSeconds} s and was stopped; the last thing it said: ${
              exit.lastSaid ?? "nothing"
            }`,
          result,
          exitCode,
          attachments,
        };
      }
      if (exit.code !== 0) {
        const tail = stderrSummary(exit.stderr, 5, 800);
        return {
          status: "failed",
          reason: `${program} ${describeExit(exit)}${tail ? `: ${tail}` : ""}`,
          result,
          exitCode,
          attachments,
        };
      }
      if (declared.status === "failed") {
        return {
          status: "failed",
          reason: declared.reason ?? `${program} reported a failure`,
          result,
          exitCode: 0,
          attachments,
        };
      }
      return { status: "completed", reason: declared.reason, result, exitCode: 0, attachments };
    },
  };
}
