// The checks every real CLI goes through, driver + fake model server + memory sink: a turn
// recorded with the right events, a second turn that resumes (the server sees the first turn),
// a tool call, an API error, SIGINT (and resuming after it). Each *_test.ts registers them for
// its CLI and adds what is particular to it. Every turn runs under an outer deadline.
import assert from "node:assert/strict";
import type { HarnessDriver, Settings } from "../../lib/core/config.ts";
import type { Decisions, Driver, DriverInput, DriverResult } from "../../lib/drivers/driver.ts";
import type { EventInput } from "../../lib/store/contracts.ts";
import {
  apiError,
  type FakeServer,
  inOrder,
  type RecordedRequest,
  type Reply,
  type Script,
  stall,
  text,
} from "../fixtures/fake_model_server.ts";
import { driverInput, MemorySink, testSettings } from "../drivers/_helpers.ts";
import { type Installed, interopTest } from "./_install.ts";
import { makeScratch, type Scratch } from "./_scratch.ts";

export interface HarnessSpec {
  driver: HarnessDriver;
  cli: string;
  create(): Driver;
  /** Starts the CLI's fake model server (answering the CLI's side calls itself). */
  serve(script: Script): FakeServer;
  /** The model calls of the conversation itself (not titles or other side calls). */
  isTurnCall(request: RecordedRequest): boolean;
  /** A turn call's history as `role: text` lines. */
  transcript(request: RecordedRequest): string[];
  /** A call of the CLI's shell tool that writes `out.txt` in the working directory. */
  shellTool: Reply;
  /** The error statuses the CLI gives up on (rather than retrying forever). */
  fatalStatuses: number[];
  /** Seconds of silence the CLI may need at start-up on a loaded machine. */
  idleTimeoutSeconds: number;
}

/** A deadline for one test: rejects `work` and aborts `signal` when it passes. */
export async function withDeadline<T>(
  seconds: number,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      // Give the driver its grace period to stop the CLI before the test gives up.
      setTimeout(() => reject(new Error(`Test exceeded its ${seconds} s deadline`)), 7_000);
    }, seconds * 1000);
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export interface TurnOptions {
  prompt?: string;
  approval?: DriverInput["approval"];
  resume?: DriverInput["resume"];
  history?: EventInput[];
  decisions?: Decisions;
  idleTimeoutSeconds?: number;
  /** Aborted: the driver is stopped as by SIGINT. */
  signal?: AbortSignal;
  /** drivers.<cli>.model in the settings. */
  model?: string;
  prices?: Settings["prices"];
}

/** One turn of the real CLI through its driver, recorded in a memory sink. */
export async function driveTurn(
  spec: HarnessSpec,
  program: string,
  scratch: Scratch,
  options: TurnOptions,
  sink = new MemorySink(),
): Promise<{ result: DriverResult; sink: MemorySink }> {
  const settings = testSettings(
    scratch.home,
    { [spec.driver]: { program, args: scratch.args, model: options.model } },
    options.prices ?? {},
  );
  const result = await spec.create().start(
    driverInput({
      harness: spec.driver,
      settings,
      cwd: scratch.cwd,
      env: scratch.env,
      prompt: options.prompt ?? "say hello",
      approval: options.approval ?? "auto",
      resume: options.resume ?? null,
      history: options.history ?? [],
      ...(options.decisions ? { decisions: options.decisions } : {}),
      idleTimeoutSeconds: options.idleTimeoutSeconds ?? spec.idleTimeoutSeconds,
    }),
    sink,
    options.signal ?? new AbortController().signal,
  );
  return { result, sink };
}

export function linkedSession(sink: MemorySink): string {
  const linked = sink.ofType("session.linked");
  assert.ok(linked.length > 0, `no session.linked among ${sink.types().join(", ")}`);
  return linked[linked.length - 1].payload.nativeSessionId;
}

function assertTranscriptHas(lines: string[], role: RegExp, text: string): number {
  const at = lines.findIndex((line) => {
    const colon = line.indexOf(": ");
    return role.test(line.slice(0, colon)) && line.slice(colon + 2).includes(text);
  });
  assert.ok(at >= 0, `no ${role} line with ${JSON.stringify(text)} in:\n${lines.join("\n")}`);
  return at;
}

