// Runs of text events read at once (lib/gateway/text_runs.ts) read a stream as reading each event
// on its own does — the same text, the same facts — whatever the texts hold and however the
// stream is cut, and give way to event-by-event reading where events only look alike.
import assert from "node:assert/strict";
import fc from "fast-check";
import { SseReader } from "../../lib/gateway/sse.ts";
import { textRun } from "../../lib/gateway/text_runs.ts";
import { ResponseReader, type Wire } from "../../lib/gateway/wires.ts";

/** Reads `text` as a stream of `wire`, cut at `cuts`, with runs (`runs`) or event by event. */
function read(wire: Wire, text: string, cuts: number[], runs: boolean) {
  const pieces: string[] = [];
  const reader = new ResponseReader(wire, (piece) => pieces.push(piece));
  const sse = new SseReader(
    (name, data) => reader.eventText(name, data),
    runs ? (whole, from, limit) => reader.textRun(whole, from, limit) : null,
  );
  const bytes = new TextEncoder().encode(text);
  let from = 0;
  for (
    const at of [...new Set(cuts)].filter((cut) => cut > 0 && cut < bytes.length).sort((a, b) =>
      a - b
    )
  ) {
    sse.push(bytes.subarray(from, at));
    from = at;
  }
  sse.push(bytes.subarray(from));
  sse.end();
  return { facts: reader.facts, text: pieces.join("") };
}

const event = (name: string | null, data: unknown) =>
  `${name === null ? "" : `event: ${name}\n`}data: ${
    typeof data === "string" ? data : JSON.stringify(data)
  }\n\n`;

const anthropicDelta = (text: string, index = 0) =>
  event("content_block_delta", {
    type: "content_block_delta",
    index,
    delta: { type: "text_delta", text },
  });

function anthropicStream(texts: string[], extra: string[] = []): string {
  return [
    event("message_start", {
      type: "message_start",
      message: { id: "msg_1", model: "claude-x", usage: { input_tokens: 3, output_tokens: 1 } },
    }),
    ...texts.map((text, i) => anthropicDelta(text, i % 7 === 6 ? 1 : 0)),
    ...extra,
    event("message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 9 },
    }),
    event("message_stop", { type: "message_stop" }),
  ].join("");
}

// Text with what JSON escapes and what looks like the events around it.
const texty = fc.oneof(
  fc.string(),
  fc.constantFrom('"}}\n\n', '\\"', "\\", "\n", "event: content_block_delta\ndata: ", "✓é€𝄞", ""),
);

Deno.test("textRun() reads an Anthropic stream as event-by-event reading does, however it is cut", () => {
  fc.assert(
    fc.property(
      fc.array(texty, { minLength: 1, maxLength: 30 }),
      fc.array(fc.nat(4000), { maxLength: 10 }),
      (texts, cuts) => {
        const stream = anthropicStream(texts);
        const expected = read("anthropic.messages", stream, [], false);
        assert.equal(expected.text, texts.join(""));
        assert.deepEqual(read("anthropic.messages", stream, cuts, true), expected);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("textRun() reads Chat Completions and Responses streams as event by event", () => {
  fc.assert(
    fc.property(
      fc.array(texty, { minLength: 1, maxLength: 20 }),
      fc.array(fc.nat(3000)),
      (texts, cuts) => {
        const chat = [
          ...texts.map((text) =>
            event(null, {
              id: "c1",
              object: "chat.completion.chunk",
              model: "gpt-x",
              choices: [{ index: 0, delta: { content: text }, finish_reason: null }],
            })
          ),
          event(null, {
            id: "c1",
            model: "gpt-x",
            choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
            usage: { prompt_tokens: 5, completion_tokens: 2 },
          }),
          "data: [DONE]\n\n",
        ].join("");
        const expected = read("openai.chat", chat, [], false);
        assert.equal(expected.text, texts.join(""));
        assert.deepEqual(read("openai.chat", chat, cuts, true), expected);
        const responses = texts.map((text, i) =>
          event("response.output_text.delta", {
            type: "response.output_text.delta",
            delta: text,
            sequence_number: i,
          })
        ).join("");
        assert.deepEqual(
          read("openai.responses", responses, cuts, true),
          read("openai.responses", responses, [], false),
        );
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("textRun() gives way to event-by-event reading where an event only looks alike", () => {
  const prefix = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,' +
    '"delta":{"type":"text_delta","text":"';
  // The second event has a field after its text, the third a quote left unescaped.
  const stream = `${prefix}one"}}\n\n${prefix}two","extra":"x"}}\n\n${prefix}th"ree"}}\n\n`;
  const run = textRun(stream, 0, stream.length, {
    head: "event: content_block_delta\ndata: ",
    key: '"type":"text_delta","text":"',
  });
  assert.deepEqual(run, null);
  const tool = anthropicStream(["a", "b"], [
    event("content_block_delta", {
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: '{"text":"no"}' },
    }),
  ]);
  assert.deepEqual(
    read("anthropic.messages", stream + tool, [], true),
    read("anthropic.messages", stream + tool, [], false),
  );
});
