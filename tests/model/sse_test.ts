import assert from "node:assert/strict";
import fc from "fast-check";
import { readServerSentEvents, type ServerSentEvent } from "../../lib/model/sse.ts";

function streamOf(parts: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) {
        controller.enqueue(typeof part === "string" ? encoder.encode(part) : part);
      }
      controller.close();
    },
  });
}

async function readAll(parts: (string | Uint8Array)[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(streamOf(parts))) events.push(event);
  return events;
}

/** Cuts the bytes of `text` at the given offsets (through characters, too). */
function cut(text: string, offsets: number[]): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const point of points) {
    parts.push(bytes.slice(from, point));
    from = point;
  }
  parts.push(bytes.slice(from));
  return parts;
}

Deno.test("readServerSentEvents() joins data lines and skips comments and other fields", async () => {
  const events = await readAll([
    ": a comment\n",
    "event: delta\ndata: one\ndata: two\nid: 7\n\n",
    "data:no space\n\n",
    "data: [DONE]\n\n",
  ]);
  assert.deepEqual(events, [
    { event: "delta", data: "one\ntwo" },
    { event: null, data: "no space" },
    { event: null, data: "[DONE]" },
  ]);
});

Deno.test("readServerSentEvents() delivers the last event of a stream cut before its blank line", async () => {
  assert.deepEqual(await readAll(["data: a\n\ndata: b"]), [
    { event: null, data: "a" },
    { event: null, data: "b" },
  ]);
});

Deno.test("readServerSentEvents() reads the same events however the stream is split", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.array(fc.string({ unit: fc.constantFrom("a", "é", "{", "}", ":", " ", "€") }), {
          minLength: 1,
          maxLength: 3,
        }),
        { minLength: 1, maxLength: 5 },
      ),
      fc.constantFrom("\n", "\r\n", "\r"),
      fc.array(fc.nat(), { maxLength: 8 }),
      async (events, newline, offsets) => {
        // each event is one or more `data:` lines, then a blank line
        const text = events.map((lines) =>
          lines.map((line) => `data: ${line}${newline}`).join("") + newline
        ).join("");
        const expected = events.map((lines) => ({ event: null, data: lines.join("\n") }));
        assert.deepEqual(await readAll(cut(text, offsets)), expected);
      },
    ),
    { numRuns: 200 },
  );
});
