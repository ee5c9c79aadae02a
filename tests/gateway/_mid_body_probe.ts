// Run by gateway_test.ts in a process of its own, whose stderr it reads: a harness sends half of
// a request's body and goes away, then makes a whole call, then one whose upstream breaks off
// mid-answer. Prints what the upstream saw and how the turn's calls ended, as one JSON line.
//   deno run --allow-all _mid_body_probe.ts
import { BudgetLedger } from "../../lib/core/budget.ts";
import { newId } from "../../lib/core/ids.ts";
import { NO_PROXY_SETTINGS } from "../../lib/net/route.ts";
import { bindTurn } from "../../lib/gateway/mod.ts";
import type { EventInput, PayloadOf } from "../../lib/store/contracts.ts";
import { DataRoot } from "../../lib/store/data_root.ts";

let upstreamSaw = 0;
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
  await req.arrayBuffer();
  upstreamSaw++;
  return new Response("{}", { headers: { "content-type": "application/json" } });
});
// An upstream that promises 1000 bytes of stream, sends one event and closes.
const breaking = Deno.listen({ hostname: "127.0.0.1", port: 0 });
(async () => {
  for await (const conn of breaking) {
    await conn.read(new Uint8Array(65536));
    await conn.write(new TextEncoder().encode(
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n" +
        'data: {"type":"message_start"}\n\n',
    ));
    conn.close();
  }
})().catch(() => {});
const dir = await Deno.makeTempDir({ prefix: "reins-mid-body-" });
const root = new DataRoot(dir);
const runId = newId();
root.ensureDir(root.layout.run(runId));
const events: EventInput[] = [];
const binding = await bindTurn({
  root,
  runId,
  routes: {
    up: { upstream: `http://127.0.0.1:${server.addr.port}/v1` },
    breaking: { upstream: `http://127.0.0.1:${(breaking.addr as Deno.NetAddr).port}/v1` },
  },
  emit: (event) => events.push(event),
  ledger: new BudgetLedger([]),
  priceOf: () => null,
  proxy: NO_PROXY_SETTINGS,
});
const url = new URL(`${binding.routeUrl("up")}/messages`);
const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
await conn.write(new TextEncoder().encode(
  `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: 1000\r\n\r\n{"model"`,
));
// The gateway has taken the call (given it an id) and is reading its body: the harness goes.
while (binding.calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));
conn.close();
const after = await fetch(url, {
  method: "POST",
  body: JSON.stringify({ model: "claude-x", messages: [] }),
});
await after.text();
const broken = await fetch(`${binding.routeUrl("breaking")}/messages`, {
  method: "POST",
  body: JSON.stringify({ model: "claude-x", stream: true, messages: [] }),
});
await broken.text().catch(() => {});
await binding.close();
breaking.close();
await server.shutdown();
root.close();
await Deno.remove(dir, { recursive: true });
const completed = events.filter((e) => e.type === "model.call.completed")
  .map((e) => (e.payload as PayloadOf<"model.call.completed">).outcome);
console.log(JSON.stringify({ upstreamSaw, completed }));
