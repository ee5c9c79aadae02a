// spawnGroupLeader: the agent leads a session and process group of its own, whichever way it is
// started (setsid(1) where the sandbox lets it run — as here, under --allow-all — else Deno's
// detached), and a program that cannot be run is refused as Deno.Command's spawn refuses it.
import assert from "node:assert/strict";
import { spawnGroupLeader } from "../../lib/core/process_group.ts";

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
