// Snapshots of a working directory in a real temp tree: what is kept (and left out), blobs stored
// once across runs, the cap, putting the tree back exactly, and what changed since.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { changedSinceStart, diffSnapshot } from "../../lib/snapshot/diff.ts";
import {
  readManifest,
  type SnapshotManifest,
  SnapshotManifest as SnapshotManifestSchema,
} from "../../lib/snapshot/manifest.ts";
import { describeSize } from "../../lib/snapshot/glance.ts";
import { restoreSnapshot, SnapshotDamagedError } from "../../lib/snapshot/restore.ts";
import { startSnapshot, takeSnapshot } from "../../lib/snapshot/take.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { tempDir } from "../support/reins.ts";

const sha = (text: string | Uint8Array) => createHash("sha256").update(text).digest("hex");

/** The bytes a manifest's file entry points at, read from its pack. */
function stored(root: DataRoot, entry: SnapshotManifest["entries"][number]): Uint8Array {
  assert.equal(entry.type, "file");
  if (entry.type !== "file") throw new Error("not a file");
  const pack = Deno.readFileSync(root.layout.snapshotPack(entry.pack));
  return pack.subarray(entry.offset, entry.offset + entry.size);
}

/** A small project: nested files, an empty directory, an executable, a link, .git, ignores. */
async function project(root: string): Promise<void> {
  await Deno.mkdir(`${root}/src/lib`, { recursive: true });
  await Deno.mkdir(`${root}/empty`);
  await Deno.mkdir(`${root}/.git/objects`, { recursive: true });
  await Deno.mkdir(`${root}/node_modules/x`, { recursive: true });
  await Deno.writeTextFile(`${root}/notes.txt`, "Buy milk.\n");
  await Deno.writeTextFile(`${root}/src/main.ts`, "console.log(1);\n");
  await Deno.writeTextFile(`${root}/src/lib/same.txt`, "same\n");
  await Deno.writeTextFile(`${root}/src/same-too.txt`, "same\n");
  await Deno.writeTextFile(`${root}/run.sh`, "#!/bin/sh\necho hi\n");
  await Deno.chmod(`${root}/run.sh`, 0o755);
  await Deno.symlink("notes.txt", `${root}/latest`);
  await Deno.writeTextFile(`${root}/.git/HEAD`, "ref: refs/heads/main\n");
  await Deno.writeTextFile(`${root}/node_modules/x/index.js`, "module.exports = 1;\n");
  await Deno.writeTextFile(`${root}/debug.log`, "noise\n");
  await Deno.writeTextFile(`${root}/.gitignore`, "node_modules/\n*.log\n");
}

function manifestOf(root: DataRoot, runId: string): SnapshotManifest {
  const read = readManifest(root, runId);
  assert.ok(read?.ok, JSON.stringify(read));
  return read.manifest;
}

