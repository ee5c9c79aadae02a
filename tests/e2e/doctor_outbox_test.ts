// `reins doctor` tells about reports left in the outbox when the platform could not be reached.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

Deno.test("reins doctor counts a report the platform never acknowledged, with why", async () => {
  await using dir = await tempDir();
  // A loopback port nobody listens on: taken, then let go.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const env = {
    HARNESS_PLATFORM_URL: `http://127.0.0.1:${port}`,
    HARNESS_PLATFORM_API_KEY: "key",
    HARNESS_PLATFORM_SECRET_KEY: "secret",
  };
  const ran = await reins(["run", "--json", "hello"], { home: dir.path, env });
  assert.equal(ran.code, 0, ran.stderr);
  const reported = await reins(["report", "last"], { home: dir.path, env });
  assert.equal(reported.code, 5, reported.stderr);
  assert.match(reported.stderr, /reins report --pending sends it/);

  const doctor = await reins(["doctor", "--json"], { home: dir.path, env });
  assert.equal(doctor.code, 0, doctor.stderr);
  const platform = JSON.parse(doctor.stdout).platform;
  assert.deepEqual(
    [platform.pendingReports, platform.refusedReports, platform.unreadableReports],
    [1, 0, []],
  );
  const human = await reins(["doctor"], { home: dir.path, env });
  assert.match(
    human.stdout,
    /\noutbox {7}1 report\(s\) pending: reins report --pending sends them\n/,
  );
  assert.match(human.stdout, /POST \/run-tests\/provision\/ could not be sent/);
});
