// The built-in loop records what a streaming model says as it says it: `message.delta` events
// while the call runs (coalesced), which `reins show --follow` shows before the call ends, and
// which an interrupted call keeps. The model is a real HTTP server on port 0 speaking OpenAI's
// Chat Completions stream, paced by the test.
import assert from "node:assert/strict";
import { reins, spawnReins, tempDir } from "../support/reins.ts";

interface PacedServer extends AsyncDisposable {
  url: string;
  /** Lets the stream go on past its pause (the second part of the text, then the end). */
  release(): void;
}

interface PacedReply {
  /** Streamed a character a chunk. */
  text: string;
  /** Streamed after release(), then the end; without it the stream ends after `text`. */
  rest?: string;
  /** Hold the stream open after `text`, for ever. */
  stall?: boolean;
  toolCall?: { id: string; name: string; args: Record<string, unknown> };
}

/** Answers the chat completions in turn with `replies` (the last one again after that). */
function pacedServer(...replies: PacedReply[]): PacedServer {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const encoder = new TextEncoder();
  const frame = (delta: Record<string, unknown>, finish: string | null = null, usage?: unknown) =>
    encoder.encode(
      `data: ${
        JSON.stringify({
          id: "chatcmpl-paced",
          object: "chat.completion.chunk",
          created: 0,
          model: "paced",
          choices: [{ index: 0, delta, finish_reason: finish }],
          ...(usage ? { usage } : {}),
        })
      }\n\n`,
    );
  const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  let served = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.body?.cancel();
    const reply = replies[Math.min(served++, replies.length - 1)];
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        streams.add(controller);
        controller.enqueue(frame({ role: "assistant", content: "" }));
        for (const char of reply.text) controller.enqueue(frame({ content: char }));
        if (reply.stall) return;
        if (reply.rest !== undefined) {
          await released;
          for (const char of reply.rest) controller.enqueue(frame({ content: char }));
        }
        const call = reply.toolCall;
        if (call) {
          controller.enqueue(frame({
            tool_calls: [{
              index: 0,
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: JSON.stringify(call.args) },
            }],
          }));
        }
        const usage = { prompt_tokens: 9, completion_tokens: 4 };
        controller.enqueue(frame({}, call ? "tool_calls" : "stop", usage));
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
        streams.delete(controller);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    release,
    async [Symbol.asyncDispose]() {
      release();
      for (const controller of streams) {
        try {
          controller.close();
        } catch { /* closed */ }
      }
      await server.shutdown();
    },
  };
}

interface Event {
  type: string;
  sequence: number;
  payload: { text?: string; role?: string; status?: string };
}