Deno.test("takeSnapshot() lists each kept path with its mode, size and sha256, leaving out .git and ignored files", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await project(work.path);
  const summary = await takeSnapshot(root, "run-1", work.path);
  assert.deepEqual(
    { ...summary, manifest: undefined },
    {
      state: "taken",
      reason: null,
      files: 6,
      bytes: 10 + 16 + 5 + 5 + 18 + 20,
      storedBytes: 10 + 16 + 5 + 18 + 20, // same.txt twice, stored once
      readBytes: 10 + 16 + 5 + 5 + 18 + 20,
      leftOut: 3,
      nonUtf8Names: 0,
      manifest: undefined,
    },
  );
  const manifest = manifestOf(root, "run-1");
  assert.equal(manifest.cwd, work.path);
  const mode = (path: string) => Deno.statSync(`${work.path}/${path}`).mode! & 0o7777;
  const file = (path: string, content: string) => ({
    type: "file",
    path,
    mode: mode(path),
    size: content.length,
    sha256: sha(content),
  });
  const withoutPlace = manifest.entries.map((entry) => {
    if (entry.type !== "file") return entry;
    const { pack: _pack, offset: _offset, ...rest } = entry;
    return rest;
  });
  assert.deepEqual(withoutPlace, [
    file(".gitignore", "node_modules/\n*.log\n"),
    { type: "dir", path: "empty", mode: mode("empty") },
    { type: "symlink", path: "latest", target: "notes.txt" },
    file("notes.txt", "Buy milk.\n"),
    file("run.sh", "#!/bin/sh\necho hi\n"),
    { type: "dir", path: "src", mode: mode("src") },
    { type: "dir", path: "src/lib", mode: mode("src/lib") },
    file("src/lib/same.txt", "same\n"),
    file("src/main.ts", "console.log(1);\n"),
    file("src/same-too.txt", "same\n"),
  ]);
  assert.equal(mode("run.sh") & 0o100, 0o100, "the executable bit is kept");
  for (const entry of manifest.entries) {
    if (entry.type === "file") {
      assert.equal(sha(stored(root, entry)), entry.sha256, entry.path);
    }
  }
  const [same, sameToo] = manifest.entries.filter((e) => e.path.includes("same"));
  assert.deepEqual(
    same.type === "file" && sameToo.type === "file" && [same.offset, same.pack],
    sameToo.type === "file" && [sameToo.offset, sameToo.pack],
    "equal contents are stored once",
  );
  const packs = [...Deno.readDirSync(`${home.path}/snapshots/packs`)];
  assert.equal(packs.length, 1);
  assert.equal(
    (await Deno.stat(`${home.path}/snapshots/packs/${packs[0].name}`)).mode! & 0o777,
    0o600,
  );
  assert.equal(
    (await Deno.stat(`${home.path}/snapshots/manifests/run-1.json`)).mode! & 0o777,
    0o600,
  );
});

Deno.test("takeSnapshot() of an unchanged tree writes no file bytes; a changed file adds only its own", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await project(work.path);
  const first = await takeSnapshot(root, "run-1", work.path);
  const second = await takeSnapshot(root, "run-2", work.path);
  assert.ok(first.storedBytes > 0);
  assert.equal(second.storedBytes, 0);
  assert.deepEqual(manifestOf(root, "run-2").entries, manifestOf(root, "run-1").entries);
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Buy oat milk.\n");
  const third = await takeSnapshot(root, "run-3", work.path);
  assert.equal(third.storedBytes, 14);
});

Deno.test("takeSnapshot() stores a file bigger than it reads whole, chunk by chunk", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  const big = new Uint8Array(9 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
  await Deno.writeFile(`${work.path}/big.bin`, big);
  const summary = await takeSnapshot(root, "run-1", work.path);
  assert.equal(summary.storedBytes, big.length);
  const [entry] = manifestOf(root, "run-1").entries;
  assert.deepEqual(entry.type === "file" && [entry.size, entry.sha256], [big.length, sha(big)]);
  assert.deepEqual(stored(root, entry), big);
  assert.equal((await takeSnapshot(root, "run-2", work.path)).storedBytes, 0);
});

