// `reins replay` starts from the directory the recorded run started from: every run snapshots its
// working directory as it starts, the replay restores that into a fresh directory under the data
// root, and `reins show --verbose` says what the snapshot holds.
import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";

const NOTES = "Buy milk.\nCall the plumber.\n";
const bytesOf = (...texts: string[]) =>
  texts.reduce((sum, text) => sum + new TextEncoder().encode(text).length, 0);

async function demoProject(root: string): Promise<string> {
  const work = `${root}/work`;
  await Deno.mkdir(work);
  await Deno.writeTextFile(`${work}/notes.txt`, NOTES);
  return await Deno.realPath(work);
}

// regression: the replay copied the directory as it was after the run, NOTES.md included, so the
// demo's list_files differed and the README's own demo replay diverged (exit 1)
Deno.test("reins replay last of the README demo turn reproduces it, from the directory it started in", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  const run = await reins(["run", "summarise the notes"], { home, cwd: work });
  assert.equal(run.code, 0, run.stderr);
  assert.ok((await Deno.stat(`${work}/NOTES.md`)).isFile, "the run wrote NOTES.md");

  const replay = await reins(["replay", "last", "--json"], { home, cwd: work });
  assert.equal(replay.code, 0, replay.stderr);
  const verdict = JSON.parse(replay.stdout);
  assert.equal(verdict.diverged, false, replay.stdout);
  assert.deepEqual(verdict.divergences, []);
  assert.match(
    replay.stderr,
    new RegExp(
      `^reins: replaying run \\S+ \\(\\d+ model outputs\\) in \\S+: ${work} as the run found it ` +
        `\\(1 file, ${bytesOf(NOTES)} bytes\\)\n`,
    ),
  );
  // A fresh directory under the data root, holding what the run started with and what the
  // replay wrote; the project itself is as the run left it.
  assert.ok(verdict.cwd.startsWith(`${await Deno.realPath(home)}/tmp/replay-`), verdict.cwd);
  assert.equal(
    await Deno.readTextFile(`${verdict.cwd}/notes.txt`),
    "Buy milk.\nCall the plumber.\n",
  );
  assert.ok((await Deno.stat(`${verdict.cwd}/NOTES.md`)).isFile);
  assert.deepEqual([...Deno.readDirSync(work)].map((e) => e.name).sort(), [
    "NOTES.md",
    "notes.txt",
  ]);

  const again = await reins(["replay", "last"], { home, cwd: work });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /reproduced/);
});

Deno.test("reins show --verbose says what the run's snapshot holds", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  const todo = "- [ ] ship\n";
  const ignore = "*.log\n";
  await Deno.writeTextFile(`${work}/todo.md`, todo);
  await Deno.writeTextFile(`${work}/.gitignore`, ignore);
  await Deno.writeTextFile(`${work}/build.log`, "left out\n");
  const run = await reins(["run", "--json", "summarise the notes"], { home, cwd: work });
  const { runId } = JSON.parse(run.stdout);
  const shown = await reins(["show", runId, "--verbose"], { home });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(
    shown.stdout,
    new RegExp(
      `\\n  cwd ${work}: started with 3 files, ${
        bytesOf(NOTES, todo, ignore)
      } bytes \\(reins replay restores them\\)\\n`,
    ),
  );
  const short = await reins(["show", runId], { home });
  assert.doesNotMatch(short.stdout, /started with/);
});

Deno.test("reins replay of a run whose directory was over the snapshot cap says so and replays in a copy", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  await Deno.mkdir(home, { recursive: true });
  await Deno.writeTextFile(`${home}/config.json`, JSON.stringify({ snapshot: { maxBytes: 10 } }));
  const run = await reins(["run", "--json", "summarise the notes"], { home, cwd: work });
  assert.equal(run.code, 0, run.stderr);
  const { runId } = JSON.parse(run.stdout);
  const shown = await reins(["show", runId, "--verbose"], { home });
  assert.match(
    shown.stdout,
    /: no snapshot: its files add up to more than the 10 bytes cap \(snapshot\.maxBytes in config\.json\)\n/,
  );
  const replay = await reins(["replay", runId], { home, cwd: work });
  assert.match(
    replay.stderr,
    new RegExp(
      `^reins: replaying run ${runId} \\(\\d+ model outputs\\) in \\S+, a copy of ${work} as it ` +
        "is now: its snapshot was skipped: its files add up to more than the 10 bytes cap " +
        "\\(snapshot\\.maxBytes in config\\.json\\), so the replay may diverge where the " +
        "directory has changed since\\n",
    ),
  );
  // The copy has the NOTES.md the run wrote: the demo's listing differs, as it did before.
  assert.equal(replay.code, 1, replay.stderr);
});

