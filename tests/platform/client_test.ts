// PlatformClient against the strict fake platform: headers, paths, answers, errors, uploads.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { UsageError } from "../../lib/core/errors.ts";
import {
  PlatformClient,
  PlatformRequestError,
  type PlatformSettings,
  platformTarget,
} from "../../lib/platform/client.ts";
import { RecordingChangedError } from "../../lib/platform/multipart.ts";
import { type FakePlatformOptions, startFakePlatform } from "../fixtures/fake_platform.ts";
import { tempDir } from "../support/reins.ts";

function settings(url: string, extra: Partial<PlatformSettings> = {}): PlatformSettings {
  return {
    url,
    apiKey: "test-key",
    secretKey: "test-secret",
    workspaceId: null,
    jobId: null,
    allowHttp: false,
    ...extra,
  };
}

async function withPlatform(
  options: FakePlatformOptions,
  fn: (
    platform: ReturnType<typeof startFakePlatform>,
    client: PlatformClient,
  ) => Promise<void>,
  clientSettings: Partial<PlatformSettings> = {},
  clientOptions: ConstructorParameters<typeof PlatformClient>[1] = {},
): Promise<void> {
  const platform = startFakePlatform(options);
  const client = new PlatformClient(
    platformTarget(settings(platform.url, clientSettings)),
    clientOptions,
  );
  try {
    await fn(platform, client);
  } finally {
    client.close();
    await platform.close();
  }
}

const PROVISION = {
  name: "Claude Code · 05 Jan 2026 14:03 UTC",
  agent_name: "Claude Code",
  personas: [],
  modality: "text",
};

Deno.test("platformTarget() refuses plain http to a remote host unless it is allowed", () => {
  assert.throws(
    () => platformTarget(settings("http://platform.example.com")),
    (error: Error) => error instanceof UsageError && /clear text/.test(error.message),
  );
  assert.deepEqual(
    platformTarget(settings("http://platform.example.com/", { allowHttp: true })).url,
    "http://platform.example.com",
  );
  assert.deepEqual(platformTarget(settings("http://localhost:8000")).url, "http://localhost:8000");
  assert.deepEqual(
    platformTarget(settings("https://platform.example.com")).url,
    "https://platform.example.com",
  );
});

Deno.test("platformTarget() names every missing setting", () => {
  assert.throws(
    () => platformTarget({ ...settings("https://p.example"), url: null, secretKey: null }),
    (error: Error) =>
      error instanceof UsageError &&
      error.message ===
        "Cannot report to the platform: HARNESS_PLATFORM_URL, HARNESS_PLATFORM_SECRET_KEY not set",
  );
  assert.throws(() => platformTarget(settings("https://p.example", { apiKey: "k\n" })), UsageError);
});

Deno.test("PlatformClient.call() sends the auth headers and unwraps the platform's result", async () => {
  for (const wrap of [true, false]) {
    await withPlatform({ wrap, workspaceId: "ws-1" }, async (platform, client) => {
      const answer = await client.provision(PROVISION, "key-1");
      assert.deepEqual(typeof answer.run_test_id, "string");
      assert.deepEqual(answer.scenario_ids, []);
      const [seen] = platform.requests;
      assert.deepEqual(seen.path, "/run-tests/provision/");
      assert.deepEqual(seen.headers.get("x-api-key"), "test-key");
      assert.deepEqual(seen.headers.get("x-secret-key"), "test-secret");
      assert.deepEqual(seen.headers.get("x-workspace-id"), "ws-1");
      assert.deepEqual(seen.headers.get("idempotency-key"), "key-1");
      assert.deepEqual(seen.headers.get("content-type"), "application/json");
      assert.deepEqual(seen.body, PROVISION);
    }, { workspaceId: "ws-1" });
  }
});

Deno.test("PlatformClient errors carry the method, path, status and 400 characters of the body", async () => {
  const body = `${"x".repeat(390)}0123456789TAIL`;
  await withPlatform({
    intercept: (seen) => seen.route === "batch" ? new Response(body, { status: 418 }) : undefined,
  }, async (_platform, client) => {
    const error = await client.batch("te-1", 2).then(() => null, (e) => e);
    assert.ok(error instanceof PlatformRequestError);
    assert.deepEqual(error.method, "POST");
    assert.deepEqual(error.path, "/test-executions/te-1/batch/");
    assert.deepEqual(error.status, 418);
    assert.deepEqual(error.detail, body.slice(0, 400));
    assert.deepEqual(
      error.message,
      `POST /test-executions/te-1/batch/ failed (418): ${body.slice(0, 400)}`,
    );
    assert.deepEqual(error.transient, false);
    assert.deepEqual(error.exitCode, 5);
  });
});

Deno.test("PlatformClient marks 408, 429 and 5xx transient and reads Retry-After", async () => {
  await withPlatform({}, async (platform, client) => {
    for (
      const [status, transient] of [[401, false], [404, false], [408, true], [429, true], [
        503,
        true,
      ]] as const
    ) {
      platform.failNext("provision", 1, status, { "Retry-After": "7" });
      const error = await client.provision(PROVISION).then(() => null, (e) => e);
      assert.ok(error instanceof PlatformRequestError, String(status));
      assert.deepEqual([error.status, error.transient, error.retryAfterMs], [
        status,
        transient,
        7000,
      ]);
    }
  });
});