Deno.test("takeSnapshot() of a new directory stores only contents no run stored, whichever files they are in", async () => {
  // The index is asked about a whole pack buffer of contents at once, and those it has are
  // taken out of the buffer again: many files (more than one buffer: 4 MiB), known and new
  // ones interleaved, and a big one read in chunks between them.
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using a = await tempDir();
  await using b = await tempDir();
  const pattern = new Uint8Array(5 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
  const content = (n: number, size: number) => {
    const bytes = pattern.slice(0, size);
    new DataView(bytes.buffer).setUint32(0, n);
    return bytes;
  };
  for (let n = 0; n < 300; n += 2) await Deno.writeFile(`${a.path}/f${n}`, content(n, 40_000));
  assert.equal((await takeSnapshot(root, "run-a", a.path)).storedBytes, 150 * 40_000);
  let fresh = 0;
  for (let n = 0; n < 300; n++) {
    await Deno.writeFile(`${b.path}/f${n}`, content(n, 40_000));
    if (n % 2 === 1) fresh += 40_000;
  }
  const big = content(1000, 5 * 1024 * 1024);
  await Deno.writeFile(`${b.path}/f150-big`, big);
  fresh += big.length;
  const summary = await takeSnapshot(root, "run-b", b.path);
  assert.equal(summary.storedBytes, fresh, "the contents run-a stored are not stored again");
  const manifest = manifestOf(root, "run-b");
  const packs = new Map<string, Uint8Array>();
  for (const entry of manifest.entries) {
    assert.ok(entry.type === "file");
    const n = entry.path === "f150-big" ? 1000 : Number(entry.path.slice(1));
    const expected = n === 1000 ? big : content(n, 40_000);
    assert.equal(entry.sha256, sha(expected), entry.path);
    const pack = packs.get(entry.pack) ?? Deno.readFileSync(root.layout.snapshotPack(entry.pack));
    packs.set(entry.pack, pack);
    const bytes = pack.subarray(entry.offset, entry.offset + entry.size);
    assert.equal(sha(bytes), entry.sha256, `${entry.path} points at its bytes`);
  }
  await using copy = await tempDir();
  await restoreSnapshot(root, manifest, copy.path);
  assert.deepEqual(await diffSnapshot(manifest, copy.path), {
    added: [],
    changed: [],
    removed: [],
  });
});

Deno.test("startSnapshot() returns once every file is read: what changes afterwards is not in it", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await project(work.path);
  const started = await startSnapshot(root, "run-1", work.path);
  // What an agent does as soon as it starts, while the snapshot is still being written.
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Sell the milk.\n");
  await Deno.remove(`${work.path}/src/main.ts`);
  await started.written;
  const manifest = manifestOf(root, "run-1");
  assert.equal(started.summary.files, manifest.files);
  await using copy = await tempDir();
  await restoreSnapshot(root, manifest, copy.path);
  assert.equal(await Deno.readTextFile(`${copy.path}/notes.txt`), "Buy milk.\n");
  assert.equal(await Deno.readTextFile(`${copy.path}/src/main.ts`), "console.log(1);\n");
});

Deno.test("a process killed once a snapshot is read, before it is on disk, leaves no manifest and no index entry naming its pack", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  const big = new Uint8Array(6 * 1024 * 1024).map((_, i) => (i * 13) & 0xff);
  await Deno.writeFile(`${work.path}/big.bin`, big);
  for (let n = 0; n < 200; n++) await Deno.writeTextFile(`${work.path}/f${n}.txt`, `file ${n}\n`);
  const take = new URL("../../lib/snapshot/take.ts", import.meta.url).href;
  const dataRoot = new URL("../../lib/store/data_root.ts", import.meta.url).href;
  const script = `const { startSnapshot } = await import(${JSON.stringify(take)});
    const { DataRoot } = await import(${JSON.stringify(dataRoot)});
    const root = new DataRoot(${JSON.stringify(home.path)});
    await startSnapshot(root, "run-killed", ${JSON.stringify(work.path)});
    Deno.kill(Deno.pid, "SIGKILL");`;
  const killed = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(killed.signal, "SIGKILL", new TextDecoder().decode(killed.stderr));
  assert.equal(
    readManifest(root, "run-killed"),
    null,
    "no manifest of a snapshot not on disk",
  );
  // The index (if made at all) lists nothing: a later snapshot stores every content again,
  // rather than pointing at a pack that may not have reached the disk.
  const again = await takeSnapshot(root, "run-2", work.path);
  assert.equal(again.storedBytes, again.bytes);
  assert.equal(again.files, 201);
  await using copy = await tempDir();
  const manifest = manifestOf(root, "run-2");
  await restoreSnapshot(root, manifest, copy.path);
  assert.deepEqual(await diffSnapshot(manifest, copy.path), {
    added: [],
    changed: [],
    removed: [],
  });
});

