// A proxy exported for the outside world must never see reins's loopback traffic: a model
// endpoint on 127.0.0.1 is reached directly whatever HTTP_PROXY says, as the seed's client does
// for its local platform. (The platform's side of this is tests/platform/python_stub_test.ts.)
import assert from "node:assert/strict";
import { startFakeChat } from "../fixtures/fake_chat.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { reins, tempDir } from "../support/reins.ts";

/** A listener standing in for a proxy: it counts connections and answers each with a 502. */
function countingProxy() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  (async () => {
    for await (const conn of listener) {
      connections++;
      const reply = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      await conn.write(new TextEncoder().encode(reply)).catch(() => {});
      conn.close();
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get connections() {
      return connections;
    },
    close: () => listener.close(),
  };
}

// regression: fetch sent loopback requests to HTTP_PROXY, so a local model server behind an
// exported proxy answered with the proxy's 502
Deno.test("reins run --model openai:… reaches a loopback endpoint directly while HTTP_PROXY is set", async () => {
  await using dir = await tempDir();
  const proxy = countingProxy();
  await using server = startFakeChat(inOrder(text("straight through")));
  try {
    const result = await reins(
      ["run", "--model", "openai:fake", "--base-url", `${server.url}/v1`, "--json", "hi"],
      {
        home: dir.path,
        env: { HTTP_PROXY: proxy.url, http_proxy: proxy.url, ALL_PROXY: proxy.url },
      },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).result, "straight through");
    assert.equal(server.modelCalls().length, 1);
    assert.equal(proxy.connections, 0);
  } finally {
    proxy.close();
  }
});
