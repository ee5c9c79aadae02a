// A proxy exported for the outside world must never see reins's loopback traffic: a model
// endpoint on 127.0.0.1 is reached directly whatever HTTP_PROXY says, as the seed's client does
// for its local platform. (The platform's side of this is tests/platform/python_stub_test.ts.)
import assert from "node:assert/strict";
import { startFakeChat } from "../fixtures/fake_chat.ts";
import { inOrder, text } from "../fixtures/fake_model_server.ts";
import { reins, tempDir } from "../support/reins.ts";

/**
 * A listener standing in for a proxy: it keeps the first line of each request and answers a 502.
 * (Other tests running in parallel may stumble on its port: what counts is what it was asked.)
 */
function recordingProxy() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const asked: string[] = [];
  (async () => {
    for await (const conn of listener) {
      const buffer = new Uint8Array(4096);
      const got = await conn.read(buffer).catch(() => null);
      asked.push(new TextDecoder().decode(buffer.subarray(0, got ?? 0)).split("\r\n")[0]);
      const reply = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      await conn.write(new TextEncoder().encode(reply)).catch(() => {});
      conn.close();
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    asked,
    close: () => listener.close(),
  };
}

// regression: fetch sent loopback requests to HTTP_PROXY, so a local model server behind an
// exported proxy answered with the proxy's 502
Deno.test("reins run --model openai:… reaches a loopback endpoint directly while HTTP_PROXY is set", async () => {
  await using dir = await tempDir();
  const proxy = recordingProxy();
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
    const host = new URL(server.url).host;
    assert.deepEqual(proxy.asked.filter((line) => line.includes(host)), []);
  } finally {
    proxy.close();
  }
});