Deno.test("takeSnapshot() skips a tree over its cap and says why, storing nothing", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await Deno.writeFile(`${work.path}/a.bin`, new Uint8Array(600));
  await Deno.writeFile(`${work.path}/b.bin`, new Uint8Array(600));
  const summary = await takeSnapshot(root, "run-1", work.path, { maxBytes: 1024 });
  assert.equal(summary.state, "skipped");
  assert.equal(
    summary.reason,
    "its files add up to more than the 1 KiB cap (snapshot.maxBytes in config.json)",
  );
  assert.equal(manifestOf(root, "run-1").entries.length, 0);
  assert.throws(() => Deno.statSync(`${home.path}/snapshots/packs`), Deno.errors.NotFound);
  const off = await takeSnapshot(root, "run-2", work.path, { maxBytes: 0 });
  assert.equal(off.reason, "snapshots are turned off (snapshot.maxBytes is 0 in config.json)");
  const many = await takeSnapshot(root, "run-3", work.path, { maxEntries: 1 });
  assert.equal(many.reason, "it has more than 1 paths (snapshot.maxEntries in config.json)");
});

Deno.test("restoreSnapshot() puts the tree back exactly, and diffSnapshot() then finds nothing changed", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await using copy = await tempDir();
  await project(work.path);
  await takeSnapshot(root, "run-1", work.path);
  // The tree moves on after the snapshot: the restore is of how it was.
  await Deno.writeTextFile(`${work.path}/NOTES.md`, "# Notes\n");
  await Deno.remove(`${work.path}/empty`);
  const manifest = manifestOf(root, "run-1");
  assert.deepEqual(await restoreSnapshot(root, manifest, copy.path), {
    files: 6,
    bytes: manifest.bytes,
  });
  assert.deepEqual(await diffSnapshot(manifest, copy.path), {
    added: [],
    removed: [],
    changed: [],
  });
  assert.equal(await Deno.readLink(`${copy.path}/latest`), "notes.txt");
  assert.equal(
    (await Deno.stat(`${copy.path}/run.sh`)).mode! & 0o777,
    (await Deno.stat(`${work.path}/run.sh`)).mode! & 0o777,
  );
  assert.ok((await Deno.stat(`${copy.path}/empty`)).isDirectory);
  assert.deepEqual(await diffSnapshot(manifest, work.path), {
    added: ["NOTES.md"],
    removed: ["empty"],
    changed: [],
  });
});

Deno.test("restoreSnapshot() says a snapshot whose content is gone or altered is damaged", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Buy milk.\n");
  await takeSnapshot(root, "run-1", work.path);
  const manifest = manifestOf(root, "run-1");
  const [entry] = manifest.entries;
  assert.ok(entry.type === "file");
  const pack = root.layout.snapshotPack(entry.pack);
  const bytes = await Deno.readFile(pack);
  bytes[entry.offset] ^= 1;
  await Deno.writeFile(pack, bytes);
  await using altered = await tempDir();
  await assert.rejects(
    () => restoreSnapshot(root, manifest, altered.path),
    (error: Error) =>
      error instanceof SnapshotDamagedError &&
      error.message ===
        `The snapshot of run run-1 is damaged: the content of notes.txt is not what was stored ` +
          `(sha256 ${sha("Buy milk.\n")})`,
  );
  await Deno.remove(pack);
  await using gone = await tempDir();
  await assert.rejects(
    () => restoreSnapshot(root, manifest, gone.path),
    (error: Error) =>
      error instanceof SnapshotDamagedError &&
      error.message === `The snapshot of run run-1 is damaged: its pack ${entry.pack} is gone`,
  );
});

Deno.test("takeSnapshot() starts a new blob index when the old one is damaged, and keeps working", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Buy milk.\n");
  await takeSnapshot(root, "run-1", work.path);
  await Deno.writeTextFile(`${home.path}/snapshots/blobs.sqlite`, "not a database at all");
  for (const suffix of ["-journal", "-wal", "-shm"]) {
    await Deno.remove(`${home.path}/snapshots/blobs.sqlite${suffix}`).catch(() => {});
  }
  // Without the directory's stat cache either, only the index could say the content is there.
  await Deno.remove(`${home.path}/snapshots/cache`, { recursive: true });
  const again = await takeSnapshot(root, "run-2", work.path);
  assert.equal(again.storedBytes, 10, "without its index the content is stored again");
  await using copy = await tempDir();
  await restoreSnapshot(root, manifestOf(root, "run-1"), copy.path);
  assert.equal(await Deno.readTextFile(`${copy.path}/notes.txt`), "Buy milk.\n");
  assert.ok(Deno.statSync(`${home.path}/snapshots/blobs.sqlite.damaged`).isFile);
});

