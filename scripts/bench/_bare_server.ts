// The baseline of the serve benchmark: Deno.serve answering each POST with a fixed JSON text per
// JSON-RPC method (as reins serve answered it), after reading the body. Prints its port.
const answers = JSON.parse(Deno.env.get("BENCH_ANSWERS") ?? "{}") as Record<string, string>;
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
  const body = await request.text();
  const method = /"method":"([^"]+)"/.exec(body)?.[1] ?? "";
  return new Response(answers[method] ?? "{}", {
    headers: { "content-type": "application/json" },
  });
});
console.log(server.addr.port);
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
