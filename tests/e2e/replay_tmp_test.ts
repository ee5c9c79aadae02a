// Where a replay works: in a fresh directory under the data root's tmp/, not the system temp dir.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

// regression: every `reins replay` left a reins-replay-* directory in the temp dir.
Deno.test("reins replay leaves nothing in the temp dir: its copy is under the data root's tmp/", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const tmp = `${dir.path}/tmp`;
  const work = `${dir.path}/work`;
  await Deno.mkdir(tmp);
  await Deno.mkdir(work);
  const env = { TMPDIR: tmp };
  await Deno.writeTextFile(`${work}/a.txt`, "alpha");
  const first = await reins(["run", "--json", "look"], { home, cwd: work, env });
  assert.equal(first.code, 0, first.stderr);
  const runId = JSON.parse(first.stdout).runId;
  for (let i = 0; i < 2; i++) {
    const replay = await reins(["replay", runId, "--json"], { home, cwd: work, env });
    assert.equal(replay.code, 0, replay.stderr);
    assert.ok(JSON.parse(replay.stdout).cwd.startsWith(`${home}/tmp/`), replay.stdout);
  }
  assert.deepEqual([...Deno.readDirSync(tmp)].map((entry) => entry.name), []);
});