Deno.test("takeSnapshot() by a long-lived root after snapshots/ was removed makes it again, manifest and all", async () => {
  // snapshots/ is the user's to remove; a server's root made it before and does not look again.
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Buy milk.\n");
  await takeSnapshot(root, "run-1", work.path);
  await Deno.remove(`${home.path}/snapshots`, { recursive: true });
  await takeSnapshot(root, "run-2", work.path);
  await using copy = await tempDir();
  await restoreSnapshot(root, manifestOf(root, "run-2"), copy.path);
  assert.equal(await Deno.readTextFile(`${copy.path}/notes.txt`), "Buy milk.\n");
  assert.equal(Deno.statSync(`${home.path}/snapshots/manifests`).mode! & 0o777, 0o700);
});

Deno.test("takeSnapshot() that stores new contents makes no file beside the blob index once it has one", async () => {
  // regression: the index was in WAL mode, so every process that stored contents made
  // blobs.sqlite-wal and -shm and removed them at its close: two files (inodes) a snapshot
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await Deno.writeTextFile(`${work.path}/notes.txt`, "Buy milk.\n");
  await takeSnapshot(root, "run-1", work.path);
  const dir = `${home.path}/snapshots`;
  const names = () => [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
  assert.deepEqual(names(), [
    "blobs.sqlite",
    "blobs.sqlite-journal",
    "cache",
    "manifests",
    "packs",
  ]);
  const journal = Deno.statSync(`${dir}/blobs.sqlite-journal`).ino;
  const before = Deno.statSync(dir).mtime!.getTime();
  for (let i = 2; i <= 4; i++) {
    await Deno.writeTextFile(`${work.path}/notes.txt`, `Buy milk ${i} times.\n`);
    const summary = await takeSnapshot(root, `run-${i}`, work.path);
    assert.ok(summary.storedBytes > 0, "new contents were stored and listed in the index");
  }
  // A name made or removed in snapshots/ would have changed its mtime.
  assert.equal(Deno.statSync(dir).mtime!.getTime(), before, "a file was made or removed");
  assert.deepEqual(names(), [
    "blobs.sqlite",
    "blobs.sqlite-journal",
    "cache",
    "manifests",
    "packs",
  ]);
  assert.equal(Deno.statSync(`${dir}/blobs.sqlite-journal`).ino, journal);
  assert.equal(Deno.statSync(`${dir}/blobs.sqlite-journal`).mode! & 0o777, 0o600);
  // The index still finds what was stored: the same contents again store nothing.
  await Deno.remove(`${dir}/cache`, { recursive: true });
  const again = await takeSnapshot(root, "run-5", work.path);
  assert.equal(again.storedBytes, 0);
});

Deno.test("changedSinceStart() lists the files an agent added, changed and removed", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await project(work.path);
  await takeSnapshot(root, "run-1", work.path);
  await Deno.writeTextFile(`${work.path}/src/main.ts`, "console.log(2);\n");
  await Deno.chmod(`${work.path}/notes.txt`, 0o600);
  await Deno.remove(`${work.path}/src/lib/same.txt`);
  await Deno.writeTextFile(`${work.path}/src/lib/new.ts`, "export {};\n");
  await Deno.writeTextFile(`${work.path}/more.log`, "ignored, as before\n");
  await Deno.remove(`${work.path}/latest`);
  await Deno.symlink("run.sh", `${work.path}/latest`);
  assert.deepEqual(await changedSinceStart(root, "run-1", work.path), {
    added: ["src/lib/new.ts"],
    removed: ["src/lib/same.txt"],
    changed: ["latest", "notes.txt", "src/main.ts"],
  });
  assert.equal(await changedSinceStart(root, "no-such-run", work.path), null);
});

