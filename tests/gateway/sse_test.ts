// The SSE reader on streams no model server sends but an upstream may: an event that never ends
// (a body labelled text/event-stream that is not SSE, a line of many MiB), in LF and CRLF, cut
// anywhere. What it holds stays bounded and the events after such an event are read.
import assert from "node:assert/strict";
import fc from "fast-check";
import { SseReader } from "../../lib/gateway/sse.ts";

/** The events `pieces` are read as, by a reader passing over events past `limit` characters. */
function eventsOf(pieces: string[], limit?: number): [string | null, string][] {
  const events: [string | null, string][] = [];
  const reader = new SseReader((name, data) => events.push([name, data]), null, limit);
  for (const piece of pieces) reader.pushText(piece);
  reader.end();
  return events;
}

function cut(text: string, at: number[]): string[] {
  const points = [...new Set(at.map((n) => n % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const point of points) {
    out.push(text.slice(from, point));
    from = point;
  }
  out.push(text.slice(from));
  return out;
}

// regression: an event that did not end was joined with each new piece and searched again from
// its start, and held whole however long it grew (32 MB of `data:` lines with no blank line:
// 8.6 s through the gateway, 280 MiB RSS; now 0.18 s, 116 MiB)
for (const eol of ["\n", "\r\n"]) {
  Deno.test(`SseReader passes over an event past its limit and reads the ones after it (${JSON.stringify(eol)})`, () => {
    const line = `data: ${"x".repeat(94)}${eol}`;
    const pieces = [`event: a${eol}data: 1${eol}${eol}`];
    for (let i = 0; i < 50; i++) pieces.push(line);
    pieces.push(`${eol}event: b${eol}data: {"after":true}${eol}${eol}`);
    // 5,000 characters of one event against a limit of 1,000: it is not read.
    assert.deepEqual(eventsOf(pieces, 1_000), [["a", "1"], ["b", '{"after":true}']]);
    // Under the limit it is read as ever, one data line each.
    const whole = eventsOf(pieces, 10_000);
    assert.equal(whole.length, 3);
    assert.equal(whole[1][1].split("\n").length, 50);
  });

  Deno.test(`SseReader reads a stream the same however it is cut, pieces with no event's end kept aside (${JSON.stringify(eol)})`, () => {
    const text = [
      `event: a${eol}data: one${eol}${eol}`,
      `data: two${eol}data: lines${eol}${eol}`,
      `: a comment${eol}event: c${eol}data: {"x":"${"y".repeat(40)}"}${eol}${eol}`,
      `data: last, not ended${eol}`,
    ].join("");
    const whole = eventsOf([text]);
    assert.equal(whole.length, 4);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 20 }), (at) => {
        assert.deepEqual(eventsOf(cut(text, at)), whole);
      }),
      { numRuns: 300 },
    );
  });
}
