// A full disk under the data root is a data-root error people can act on (exit 6, with what to
// free), never "this is a bug in reins": during a run, when a run starts, during a report. What
// was recorded before stays, no staging directory is left behind, and once there is room again
// the run cut short reads as interrupted with its events whole. The disk is a real small tmpfs
// mounted for the test (root only); where mounting is not allowed the tests are skipped, loudly.
import assert from "node:assert/strict";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { makeRun } from "../platform/_runs.ts";
import { reins, tempDir } from "../support/reins.ts";

const FLOOD = new URL("../fixtures/agents/flood.sh", import.meta.url).pathname;

function mountable(): string | null {
  const probe = Deno.makeTempDirSync({ prefix: "reins-mount-probe-" });
  try {
    const mounted = new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    if (!mounted.success) return new TextDecoder().decode(mounted.stderr).trim() || "mount failed";
    new Deno.Command("umount", { args: [probe] }).outputSync();
    return null;
  } catch (error) {
    return String(error);
  } finally {
    Deno.removeSync(probe, { recursive: true });
  }
}

const CANNOT_MOUNT = mountable();
if (CANNOT_MOUNT !== null) {
  console.warn(
    `SKIPPED tests/e2e/disk_full_test.ts: a small tmpfs cannot be mounted here (${CANNOT_MOUNT}); ` +
      "run it as root where mount is allowed to test reins on a full disk",
  );
}

/** A tmpfs of `size` mounted in a fresh temp directory, unmounted when disposed. */
async function smallDisk(size: string): Promise<{ path: string } & AsyncDisposable> {
  const dir = await tempDir("reins-full-");
  const path = `${dir.path}/disk`;
  await Deno.mkdir(path);
  const mounted = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", path],
  }).output();
  assert.ok(mounted.success, new TextDecoder().decode(mounted.stderr));
  return {
    path,
    async [Symbol.asyncDispose]() {
      await new Deno.Command("umount", { args: [path] }).output();
      await dir[Symbol.asyncDispose]();
    },
  };
}

/** Fills what is left of the disk holding `path` with a file there; returns its path. */
function fill(path: string): string {
  const ballast = `${path}/ballast`;
  using file = Deno.openSync(ballast, { write: true, create: true });
  const chunk = new Uint8Array(4096);
  try {
    for (;;) file.writeSync(chunk);
  } catch (error) {
    assert.equal((error as { code?: string }).code, "ENOSPC");
  }
  return ballast;
}

function staging(home: string): string[] {
  try {
    return [...Deno.readDirSync(`${home}/runs/.staging`)].map((entry) => entry.name);
  } catch {
    return [];
  }
}

const SAID =
  /^reins: No space left to write under the data root \S+: No space left on device \(os error 28\)\nhint: free space on the file system that holds it \(df -h \S+\); what was recorded before is kept/m;

Deno.test({
  name:
    "regression: a run that fills the disk exits 6 with what to free, leaves no staging, and keeps its events",
  ignore: CANNOT_MOUNT !== null,
  async fn() {
    await using disk = await smallDisk("512k");
    const home = `${disk.path}/home`;
    const ballast = `${disk.path}/ballast`;
    await Deno.writeFile(ballast, new Uint8Array(128 * 1024));
    // 30,000 lines of about 250 bytes each: far more than the disk holds.
    const flood = await reins(
      ["run", "--driver", "command", "--exec", `sh ${FLOOD} 30000`, "flood"],
      { home, cwd: disk.path, allowRun: ["sh"] },
    );
    assert.equal(flood.code, 6, flood.stderr);
    assert.match(flood.stderr, SAID);
    assert.doesNotMatch(flood.stderr, /bug in reins/);
    assert.deepEqual(staging(home), []);

    // The disk is still full: the next run cannot even be made, and says so the same way.
    const next = await reins(["run", "--driver", "command", "--exec", "true", "again"], {
      home,
      cwd: disk.path,
      allowRun: ["true"],
    });
    assert.equal(next.code, 6, next.stderr);
    assert.match(next.stderr, SAID);
    assert.deepEqual(staging(home), [], "regression: runs/.staging/<id>/owner.lock was left");
    // A command that only reads still works, and says what it could not do.
    const listed = await reins(["runs", "--json"], { home, cwd: disk.path });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stderr, /is not yet marked interrupted .*No space left on device/);

    await Deno.remove(ballast);
    const recovered = await reins(["recover", "--json"], { home, cwd: disk.path });
    assert.equal(recovered.code, 0, recovered.stderr);
    const report = JSON.parse(recovered.stdout);
    assert.equal(report.interrupted.length, 1);
    const shown = await reins(["show", report.interrupted[0], "--json"], { home, cwd: disk.path });
    assert.equal(shown.code, 0, shown.stderr);
    const { record, events } = JSON.parse(shown.stdout);
    assert.equal(record.status, "interrupted");
    assert.equal(events[0].type, "run.started");
    // Every event that reached the disk is there, in sequence: hundreds of the flood's lines.
    assert.ok(events.length > 300, `${events.length} events`);
    events.forEach((event: { sequence: number }, i: number) => assert.equal(event.sequence, i));
    assert.equal(events.at(-1).type, "status.changed");
  },
});

Deno.test({
  name:
    "regression: reins report on a full disk exits 6 with what to free, and reports once there is room",
  ignore: CANNOT_MOUNT !== null,
  async fn() {
    await using disk = await smallDisk("1m");
    const home = `${disk.path}/home`;
    const { record } = await makeRun(home);
    const platform = startFakePlatform();
    const env = {
      HARNESS_PLATFORM_URL: platform.url,
      HARNESS_PLATFORM_API_KEY: platform.apiKey,
      HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
    };
    try {
      const ballast = fill(disk.path);
      const full = await reins(["report", record.id], { home, env });
      assert.equal(full.code, 6, full.stderr);
      assert.match(full.stderr, SAID);
      await Deno.remove(ballast);
      const room = await reins(["report", record.id], { home, env });
      assert.equal(room.code, 0, room.stderr);
      assert.match(room.stdout, /^reported to the platform: /);
    } finally {
      await platform.close();
    }
  },
});
