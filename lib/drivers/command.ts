// The command driver: any program is an agent. The prompt goes to its stdin and REINS_PROMPT;
// stdout lines that are JSON of our event protocol (docs/event-protocol.md) become events, any
// other line is assistant text. Exit 0 completes the run; anything else fails it with the code and
// the tail of stderr. It neither retries nor interprets the program's output beyond that.
import { ReinsError } from "../core/errors.ts";
import { type EventInput, parseEventInput } from "../store/contracts.ts";
import type { Driver, DriverInput, DriverResult, EventSink } from "./driver.ts";
import { splitCommandLine } from "./command_line.ts";
import { resolvePath } from "../core/paths.ts";

const STDERR_KEEP = 64 * 1024;
const STOP_GRACE_MS = 5_000;

/** What the program said about its own outcome through protocol lines. */
interface Declared {
  status: "completed" | "failed" | null;
  reason: string | null;
  result: string | null;
  lastAssistant: string | null;
  /** Files declared with `{"type":"attachment.added","payload":{"path":…}}`, as given. */
  attachments: string[];
}

function takeLine(line: string, sink: EventSink, declared: Declared, text: string[]): void {
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
      takeEvent(parsed.event, sink, declared);
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

function takeEvent(event: EventInput, sink: EventSink, declared: Declared): void {
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
      sink.emit({
        type: "problem",
        payload: {
          source: "command",
          reason: "a program may not start a run: line ignored",
          text: JSON.stringify(event),
        },
      });
      return;
    case "session.linked":
    case "message.delta":
    case "model.requested":
    case "model.completed":
    case "tool.started":
    case "tool.completed":
    case "approval.requested":
    case "approval.resolved":
    case "question.requested":
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
      assertNever(event);
  }
}

function assertNever(value: never): never {
  throw new Error(`Unhandled event ${JSON.stringify(value)}`);
}

function keepTail(tail: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (chunk.length >= STDERR_KEEP) return chunk.slice(chunk.length - STDERR_KEEP);
  const keep = Math.min(tail.length, STDERR_KEEP - chunk.length);
  const out = new Uint8Array(keep + chunk.length);
  out.set(tail.subarray(tail.length - keep));
  out.set(chunk, keep);
  return out;
}

/** The last few lines of stderr, for a failure reason. */
export function stderrTail(bytes: Uint8Array, lines = 5, chars = 800): string {
  const text = new TextDecoder().decode(bytes).trimEnd();
  const tail = text.split("\n").slice(-lines).join(" ⏎ ");
  return tail.length > chars ? `…${tail.slice(-chars)}` : tail;
}

export function createCommandDriver(): Driver {
  return {
    name: "command",
    harness: "command",
    async start(input: DriverInput, sink: EventSink, signal: AbortSignal): Promise<DriverResult> {
      if (!input.exec) {
        throw new ReinsError("usage", "The command driver needs --exec 'PROGRAM ARGS'", {
          hint: "reins run --driver command --exec './my-agent --flag' 'the prompt'",
        });
      }
      const [program, ...args] = splitCommandLine(input.exec);
      const env: Record<string, string> = {
        ...input.env,
        REINS_PROMPT: input.prompt,
        REINS_RUN_ID: input.runId,
        REINS_SESSION_ID: input.sessionId,
        REINS_CONTEXT_ID: input.contextId ?? "",
      };
      if (input.resume?.nativeSessionId) env.REINS_NATIVE_SESSION_ID = input.resume.nativeSessionId;
      let child: Deno.ChildProcess;
      try {
        child = new Deno.Command(program, {
          args,
          cwd: input.cwd,
          env,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          return {
            status: "failed",
            reason: `Cannot start ${
              JSON.stringify(program)
            }: no such program (in ${input.cwd} or on PATH)`,
            result: null,
            exitCode: null,
          };
        }
        throw error;
      }

      let stopping = false;
      let killTimer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        stopping = true;
        try {
          child.kill("SIGINT");
        } catch { /* exited already */ }
        killTimer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* exited already */ }
        }, STOP_GRACE_MS);
      };
      const onKill = () => {
        try {
          child.kill("SIGKILL");
        } catch { /* exited already */ }
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      input.kill.addEventListener("abort", onKill, { once: true });

      const writePrompt = (async () => {
        const writer = child.stdin.getWriter();
        try {
          await writer.write(new TextEncoder().encode(input.prompt));
          await writer.close();
        } catch {
          // The program did not read its stdin: fine, the prompt is in REINS_PROMPT too.
        }
      })();

      let stderr: Uint8Array = new Uint8Array(0);
      const readStderr = (async () => {
        for await (const chunk of child.stderr) stderr = keepTail(stderr, chunk);
      })();

      const declared: Declared = {
        status: null,
        reason: null,
        result: null,
        lastAssistant: null,
        attachments: [],
      };
      const text: string[] = [];
      const decoder = new TextDecoder();
      let pending = "";
      let sinkError: unknown = null;
      for await (const chunk of child.stdout) {
        if (sinkError) continue; // drain so the child is never blocked on a full pipe
        pending += decoder.decode(chunk, { stream: true });
        let at: number;
        let from = 0;
        try {
          while ((at = pending.indexOf("\n", from)) >= 0) {
            const line = pending.slice(from, at).replace(/\r$/, "");
            from = at + 1;
            if (line.length > 0) takeLine(line, sink, declared, text);
          }
        } catch (error) {
          sinkError = error;
          onAbort();
        }
        pending = pending.slice(from);
      }
      pending += decoder.decode();
      if (pending.length > 0 && !sinkError) takeLine(pending, sink, declared, text);
      const status = await child.status;
      clearTimeout(killTimer);
      signal.removeEventListener("abort", onAbort);
      input.kill.removeEventListener("abort", onKill);
      await Promise.all([writePrompt, readStderr]);
      if (sinkError) throw sinkError;

      const plain = text.length > 0 ? text.join("\n") : null;
      if (plain !== null) {
        sink.emit({ type: "message.completed", payload: { role: "assistant", text: plain } });
      }
      const result = declared.result ?? declared.lastAssistant ?? plain;
      const attachments = declared.attachments.map((path) => resolvePath(path, input.cwd));
      if (stopping) {
        return {
          status: "interrupted",
          reason: `stopped by a signal; ${program} ${describeExit(status)}`,
          result,
          exitCode: status.code,
          attachments,
        };
      }
      if (!status.success) {
        const tail = stderrTail(stderr);
        return {
          status: "failed",
          reason: `${program} ${describeExit(status)}${tail ? `: ${tail}` : ""}`,
          result,
          exitCode: status.code,
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

function describeExit(status: Deno.CommandStatus): string {
  return status.signal ? `was ended by ${status.signal}` : `exited with code ${status.code}`;
}
