// The model server of the gateway benchmark, in a process of its own: an Anthropic-style SSE
// stream, its first event at once and the rest as fast as it can be sent (`POST /v1/messages`,
// `?mb=N` for N MB of text deltas, 64 KiB a write). Prints its port.
const encoder = new TextEncoder();
const start = encoder.encode(
  `event: message_start\ndata: ${
    JSON.stringify({
      type: "message_start",
      message: { model: "claude-bench", usage: { input_tokens: 10, output_tokens: 1 } },
    })
  }\n\n`,
);
const delta = `event: content_block_delta\ndata: ${
  JSON.stringify({
    type: "content_block_delta",
    index: 0,
    delta: { type: "text_delta", text: "The quick brown fox jumps over the lazy dog. " },
  })
}\n\n`;
const piece = encoder.encode(delta.repeat(Math.floor(65536 / delta.length)));
const stop = encoder.encode(
  `event: message_delta\ndata: ${
    JSON.stringify({
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 5 },
    })
  }\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`,
);

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
  await request.body?.cancel();
  const mb = Number(new URL(request.url).searchParams.get("mb") ?? "0");
  let left = Math.round(mb * 1024 * 1024);
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(start);
        return;
      }
      if (left <= 0) {
        controller.enqueue(stop);
        controller.close();
        return;
      }
      controller.enqueue(piece);
      left -= piece.length;
    },
  }, { highWaterMark: 0 });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
});
console.log(server.addr.port);
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
