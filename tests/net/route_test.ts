// Which way a request goes: loopback never through a proxy, streamed bodies straight to the host
// unless a proxy is in the way, everything else through fetch.
import assert from "node:assert/strict";
import {
  isLoopbackHost,
  NO_PROXY_SETTINGS,
  proxyApplies,
  type ProxySettings,
  routeOf,
} from "../../lib/net/route.ts";

const proxied = (extra: Partial<ProxySettings> = {}): ProxySettings => ({
  ...NO_PROXY_SETTINGS,
  https: "http://proxy:3128",
  noProxy: "internal.example,.corp",
  ...extra,
});

Deno.test("isLoopbackHost() knows 127/8, ::1 and localhost, and nothing that merely looks like them", () => {
  for (
    const host of ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "api.localhost", "[::1]"]
  ) {
    assert.ok(isLoopbackHost(host), host);
  }
  for (const host of ["128.0.0.1", "localhost.example.com", "10.0.0.1", "127.example.com", "::2"]) {
    assert.ok(!isLoopbackHost(host), host);
  }
});

Deno.test("proxyApplies() reads the scheme's proxy and NO_PROXY, and never proxies loopback", () => {
  const proxy = proxied();
  assert.ok(proxyApplies(new URL("https://platform.example.com"), proxy));
  assert.ok(!proxyApplies(new URL("https://localhost:8000"), proxy));
  assert.ok(!proxyApplies(new URL("https://127.0.0.1:8000"), proxy));
  assert.ok(!proxyApplies(new URL("https://api.internal.example"), proxy));
  assert.ok(!proxyApplies(new URL("https://x.corp"), proxy));
  assert.ok(!proxyApplies(new URL("http://platform.example.com"), proxy));
  assert.ok(proxyApplies(new URL("http://platform.example.com"), proxied({ http: "http://p:1" })));
  assert.ok(proxyApplies(new URL("http://platform.example.com"), proxied({ all: "socks5://p:1" })));
  assert.ok(!proxyApplies(new URL("https://platform.example.com"), proxied({ noProxy: "*" })));
});

Deno.test("routeOf() keeps loopback off fetch whenever a proxy variable could catch it", () => {
  const local = new URL("http://127.0.0.1:8000/simulate/");
  // regression: fetch sent loopback calls to HTTP_PROXY, and the direct "tcp" transport that
  // replaced it wrote absolute-form targets; both are our own socket now
  assert.deepEqual(routeOf(local, proxied({ http: "http://proxy:3128" })), "direct");
  assert.deepEqual(routeOf(local, proxied({ all: "http://proxy:3128" })), "direct");
  // NO_PROXY does not matter: Deno's fetch ignores NO_PROXY=* for instance
  assert.deepEqual(routeOf(local, proxied({ http: "http://p:1", noProxy: "*" })), "direct");
  assert.deepEqual(routeOf(local, NO_PROXY_SETTINGS), "fetch");
  // an https proxy does not catch an http request
  assert.deepEqual(routeOf(local, proxied()), "fetch");
});

Deno.test("routeOf() sends a streamed body straight to the host unless a proxy is in the way", () => {
  const remote = new URL("https://platform.example.com/up/");
  assert.deepEqual(routeOf(remote, NO_PROXY_SETTINGS, { streamedBody: true }), "direct");
  assert.deepEqual(routeOf(remote, proxied(), { streamedBody: true }), "fetch");
  assert.deepEqual(routeOf(remote, proxied(), { streamedBody: false }), "fetch");
  assert.deepEqual(routeOf(remote, NO_PROXY_SETTINGS), "fetch");
  assert.deepEqual(
    routeOf(new URL("https://localhost/up/"), NO_PROXY_SETTINGS, { streamedBody: true }),
    "direct",
  );
});
