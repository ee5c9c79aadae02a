// A server-sent events reader (the subset streaming model APIs use): `data:` lines joined by
// newlines, `event:` names, comments and other fields ignored, an event ending at a blank line.
// See https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

export interface ServerSentEvent {
  event: string | null;
  data: string;
}

export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent> {
  const lines = body.pipeThrough(new TextDecoderStream()).pipeThrough(splitLines());
  let data: string[] = [];
  let event: string | null = null;
  for await (const line of lines) {
    if (line === "") {
      if (data.length > 0) yield { event, data: data.join("\n") };
      data = [];
      event = null;
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
  }
  // A stream cut without its final blank line still delivers what it had.
  if (data.length > 0) yield { event, data: data.join("\n") };
}

/** Splits text on LF, CRLF or CR. */
function splitLines(): TransformStream<string, string> {
  let buffer = "";
  // A chunk that ends in CR may be followed by the LF of the same CRLF in the next one.
  let pendingCr = false;
  return new TransformStream({
    transform(chunk, controller) {
      if (pendingCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
      buffer += chunk;
      pendingCr = buffer.endsWith("\r");
      const parts = buffer.split(/\r\n|\r|\n/);
      buffer = parts.pop()!;
      for (const part of parts) controller.enqueue(part);
    },
    flush(controller) {
      if (buffer.length > 0) controller.enqueue(buffer);
    },
  });
}