Deno.test("reins replay of a run with no snapshot says so on one line and replays in a copy", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  const run = await reins(["run", "--json", "summarise the notes"], { home, cwd: work });
  const { runId } = JSON.parse(run.stdout);
  await Deno.remove(`${home}/snapshots/manifests/${runId}.json`);
  await Deno.remove(`${work}/NOTES.md`);
  const replay = await reins(["replay", runId], { home, cwd: work });
  assert.equal(replay.code, 0, replay.stderr);
  const lines = replay.stderr.split("\n").filter((line) => line.startsWith("reins: replaying"));
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    /, a copy of \S+ as it is now: no snapshot was taken, so the replay may diverge/,
  );
});

/** Makes a file named `bad<0xff>name` (not UTF-8: Deno cannot name it) in `dir`. */
async function nonUtf8File(dir: string): Promise<void> {
  const made = await new Deno.Command("sh", {
    args: ["-c", `printf 'x' > "${dir}/$(printf 'bad\\377name')"`],
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
}

const WRITE_AND_ANSWER = JSON.stringify([
  { toolCalls: [{ id: "w", name: "write_file", args: { path: "out.txt", content: "hi" } }] },
  { text: "wrote it" },
]);

// regression: one file whose name is not UTF-8 made the snapshot fail (lstat of the name Deno
// made up with U+FFFD) and then the replay's copy too: the run could not be replayed at all (exit 6)
Deno.test("reins replay of a run whose directory holds a name that is not UTF-8 leaves that file out, counts it and says so", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  await nonUtf8File(work);
  await Deno.mkdir(`${work}/sub`);
  await nonUtf8File(`${work}/sub`);
  await Deno.writeTextFile(`${dir.path}/script.json`, WRITE_AND_ANSWER);
  const run = await reins(["run", "--model", `mock:${dir.path}/script.json`, "go"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /reins: warning: the snapshot of \S+ for run \S+ leaves out 2 files whose names are not UTF-8 \(reins cannot name them\); a replay will not have them/,
  );
  assert.doesNotMatch(run.stderr, /no snapshot/);

  const replay = await reins(["replay", "last", "--json"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  assert.equal(replay.code, 0, replay.stderr);
  assert.equal(JSON.parse(replay.stdout).diverged, false, replay.stdout);
  assert.match(
    replay.stderr,
    /as the run found it \(1 file, \d+ bytes; 2 files whose names are not UTF-8 left out: reins cannot name them when it was taken\)/,
  );
  const restored = JSON.parse(replay.stdout).cwd;
  assert.equal(await Deno.readTextFile(`${restored}/notes.txt`), NOTES);
});

// regression: a manifest's mode 0o4777 was restored as is: setuid and world-writable
Deno.test("reins replay restores a file's permission bits but never setuid, setgid or sticky", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  await Deno.writeTextFile(`${work}/tool.sh`, "#!/bin/sh\n");
  await Deno.chmod(`${work}/tool.sh`, 0o4755);
  await Deno.writeTextFile(`${dir.path}/script.json`, WRITE_AND_ANSWER);
  const run = await reins(["run", "--json", "--model", `mock:${dir.path}/script.json`, "go"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  assert.equal(run.code, 0, run.stderr);
  const { runId } = JSON.parse(run.stdout);
  // The manifest as someone with the data root's rights could leave it.
  const manifestPath = `${home}/snapshots/manifests/${runId}.json`;
  const manifest = JSON.parse(await Deno.readTextFile(manifestPath));
  const tool = manifest.entries.find((entry: { path: string }) => entry.path === "tool.sh");
  assert.equal(tool.mode, 0o4755, "the snapshot records the mode as it was");
  manifest.entries.find((entry: { path: string }) => entry.path === "notes.txt").mode = 0o4777;
  await Deno.writeTextFile(manifestPath, JSON.stringify(manifest));

  const replay = await reins(["replay", runId, "--json"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  assert.equal(replay.code, 0, replay.stderr);
  const restored = JSON.parse(replay.stdout).cwd;
  assert.equal((await Deno.stat(`${restored}/tool.sh`)).mode! & 0o7777, 0o755);
  assert.equal((await Deno.stat(`${restored}/notes.txt`)).mode! & 0o7777, 0o777);
});

Deno.test("reins replay's copy of a directory without a snapshot drops setuid and names that are not UTF-8", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const work = await demoProject(dir.path);
  await Deno.writeTextFile(`${work}/tool.sh`, "#!/bin/sh\n");
  await Deno.chmod(`${work}/tool.sh`, 0o4755);
  await Deno.writeTextFile(`${dir.path}/script.json`, WRITE_AND_ANSWER);
  const run = await reins(["run", "--json", "--model", `mock:${dir.path}/script.json`, "go"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  const { runId } = JSON.parse(run.stdout);
  await Deno.remove(`${home}/snapshots/manifests/${runId}.json`);
  await nonUtf8File(work);
  const replay = await reins(["replay", runId, "--json"], {
    home,
    cwd: work,
    allowPaths: [dir.path],
  });
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(
    replay.stderr,
    /a copy of \S+ as it is now \(1 file whose name is not UTF-8 left out: reins cannot name it\): no snapshot was taken/,
  );
  const restored = JSON.parse(replay.stdout).cwd;
  assert.equal((await Deno.stat(`${restored}/tool.sh`)).mode! & 0o7777, 0o755);
});