function eventsOf(home: string): Event[] {
  try {
    const runs = [...Deno.readDirSync(`${home}/runs`)].filter((e) => !e.name.startsWith("."));
    if (runs.length === 0) return [];
    return Deno.readTextFileSync(`${home}/runs/${runs[0].name}/events.jsonl`).split("\n")
      .filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}

async function waitFor(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The texts of the `assistant (part)` lines of a transcript after its last request, joined. */
function lastCallParts(shown: string): string {
  const lines = shown.split("\n");
  const asked = lines.findLastIndex((line) => line.includes("→ model"));
  return lines.slice(asked + 1).map((line) => /assistant \(part\): "(.*)"$/.exec(line)?.[1])
    .filter((text) => text !== undefined).join("");
}

const deltasOf = (events: Event[]) =>
  events.filter((e) => e.type === "message.delta" && e.payload.role === "assistant");

// regression: the loop recorded nothing of a streamed answer until the call ended, so a follower
// saw nothing for the whole call.
Deno.test("regression: reins show --follow shows a streaming model's text before its call ends", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await using server = pacedServer({ text: "Hello, ", rest: "world." });
  const run = spawnReins(
    ["run", "--model", "openai:paced", "--base-url", server.url, "--json", "greet"],
    { home, cwd: dir.path },
  );
  const runOut = new Response(run.stdout).text();
  const runErr = new Response(run.stderr).text();
  await waitFor("the run to start", () => eventsOf(home).length > 0);
  const follower = spawnReins(["show", "last", "--follow"], { home, cwd: dir.path });
  const reader = follower.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let shown = "";
  const deadline = setTimeout(() => {
    // The old loop recorded nothing until the call ended, which the server holds off for ever.
    server.release();
  }, 20_000);
  while (lastCallParts(shown) !== "Hello, ") {
    const { value, done } = await reader.read();
    if (done || shown.includes("← model")) break;
    shown += value;
  }
  clearTimeout(deadline);
  assert.equal(lastCallParts(shown), "Hello, ", shown);
  // The call has not ended: the server holds the rest.
  assert.ok(!eventsOf(home).some((e) => e.type === "model.completed"), shown);
  server.release();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    shown += value;
  }
  await follower.status;
  const status = await run.status;
  assert.equal(status.code, 0, await runErr);
  assert.equal(JSON.parse(await runOut).result, "Hello, world.");
  assert.equal(lastCallParts(shown.slice(0, shown.indexOf("← model"))), "Hello, world.");
  assert.match(shown, /completed after/);
  const events = eventsOf(home);
  const deltas = deltasOf(events);
  assert.equal(deltas.map((e) => e.payload.text).join(""), "Hello, world.");
  const completed = events.find((e) => e.type === "model.completed")!;
  assert.ok(deltas.every((e) => e.sequence < completed.sequence));
  // Coalesced: 13 characters streamed one a chunk are a few events, not 13.
  assert.ok(deltas.length <= 4, `${deltas.length} deltas`);
});

// regression: an interrupted streaming call lost the text it had streamed.
Deno.test("regression: an interrupted streaming call keeps its partial text, and a replay stops where it did", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  // The recording: a tool call answered at once, then a call cut off mid-sentence.
  await using server = pacedServer(
    {
      text: "Let me look.",
      toolCall: { id: "c1", name: "read_file", args: { path: "notes.txt" } },
    },
    { text: "Half an ans", stall: true },
  );
  await Deno.writeTextFile(`${dir.path}/notes.txt`, "hi\n");
  const run = spawnReins(
    ["run", "--model", "openai:paced", "--base-url", server.url, "--json", "answer"],
    { home, cwd: dir.path },
  );
  const runOut = new Response(run.stdout).text();
  const runErr = new Response(run.stderr).text();
  await waitFor("the partial text to be recorded", () => {
    return deltasOf(eventsOf(home)).map((e) => e.payload.text).join("") ===
      "Let me look.Half an ans";
  });
  run.kill("SIGINT");
  assert.equal((await run.status).code, 1, await runErr);
  const summary = JSON.parse(await runOut);
  assert.equal(summary.status, "interrupted");

  const shown = await reins(["show", summary.runId], { home, cwd: dir.path });
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(lastCallParts(shown.stdout), "Half an ans", shown.stdout);
  assert.match(
    shown.stdout,
    /assistant \(part\): "[^"]*"\n.*status interrupted: stopped by SIGINT\n/,
  );
  const events = eventsOf(home);
  assert.equal(events.filter((e) => e.type === "model.completed").length, 1);
  assert.equal(events.filter((e) => e.type === "model.requested").length, 2);

  // The replay serves the one answer, runs the tool again, and stops at the second call, as the
  // recording was stopped there: it reproduces the recording, interrupted.
  const replay = await reins(["replay", summary.runId, "--json"], { home, cwd: dir.path });
  assert.equal(replay.code, 0, replay.stderr);
  const verdict = JSON.parse(replay.stdout);
  assert.equal(verdict.status, "interrupted");
  assert.equal(verdict.reason, "the recording was interrupted during this model call");
  assert.equal(verdict.diverged, false, replay.stdout);
  assert.deepEqual(verdict.interruptedCall, { modelCall: 2, text: "Half an ans" });
  const text = await reins(["replay", summary.runId], { home, cwd: dir.path });
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    /reproduced the recording: 1 of 1 model outputs served.*\nstopped at model call 2, where the recording was interrupted after streaming "Half an ans"/,
  );
});
