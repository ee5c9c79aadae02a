// The bridges and the proxy outside the sandbox, spoken to over their Unix sockets as the
// sandbox's socat does: real sockets, a real HTTP server as the allowed host and the gateway.
import assert from "node:assert/strict";
import {
  type ConnectionReport,
  isLoopbackAddress,
  openConfinedNetwork,
} from "../../lib/confine/network.ts";
import { parseAllowedHost } from "../../lib/confine/allow_host.ts";

const HAVE_SOCAT = await new Deno.Command("socat", { args: ["-V"], stdout: "null" }).output()
  .then((out) => out.success, () => false);
if (!HAVE_SOCAT) console.error("!! tests/confine/network_test.ts SKIPPED: socat is not installed");

async function ask(path: string, request: string): Promise<string> {
  const conn = await Deno.connect({ transport: "unix", path });
  await conn.write(new TextEncoder().encode(request));
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(4096);
  while (true) {
    const read = await conn.read(buffer);
    if (read === null) break;
    chunks.push(buffer.slice(0, read));
    if (new TextDecoder().decode(chunks.at(-1)).includes("reached")) break;
  }
  conn.close();
  return chunks.map((chunk) => new TextDecoder().decode(chunk)).join("");
}

Deno.test({
  name:
    "openConfinedNetwork() bridges to the gateway, proxies allowed hosts, reports each connection",
  ignore: !HAVE_SOCAT,
  async fn() {
    const dir = await Deno.makeTempDir();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => new Response(`reached ${new URL(request.url).pathname}\n`),
    );
    const reports: ConnectionReport[] = [];
    const network = await openConfinedNetwork({
      socketDir: dir,
      gatewayPort: server.addr.port,
      allowHosts: [parseAllowedHost(`127.0.0.1:${server.addr.port}`)],
      onConnection: (report) => reports.push(report),
    });
    try {
      const viaGateway = await ask(
        `${dir}/gateway.sock`,
        "GET /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      );
      assert.match(viaGateway, /^HTTP\/1\.1 200[\s\S]*reached \/v1\/messages/);
      const viaProxy = await ask(
        `${dir}/proxy.sock`,
        `GET http://127.0.0.1:${server.addr.port}/allowed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assert.match(viaProxy, /reached \/allowed/);
      const refused = await ask(
        `${dir}/proxy.sock`,
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
      );
      assert.match(refused, /^HTTP\/1\.1 403 /);
    } finally {
      await network.close();
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
    // The gateway's bridge is not the proxy: only the proxy's connections are reported.
    assert.equal(reports.length, 2);
    const allowed = reports.find((report) => report.allowed)!;
    const refusedReport = reports.find((report) => !report.allowed)!;
    assert.deepEqual(
      { ...refusedReport },
      {
        host: "example.com",
        port: 443,
        allowed: false,
        bytesSent: 0,
        bytesReceived: 0,
        reason: "not an allowed host (--allow-host)",
      },
    );
    assert.equal(allowed.allowed, true);
    assert.ok(allowed.bytesSent > 0 && allowed.bytesReceived > 0);
  },
});

// regression: a request the proxy does not pass (an https:// URL, a path and a Host header) was
// answered 400 and reported nowhere, though it named the host it was after
Deno.test({
  name:
    "the proxy reports a request it does not pass that names a host, refused; one naming none is not",
  ignore: !HAVE_SOCAT,
  async fn() {
    const dir = await Deno.makeTempDir();
    const reports: ConnectionReport[] = [];
    const network = await openConfinedNetwork({
      socketDir: dir,
      gatewayPort: null,
      allowHosts: [],
      onConnection: (report) => reports.push(report),
    });
    try {
      for (
        const head of [
          "GET https://example.com/ HTTP/1.1\r\n\r\n",
          "GET /path HTTP/1.1\r\nHost: example.org:8080\r\n\r\n",
          "GET /path HTTP/1.1\r\n\r\n",
        ]
      ) {
        assert.match(await ask(`${dir}/proxy.sock`, head), /^HTTP\/1\.1 400 /);
      }
    } finally {
      await network.close();
      await Deno.remove(dir, { recursive: true });
    }
    const reason = "not a request the proxy passes (CONNECT HOST:PORT, or an absolute http:// URL)";
    assert.deepEqual(reports.map((report) => ({ ...report })), [
      { host: "example.com", port: 443, allowed: false, bytesSent: 0, bytesReceived: 0, reason },
      { host: "example.org", port: 8080, allowed: false, bytesSent: 0, bytesReceived: 0, reason },
    ]);
  },
});

/** A name /etc/hosts points at 127.0.0.1 that is not localhost: DNS pointed at this machine. */
const LOOPBACK_NAME = (() => {
  try {
    for (const line of Deno.readTextFileSync("/etc/hosts").split("\n")) {
      const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
      if (address !== "127.0.0.1") continue;
      const name = names.find((n) => n && !/^localhost(\.|$)/i.test(n) && !/\.localhost$/i.test(n));
      if (name) return name;
    }
  } catch { /* none */ }
  return null;
})();
if (HAVE_SOCAT && LOOPBACK_NAME === null) {
  console.error(
    "!! tests/confine/network_test.ts: the loopback-name test SKIPPED: /etc/hosts names nothing but localhost at 127.0.0.1",
  );
}

// regression: an allowed name that resolves to 127.0.0.1 (DNS pointed at this machine) let a
// confined agent reach whatever listens on the host's loopback through the proxy
Deno.test({
  name:
    "the proxy refuses an allowed name that resolves to this machine's loopback, not the address",
  ignore: !HAVE_SOCAT || LOOPBACK_NAME === null,
  async fn() {
    const dir = await Deno.makeTempDir();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => new Response(`reached ${new URL(request.url).pathname}\n`),
    );
    const port = server.addr.port;
    const reports: ConnectionReport[] = [];
    const network = await openConfinedNetwork({
      socketDir: dir,
      gatewayPort: null,
      allowHosts: [
        parseAllowedHost(`${LOOPBACK_NAME}:${port}`),
        parseAllowedHost(`127.0.0.1:${port}`),
      ],
      onConnection: (report) => reports.push(report),
    });
    try {
      const byName = await ask(
        `${dir}/proxy.sock`,
        `GET http://${LOOPBACK_NAME}:${port}/secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assert.match(byName, /^HTTP\/1\.1 403 /);
      assert.doesNotMatch(byName, /reached/);
      const tunnel = await ask(
        `${dir}/proxy.sock`,
        `CONNECT ${LOOPBACK_NAME}:${port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      assert.match(tunnel, /^HTTP\/1\.1 403 /);
      // The address itself, allowed as such, is reached: the user asked for this machine.
      const byAddress = await ask(
        `${dir}/proxy.sock`,
        `GET http://127.0.0.1:${port}/asked HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assert.match(byAddress, /reached \/asked/);
    } finally {
      await network.close();
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
    const byName = reports.filter((report) => report.host === LOOPBACK_NAME);
    assert.equal(byName.length, 2);
    for (const report of byName) {
      assert.equal(report.allowed, false);
      assert.match(report.reason!, /resolves to 127\.0\.0\.1, this machine's own loopback/);
    }
  },
});

Deno.test("isLoopbackAddress() knows loopback and the unspecified addresses in their forms", () => {
  for (
    const address of [
      "127.0.0.1",
      "127.1.2.3",
      "0.0.0.0",
      "::1",
      "[::1]",
      "::",
      "::ffff:127.0.0.1",
      "0:0:0:0:0:0:0:1",
    ]
  ) {
    assert.ok(isLoopbackAddress(address), address);
  }
  for (const address of ["10.0.0.1", "128.0.0.1", "::2", "fe80::1", "93.184.216.34"]) {
    assert.ok(!isLoopbackAddress(address), address);
  }
});
