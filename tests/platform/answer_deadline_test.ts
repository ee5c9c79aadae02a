// PlatformClient against a platform on Python's http.server (tests/fixtures/slow_platform.py)
// whose answers come too slowly or hold no JSON: each request has a deadline for its answer's
// body, and a body of blanks is a protocol error rather than an empty answer.
import assert from "node:assert/strict";
import { PlatformClient, PlatformRequestError, platformTarget } from "../../lib/platform/client.ts";
import { hasPython } from "../fixtures/python_platform.ts";

const PYTHON = hasPython();
if (!PYTHON) {
  console.warn(
    "SKIPPED tests/platform/answer_deadline_test.ts: python3 is not on PATH, so answers from " +
      "Python's http.server cannot be tried",
  );
}
const STUB = new URL("../fixtures/slow_platform.py", import.meta.url).pathname;

async function withSlowPlatform(
  options: ConstructorParameters<typeof PlatformClient>[1],
  fn: (client: PlatformClient) => Promise<void>,
): Promise<void> {
  const child = new Deno.Command("python3", {
    args: ["-u", STUB],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes("\n")) {
      const next = await reader.read();
      if (next.done) throw new Error(`slow_platform.py exited before it was ready: ${seen}`);
      seen += next.value;
    }
    reader.releaseLock();
    const target = platformTarget({
      url: `http://127.0.0.1:${seen.trim()}`,
      apiKey: "k",
      secretKey: "s",
      workspaceId: null,
      jobId: null,
      allowHttp: false,
    });
    using client = new PlatformClient(target, options);
    await fn(client);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stdout.cancel().catch(() => {});
  }
}

// regression: a platform that sent its answer a byte a second held reins report for as long as
// the 120 s request timeout allowed (99 s seen), on each of five tries
Deno.test({
  name:
    "PlatformClient.call() gives up an answer whose body is not whole bodyTimeoutMs after its head",
  ignore: !PYTHON,
  async fn() {
    await withSlowPlatform({ bodyTimeoutMs: 500 }, async (client) => {
      // 57 bytes at 0.2 s each: 11 s to send whole, were it waited for.
      const error = await client.call("POST", "/dribble?delay=0.2", {}).then(
        () => assert.fail("a dribbled answer was waited for"),
        (error: unknown) => error,
      );
      assert.ok(error instanceof PlatformRequestError, String(error));
      assert.equal(
        error.message,
        "POST /dribble?delay=0.2 could not be sent: the answer's body was not whole 0.5 s after its head",
      );
      assert.equal(error.transient, true);
      // The same server answers a prompt body, under the same deadline.
      assert.deepEqual(await client.call("POST", "/prompt", {}), { ok: true });
    });
  },
});

Deno.test({
  name: "PlatformClient.call() takes a slow body that is whole within bodyTimeoutMs",
  ignore: !PYTHON,
  async fn() {
    await withSlowPlatform({ bodyTimeoutMs: 10_000 }, async (client) => {
      assert.deepEqual(await client.call("PATCH", "/dribble?delay=0.005", {}), {
        ok: true,
        pad: "x".repeat(40),
      });
    });
  },
});

// regression: an answer of only whitespace was read as {}, as if the platform had said nothing wrong
Deno.test({
  name: "PlatformClient.call() refuses a 200 whose body is only whitespace",
  ignore: !PYTHON,
  async fn() {
    await withSlowPlatform({}, async (client) => {
      const error = await client.call("POST", "/blank", {}).then(
        () => assert.fail("a blank answer was taken"),
        (error: unknown) => error,
      );
      assert.ok(error instanceof PlatformRequestError, String(error));
      assert.equal(
        error.message,
        "POST /blank answered 200 with a body of only whitespace (6 bytes), not JSON",
      );
      assert.equal(error.transient, false);
      assert.equal(error.status, 200);
    });
  },
});