Deno.test("describeSize() says what a snapshot holds as people read sizes", () => {
  assert.equal(describeSize(3, 2048), "3 files, 2 KiB");
  assert.equal(describeSize(1, 1), "1 file, 1 byte");
  assert.equal(describeSize(0, 0), "0 files, 0 bytes");
  assert.equal(describeSize(12, 1536), "12 files, 1.5 KiB");
  assert.equal(describeSize(5000, 50 * 1024 * 1024), "5000 files, 50 MiB");
});

Deno.test("takeSnapshot() reads only the files that changed since the last snapshot of the directory", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  const past = new Date(Date.now() - 60_000);
  for (const name of ["a.txt", "b.txt"]) {
    await Deno.writeTextFile(`${work.path}/${name}`, `${name} content\n`);
    await Deno.utime(`${work.path}/${name}`, past, past);
  }
  // ctime cannot be set back: wait until the files are older than the racy window.
  await new Promise((resolve) => setTimeout(resolve, 2100));
  const first = await takeSnapshot(root, "run-1", work.path);
  assert.equal(first.readBytes, 28);
  const second = await takeSnapshot(root, "run-2", work.path);
  assert.equal(second.readBytes, 0, "unchanged files are taken from the last snapshot");
  assert.deepEqual(manifestOf(root, "run-2").entries, manifestOf(root, "run-1").entries);
  // Same size, and its mtime put back: its ctime still moved, so it is read.
  const before = Deno.statSync(`${work.path}/b.txt`);
  await Deno.writeTextFile(`${work.path}/b.txt`, "b.txt CONTENT\n");
  await Deno.utime(`${work.path}/b.txt`, before.atime!, before.mtime!);
  const third = await takeSnapshot(root, "run-3", work.path);
  assert.equal(third.readBytes, 14);
  const b = manifestOf(root, "run-3").entries.find((entry) => entry.path === "b.txt")!;
  assert.ok(b.type === "file");
  assert.equal(b.sha256, sha("b.txt CONTENT\n"));
});

// regression: the stat cache was read without the data root's trust checks, so a cache file
// anyone could write (or a link to one outside the data root) told the next snapshot what an
// unchanged-looking file held, and the snapshot recorded that instead of the file
Deno.test("takeSnapshot() takes nothing from a stat cache the data root's trust checks refuse", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  await using elsewhere = await tempDir();
  await Deno.writeTextFile(`${work.path}/notes.txt`, "the real notes\n");
  await takeSnapshot(root, "run-1", work.path);
  const cacheDir = `${home.path}/snapshots/cache`;
  const [cacheName] = [...Deno.readDirSync(cacheDir)].map((entry) => entry.name);
  const cacheFile = `${cacheDir}/${cacheName}`;
  // A cache that vouches for notes.txt as it is now (the racy window long past), with a forged
  // content.
  const forged = "f".repeat(64);
  const cache = JSON.parse(Deno.readTextFileSync(cacheFile));
  cache.writtenMs = Date.now() + 3_600_000;
  cache.files["notes.txt"][4] = forged;
  const plant = (path: string, mode: number) => {
    Deno.writeTextFileSync(path, JSON.stringify(cache));
    Deno.chmodSync(path, mode);
  };
  const recorded = async (runId: string) => {
    await takeSnapshot(root, runId, work.path);
    const entry = manifestOf(root, runId).entries.find((e) => e.path === "notes.txt")!;
    assert.ok(entry.type === "file");
    return entry.sha256;
  };
  // The control: one of ours is believed (which is what a cache is for).
  plant(cacheFile, 0o600);
  assert.equal(await recorded("run-2"), forged);
  // Writable by others: refused, the file is read, and the cache is written anew.
  plant(cacheFile, 0o666);
  assert.equal(await recorded("run-3"), sha("the real notes\n"));
  assert.equal(Deno.statSync(cacheFile).mode! & 0o777, 0o600);
  // A link to a cache outside the data root: refused too.
  plant(`${elsewhere.path}/cache.json`, 0o600);
  Deno.removeSync(cacheFile);
  Deno.symlinkSync(`${elsewhere.path}/cache.json`, cacheFile);
  assert.equal(await recorded("run-4"), sha("the real notes\n"));
});