async function waitFor(what: string, check: () => boolean, signal: AbortSignal): Promise<void> {
  while (!check()) {
    if (signal.aborted) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Registers the common checks for one CLI. */
export function registerCommonChecks(spec: HarnessSpec, installed: Installed): void {
  const name = (what: string) => `${spec.driver} driver start() ${what} (real ${spec.cli})`;

  interopTest(installed, name("records a text turn with the right events"), async (program) => {
    await withDeadline(120, async (signal) => {
      await using server = spec.serve(inOrder(text("Hello from the fake.")));
      await using scratch = await makeScratch(spec.driver, server.url);
      const { result, sink } = await driveTurn(spec, program, scratch, { signal });
      assert.deepEqual(
        {
          status: result.status,
          reason: result.reason,
          result: result.result,
          exitCode: result.exitCode,
        },
        { status: "completed", reason: null, result: "Hello from the fake.", exitCode: 0 },
      );
      // The messages' role and text (a driver may add what it knows, as Claude Code's model call).
      const messages = sink.ofType("message.completed").map(({ payload: { role, text } }) => ({
        role,
        text,
      }));
      assert.deepEqual(messages, [
        { role: "user", text: "say hello" },
        { role: "assistant", text: "Hello from the fake." },
      ]);
      linkedSession(sink);
      const usage = sink.ofType("usage.updated").at(-1)?.payload;
      assert.ok(usage && (usage.inputTokens ?? 0) > 0 && (usage.outputTokens ?? 0) > 0);
      assert.deepEqual(sink.ofType("problem"), []);
      // Every event the CLI caused keeps its line.
      for (const event of sink.events.slice(1)) assert.ok(event.native !== undefined, event.type);
      assert.equal(server.requests.filter(spec.isTurnCall).length, 1);
    });
  });

  interopTest(installed, name("resumes the session on a second turn"), async (program) => {
    await withDeadline(180, async (signal) => {
      await using server = spec.serve(inOrder(text("First answer."), text("Second answer.")));
      await using scratch = await makeScratch(spec.driver, server.url);
      const first = await driveTurn(spec, program, scratch, {
        prompt: "remember the word kiwi",
        signal,
      });
      assert.equal(first.result.status, "completed", first.result.reason ?? "");
      const native = linkedSession(first.sink);
      const second = await driveTurn(spec, program, scratch, {
        prompt: "which word was it",
        resume: { sessionId: "reins-session", nativeSessionId: native },
        history: first.sink.events,
        signal,
      });
      assert.equal(second.result.status, "completed", second.result.reason ?? "");
      assert.equal(second.result.result, "Second answer.");
      assert.equal(linkedSession(second.sink), native);
      const calls = server.requests.filter(spec.isTurnCall);
      const lines = spec.transcript(calls[calls.length - 1]);
      const asked = assertTranscriptHas(lines, /^user$/, "remember the word kiwi");
      const answered = assertTranscriptHas(lines, /^(assistant|model)$/, "First answer.");
      const askedAgain = assertTranscriptHas(lines, /^user$/, "which word was it");
      assert.ok(asked < answered && answered < askedAgain, lines.join("\n"));
    });
  });

  interopTest(
    installed,
    name("records a tool call as tool.started and tool.completed"),
    async (program) => {
      await withDeadline(180, async (signal) => {
        await using server = spec.serve(inOrder(spec.shellTool, text("The file is written.")));
        await using scratch = await makeScratch(spec.driver, server.url);
        const { result, sink } = await driveTurn(spec, program, scratch, {
          prompt: "write the file",
          signal,
        });
        assert.equal(result.status, "completed", result.reason ?? "");
        assert.equal(result.result, "The file is written.");
        const started = sink.ofType("tool.started");
        const completed = sink.ofType("tool.completed");
        assert.equal(started.length, 1, JSON.stringify(sink.plain()));
        assert.equal(completed.length, 1);
        assert.equal(completed[0].payload.callId, started[0].payload.callId);
        assert.equal(completed[0].payload.ok, true, JSON.stringify(completed[0].payload));
        assert.match(String(completed[0].payload.result), /done/);
        assert.ok(sink.types().indexOf("tool.started") < sink.types().indexOf("tool.completed"));
        assert.equal(await Deno.readTextFile(`${scratch.cwd}/out.txt`), "tool-ran\n");
      });
    },
  );

  for (const status of spec.fatalStatuses) {
    interopTest(
      installed,
      name(`fails with the reason of an API error ${status}`),
      async (program) => {
        await withDeadline(120, async (signal) => {
          await using server = spec.serve(
            inOrder(apiError(status, `the fake says no (${status})`)),
          );
          await using scratch = await makeScratch(spec.driver, server.url);
          const { result } = await driveTurn(spec, program, scratch, { signal });
          assert.equal(result.status, "failed");
          assert.ok(
            result.reason?.startsWith(spec.cli),
            `the reason names ${spec.cli}: ${result.reason}`,
          );
          // Codex words a 5xx its own way; every other reason carries the server's message.
          if (!(spec.driver === "codex" && status >= 500)) {
            assert.match(
              result.reason ?? "",
              new RegExp(`the fake says no \\(${status}\\)|${status}`),
            );
          }
        });
      },
    );
  }

  interopTest(
    installed,
    name("returns interrupted on SIGINT and the session resumes"),
    async (program) => {
      await withDeadline(180, async (deadline) => {
        let stalled = true;
        await using server = spec.serve((request) =>
          stalled ? stall() : text(`Resumed: ${spec.transcript(request).length > 0}`)
        );
        await using scratch = await makeScratch(spec.driver, server.url);
        const stop = new AbortController();
        const sink = new MemorySink();
        const pending = driveTurn(spec, program, scratch, {
          prompt: "take your time",
          signal: AbortSignal.any([stop.signal, deadline]),
        }, sink);
        // Mid-call, once the CLI has said which session it is in (opencode says so only once
        // its step has started, after the call).
        await waitFor(
          "the CLI's model call and its session id",
          () => server.requests.some(spec.isTurnCall) && sink.ofType("session.linked").length > 0,
          deadline,
        );
        stop.abort();
        const { result } = await pending;
        assert.equal(result.status, "interrupted", result.reason ?? "");
        assert.ok(result.reason?.startsWith(`${spec.cli} was stopped`), result.reason ?? "");
        stalled = false;
        const native = linkedSession(sink);
        const again = await driveTurn(spec, program, scratch, {
          prompt: "go on",
          resume: { sessionId: "reins-session", nativeSessionId: native },
          signal: deadline,
        });
        assert.equal(again.result.status, "completed", again.result.reason ?? "");
        const calls = server.requests.filter(spec.isTurnCall);
        assertTranscriptHas(spec.transcript(calls[calls.length - 1]), /^user$/, "take your time");
      });
    },
  );
}
