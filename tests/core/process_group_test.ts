// spawnGroupLeader: the agent leads a session and process group of its own, whichever way it is
// started (the trampoline setsid(1) where the sandbox lists it — under --allow-all, as here, and
// under the binary's flags — else Deno's detached), without a fork of reins where the trampoline
// runs, and a program that cannot be run is refused as Deno.Command's spawn refuses it.
import assert from "node:assert/strict";
import { spawnGroupLeader, TRAMPOLINE } from "../../lib/core/process_group.ts";
import { permissionFlags, TRAMPOLINE as LISTED_TRAMPOLINE } from "../../scripts/permissions.ts";

/** pid, ppid, pgrp and session of a process, from /proc/<pid>/stat. */
function statOf(text: string): { pid: number; ppid: number; pgrp: number; session: number } {
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    pid: Number(text.slice(0, text.indexOf(" "))),
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
  };
}

Deno.test("spawnGroupLeader() starts the program itself as the leader of a session and group of its own", async () => {
  const child = spawnGroupLeader("sh", {
    args: ["-c", "cat /proc/$$/stat"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  const output = await child.output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const stat = statOf(new TextDecoder().decode(output.stdout));
  // The pid reins records is the program's own (setsid execs it), the group's and the session's.
  assert.equal(stat.pid, child.pid);
  assert.equal(stat.pgrp, child.pid);
  assert.equal(stat.session, child.pid);
  assert.equal(stat.ppid, Deno.pid);
});

Deno.test("spawnGroupLeader() runs a relative program from the working directory it is given", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/agent.sh`, "#!/bin/sh\necho from-sub\n", { mode: 0o755 });
    const output = await spawnGroupLeader("./agent.sh", {
      cwd: `${dir}/sub`,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(new TextDecoder().decode(output.stdout), "from-sub\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("spawnGroupLeader() refuses a missing or non-executable program as spawn() does", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/plain.txt`, "not a program\n", { mode: 0o644 });
    const options = { cwd: dir, stdout: "null" as const, stderr: "null" as const };
    assert.throws(() => spawnGroupLeader(`${dir}/missing`, options), Deno.errors.NotFound);
    assert.throws(
      () => spawnGroupLeader("reins-no-such-program-anywhere", options),
      Deno.errors.NotFound,
    );
    assert.throws(
      () => spawnGroupLeader(`${dir}/plain.txt`, options),
      Deno.errors.PermissionDenied,
    );
    // As Deno.Command refuses them, whichever way the group leader is started.
    assert.throws(() => new Deno.Command(`${dir}/missing`, options).spawn(), Deno.errors.NotFound);
    assert.throws(
      () => new Deno.Command(`${dir}/plain.txt`, options).spawn(),
      Deno.errors.PermissionDenied,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const PROBE = new URL("../fixtures/workers/spawn_probe.ts", import.meta.url).pathname;
const LIB = new URL("../../lib/", import.meta.url).pathname;

interface Probe {
  pid: number;
  start: { via: string; detail: string };
  pages: number;
  faults: number;
  children: { pid: number; code: number; stat: string; stderr: string }[];
}

/**
 * Runs the spawn probe under the binary's sandbox flags for a run list of `sh` (with the
 * trampoline, as permissions.ts lists it, unless `withoutTrampoline`).
 */
async function probe<T = Probe>(
  args: string[],
  options: { withoutTrampoline?: boolean } = {},
): Promise<T> {
  const dir = await Deno.makeTempDir();
  try {
    const flags = permissionFlags({ home: dir, cwd: dir, netHosts: [], programs: ["sh", "kill"] })
      .map((flag) => {
        if (flag.startsWith("--allow-read=")) return `${flag},${LIB},${PROBE}`;
        if (flag.startsWith("--allow-run=") && options.withoutTrampoline) {
          return "--allow-run=sh,kill";
        }
        return flag;
      });
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", ...flags, PROBE, ...args],
      cwd: dir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    return JSON.parse(new TextDecoder().decode(output.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every child led a session and group of its own, its pid the one reins was given. */
function assertGroupLeaders(result: Probe, count: number): void {
  assert.equal(result.children.length, count);
  for (const child of result.children) {
    assert.equal(child.code, 0, child.stderr);
    const stat = statOf(child.stat);
    assert.equal(stat.pid, child.pid);
    assert.equal(stat.ppid, result.pid, "the agent's parent is reins itself");
    assert.equal(stat.pgrp, child.pid);
    assert.equal(stat.session, child.pid);
  }
}

Deno.test("the binary's run list names the trampoline spawnGroupLeader uses", () => {
  assert.equal(LISTED_TRAMPOLINE, TRAMPOLINE);
  const run = permissionFlags({ home: "/h", cwd: "/w", netHosts: [], programs: ["claude"] })
    .find((flag) => flag.startsWith("--allow-run="));
  assert.equal(run, `--allow-run=claude,${TRAMPOLINE}`);
  // No program, no trampoline: running stays denied.
  assert.ok(
    !permissionFlags({ home: "/h", cwd: "/w", netHosts: [], programs: [] })
      .some((flag) => flag.startsWith("--allow-run")),
  );
});

const trampolineHere = (() => {
  try {
    return Deno.statSync(TRAMPOLINE).isFile;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "under the binary's flags an agent starts as a group leader without a fork of reins",
  ignore: !trampolineHere,
  async fn() {
    // The control: Deno's detached spawn forks this process, and the probe sees it.
    const forked = await probe(["--control", "4", "1"]);
    assertGroupLeaders(forked, 4);
    assert.ok(
      forked.faults >= 32,
      `the probe must see a fork (${forked.faults} faults for ${forked.pages} pages)`,
    );
    // Through the trampoline: no copy of the heap, 4 one after another and 16 under load.
    const alone = await probe(["--ours", "4", "1"]);
    assert.equal(alone.start.via, "trampoline", alone.start.detail);
    assertGroupLeaders(alone, 4);
    assert.ok(
      alone.faults * 8 < forked.faults,
      `no fork: ${alone.faults} faults against the fork's ${forked.faults}`,
    );
    const loaded = await probe(["--ours", "16", "8"]);
    assertGroupLeaders(loaded, 16);
    assert.ok(
      loaded.faults * 8 < forked.faults * 4,
      `no fork under load: ${loaded.faults} faults against ${forked.faults} for 4 forks`,
    );
  },
});
if (!trampolineHere) {
  console.error(`SKIPPED the no-fork test: no ${TRAMPOLINE} here (install util-linux)`);
}

Deno.test("without the trampoline on the run list agents still lead their own group (by a fork)", async () => {
  const result = await probe(["--ours", "2", "1"], { withoutTrampoline: true });
  assert.equal(result.start.via, "fork");
  assert.match(result.start.detail, /does not list \/usr\/bin\/setsid/);
  assertGroupLeaders(result, 2);
});

Deno.test({
  name: "through the trampoline the agent's streams, exit status and group signals are its own",
  ignore: !trampolineHere,
  async fn() {
    for (const withoutTrampoline of [false, true]) {
      const result = await probe<{
        code: number;
        stdout: string;
        stderr: string;
        signalled: boolean;
        sleeperSignal: string | null;
        sleepGone: boolean;
      }>(["--io"], { withoutTrampoline });
      assert.equal(result.code, 5);
      assert.equal(result.stdout, "got:hello\n");
      assert.equal(result.stderr, "err\n");
      assert.equal(result.signalled, true);
      assert.equal(result.sleeperSignal, "SIGTERM");
      assert.equal(result.sleepGone, true, "the agent's child got the group's signal");
    }
  },
});