Deno.test("takeSnapshot() reads again a file changed within the racy window of the last snapshot", async () => {
  await using home = await tempDir();
  using root = new DataRoot(home.path);
  await using work = await tempDir();
  const file = `${work.path}/notes.txt`;
  await Deno.writeTextFile(file, "one\n");
  await takeSnapshot(root, "run-1", work.path);
  // Just written: its times are too close to the cache's to vouch for it, even if unchanged.
  assert.equal((await takeSnapshot(root, "run-2", work.path)).readBytes, 4);
  await Deno.writeTextFile(file, "two\n");
  await takeSnapshot(root, "run-3", work.path);
  const [entry] = manifestOf(root, "run-3").entries;
  assert.ok(entry.type === "file");
  assert.equal(entry.sha256, sha("two\n"));
});

// regression: a run whose working directory held the data root (the tests' default, or a run in
// ~) read reins's own index.sqlite, and closing that descriptor dropped the open index
// connection's POSIX locks: the run's later index updates were lost and `reins runs` never saw
// it waiting
Deno.test("takeSnapshot() leaves the data root out of a working directory that holds it", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/.reins`;
  await Deno.mkdir(`${home}/runs/r1`, { recursive: true });
  await Deno.writeTextFile(`${home}/index.sqlite`, "reins's own");
  await Deno.writeTextFile(`${dir.path}/notes.txt`, "Buy milk.\n");
  using root = new DataRoot(home);
  const around = await takeSnapshot(root, "run-1", dir.path);
  const paths = (runId: string) => manifestOf(root, runId).entries.map((entry) => entry.path);
  assert.deepEqual(paths("run-1"), ["notes.txt"]);
  assert.equal(around.leftOut, 1);
  // The data root as the working directory: its own entries are left out, the rest is kept.
  await Deno.writeTextFile(`${home}/script.json`, "[]");
  await takeSnapshot(root, "run-2", home);
  assert.deepEqual(paths("run-2"), ["script.json"]);
});

// regression: the snapshot kept a list of the data root's names of its own, which had gone stale:
// a run started in the data root snapshotted index.pending (the run ids written since the index
// was last read), as it would have any name added to the data root after the list was written
Deno.test("takeSnapshot() of the data root leaves out every name its layout keeps there", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  // Each a directory holding a file, whatever it is in a real data root: one not left out would
  // show in the manifest (and snapshots/ must be a directory for the snapshot to be written).
  for (const name of root.layout.topLevelNames()) {
    await Deno.mkdir(`${dir.path}/${name}`);
    await Deno.writeTextFile(`${dir.path}/${name}/kept`, "reins's own");
  }
  await Deno.writeTextFile(`${dir.path}/notes.txt`, "Buy milk.\n");
  const summary = await takeSnapshot(root, "run-1", dir.path);
  assert.deepEqual(manifestOf(root, "run-1").entries.map((entry) => entry.path), ["notes.txt"]);
  assert.equal(summary.files, 1);
});

Deno.test("regression: a manifest with two entries of one path or a NUL in a path cannot be read, saying where (it crashed the restore)", () => {
  const manifest = {
    type: "reins.snapshot",
    version: 1,
    runId: "r",
    cwd: "/x",
    takenAt: "2026-01-05T14:03:00.000Z",
    state: "taken",
    reason: null,
    files: 0,
    bytes: 0,
    leftOut: 0,
    storedBytes: 0,
    entries: [
      { type: "dir", path: "a", mode: 0o755 },
      { type: "symlink", path: "b", target: "a" },
      { type: "dir", path: "a", mode: 0o700 },
    ],
  };
  const doubled = SnapshotManifestSchema.safeParse(manifest);
  assert.equal(doubled.success, false);
  assert.deepEqual(
    doubled.error!.issues.map((issue) => [issue.path.join("."), issue.message]),
    [["entries.2.path", '"a" is also the path of entries.0']],
  );
  const nul = SnapshotManifestSchema.safeParse({
    ...manifest,
    entries: [{ type: "dir", path: "a\0b", mode: 0o755 }],
  });
  assert.equal(nul.success, false);
  assert.deepEqual(nul.error!.issues.map((issue) => issue.path.join(".")), ["entries.0.path"]);
});