Deno.test("PlatformClient's 401 says which settings to check", async () => {
  await withPlatform({}, async (_platform, client) => {
    const error = await client.provision(PROVISION).then(() => null, (e) => e);
    assert.ok(error instanceof PlatformRequestError);
    assert.deepEqual(error.status, 401);
    assert.match(
      error.message,
      /^POST \/run-tests\/provision\/ failed \(401\): \{"detail":"Invalid API key or secret\."\}$/,
    );
    assert.match(error.hint!, /HARNESS_PLATFORM_API_KEY/);
  }, { apiKey: "wrong" });
});

Deno.test("the fake platform answers a path without its trailing slash with Django's 500", async () => {
  await withPlatform({}, async (_platform, client) => {
    const error = await client.call("POST", "/run-tests/provision", PROVISION).then(
      () => null,
      (e) => e,
    );
    assert.ok(error instanceof PlatformRequestError);
    assert.deepEqual(error.status, 500);
    assert.match(error.detail, /doesn't end in a slash/);
  });
});

Deno.test("PlatformClient.call() reports an unreachable platform as transient", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  const client = new PlatformClient(platformTarget(settings(`http://127.0.0.1:${port}`)));
  try {
    const error = await client.provision(PROVISION).then(() => null, (e) => e);
    assert.ok(error instanceof PlatformRequestError);
    assert.deepEqual(error.transient, true);
    assert.deepEqual(error.status, undefined);
    assert.match(error.message, /^POST \/run-tests\/provision\/ could not be sent: /);
  } finally {
    client.close();
  }
});

async function recordingFile(dir: string, bytes: Uint8Array, name = "call.wav") {
  const path = `${dir}/${crypto.randomUUID()}.wav`;
  await Deno.writeFile(path, bytes);
  return {
    path,
    name,
    bytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
}

async function allocateCall(client: PlatformClient): Promise<string> {
  const { run_test_id } = await client.provision(PROVISION);
  const { test_execution_id } = await client.start(run_test_id, {});
  return (await client.batch(test_execution_id, 1)).call_execution_ids[0];
}

Deno.test("PlatformClient.recording() streams the file with a Content-Length and a sha256 part", async () => {
  await using dir = await tempDir();
  const file = await recordingFile(
    dir.path,
    crypto.getRandomValues(new Uint8Array(60_000)),
    'a "b".wav',
  );
  await withPlatform({}, async (platform, client) => {
    const callId = await allocateCall(client);
    const answer = await client.recording(callId, file, "rec-1");
    assert.deepEqual(answer, { id: callId, bytes: 60_000, sha256: file.sha256 });
    assert.deepEqual(platform.calls.get(callId)!.recordings, [{
      filename: "a %22b%22.wav",
      contentType: "audio/wav",
      bytes: 60_000,
      sha256: file.sha256,
      fields: ["file", "sha256"],
    }]);
    const seen = platform.requests.at(-1)!;
    assert.ok(seen.headers.get("content-length") !== null);
    assert.deepEqual(seen.headers.get("transfer-encoding"), null);
  });
});

Deno.test("PlatformClient.recording() through fetch is chunked, which a strict server refuses (411)", async () => {
  await using dir = await tempDir();
  const file = await recordingFile(dir.path, new Uint8Array(5000).fill(9));
  await withPlatform(
    {},
    async (_platform, client) => {
      const callId = await allocateCall(client);
      const error = await client.recording(callId, file).then(() => null, (e) => e);
      assert.ok(error instanceof PlatformRequestError);
      assert.deepEqual(error.status, 411);
    },
    {},
    { uploadTransport: "fetch" },
  );
  await withPlatform(
    { requireContentLength: false },
    async (platform, client) => {
      const callId = await allocateCall(client);
      await client.recording(callId, file);
      assert.deepEqual(platform.calls.get(callId)!.recordings[0].sha256, file.sha256);
    },
    {},
    { uploadTransport: "fetch" },
  );
});

Deno.test("PlatformClient.recording() refuses a file whose size changed, before sending", async () => {
  await using dir = await tempDir();
  const file = await recordingFile(dir.path, new Uint8Array(5000).fill(9));
  await Deno.writeFile(file.path, new Uint8Array(10));
  await withPlatform({}, async (platform, client) => {
    await assert.rejects(() => client.recording("c-1", file), RecordingChangedError);
    assert.deepEqual(platform.requests.length, 0);
  });
});

Deno.test("PlatformClient.recording() never completes an upload of a file whose bytes changed", async () => {
  await using dir = await tempDir();
  const file = await recordingFile(dir.path, new Uint8Array(3 << 20).fill(1));
  await Deno.writeFile(file.path, new Uint8Array(3 << 20).fill(2));
  for (const uploadTransport of ["direct", "fetch"] as const) {
    await withPlatform(
      { requireContentLength: false },
      async (platform, client) => {
        const callId = await allocateCall(client);
        await assert.rejects(() => client.recording(callId, file), RecordingChangedError);
        await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(platform.calls.get(callId)!.recordings, [], uploadTransport);
      },
      {},
      { uploadTransport },
    );
  }
});
