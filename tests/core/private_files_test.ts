import assert from "node:assert/strict";
import {
  CheckedDirs,
  ensurePrivateDir,
  OpenLogs,
  PrivateLog,
  readPrivateText,
  trustProblem,
  UntrustedFileError,
  writePrivateFileAtomic,
} from "../../lib/core/private_files.ts";
import { DataRootError } from "../../lib/core/errors.ts";
import { tempDir } from "../support/reins.ts";
import { appendLine, versionContent } from "../fixtures/private_files_child.ts";

const CHILD = new URL("../fixtures/private_files_child.ts", import.meta.url).pathname;

/** One line through a fresh OpenLogs, as a process that appends once would. */
function appendPrivateLine(root: string, path: string, line: string): void {
  using logs = new OpenLogs(root);
  logs.append(path, line);
}

function mode(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

async function child(args: string[], umask = "022"): Promise<void> {
  const script = `umask ${umask}; exec "$0" run -A --quiet "$@"`;
  const out = await new Deno.Command("sh", {
    args: ["-c", script, Deno.execPath(), CHILD, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}

for (const umask of ["000", "022", "077"]) {
  Deno.test(`ensurePrivateDir() and the writers make 0700 dirs and 0600 files under umask ${umask}`, async () => {
    await using dir = await tempDir();
    const root = `${dir.path}/home`;
    await child(["make", root], umask);
    for (const path of [root, `${root}/a`, `${root}/a/b`]) assert.equal(mode(path), 0o700, path);
    for (const path of [`${root}/a/b/record.json`, `${root}/a/log.jsonl`]) {
      assert.equal(mode(path), 0o600, path);
    }
  });
}

Deno.test("writePrivateFileAtomic() tightens a 0644 file and its 0755 dir inside the root on the first write", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  Deno.mkdirSync(`${root}/runs`, { mode: 0o755 });
  Deno.chmodSync(`${root}/runs`, 0o755);
  Deno.writeTextFileSync(`${root}/runs/run.json`, "old");
  Deno.chmodSync(`${root}/runs/run.json`, 0o644);
  writePrivateFileAtomic(root, `${root}/runs/run.json`, "new");
  assert.equal(mode(`${root}/runs`), 0o700);
  assert.equal(mode(`${root}/runs/run.json`), 0o600);
  assert.equal(Deno.readTextFileSync(`${root}/runs/run.json`), "new");
});

Deno.test("PrivateLog.open() tightens an existing 0644 log", async () => {
  await using dir = await tempDir();
  Deno.writeTextFileSync(`${dir.path}/log.jsonl`, "a\n");
  Deno.chmodSync(`${dir.path}/log.jsonl`, 0o644);
  appendPrivateLine(dir.path, `${dir.path}/log.jsonl`, "b");
  assert.equal(mode(`${dir.path}/log.jsonl`), 0o600);
  assert.equal(Deno.readTextFileSync(`${dir.path}/log.jsonl`), "a\nb\n");
});

Deno.test("ensurePrivateDir() refuses a symlinked directory that points outside the root and writes nothing there", async () => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  const root = `${dir.path}/home`;
  ensurePrivateDir(root, root);
  Deno.symlinkSync(outside.path, `${root}/runs`);
  assert.throws(
    () => writePrivateFileAtomic(root, `${root}/runs/x/run.json`, "{}"),
    (error: unknown) =>
      error instanceof DataRootError && /points outside the data root/.test(error.message),
  );
  assert.throws(() => appendPrivateLine(root, `${root}/runs/events.jsonl`, "{}"), DataRootError);
  assert.deepEqual([...Deno.readDirSync(outside.path)], []);
});

Deno.test("writePrivateFileAtomic() refuses a symlinked file that points outside the root", async () => {
  await using dir = await tempDir();
  await using outside = await tempDir();
  Deno.writeTextFileSync(`${outside.path}/secret`, "keep");
  Deno.symlinkSync(`${outside.path}/secret`, `${dir.path}/run.json`);
  assert.throws(() => writePrivateFileAtomic(dir.path, `${dir.path}/run.json`, "x"), DataRootError);
  assert.throws(() => appendPrivateLine(dir.path, `${dir.path}/run.json`, "x"), DataRootError);
  assert.equal(Deno.readTextFileSync(`${outside.path}/secret`), "keep");
});

Deno.test("ensurePrivateDir() follows a link that stays inside the root", async () => {
  await using dir = await tempDir();
  Deno.mkdirSync(`${dir.path}/real`);
  Deno.symlinkSync(`${dir.path}/real`, `${dir.path}/alias`);
  writePrivateFileAtomic(dir.path, `${dir.path}/alias/f`, "ok");
  assert.equal(Deno.readTextFileSync(`${dir.path}/real/f`), "ok");
});

function currentVersion(file: string): number {
  try {
    return (JSON.parse(Deno.readTextFileSync(file)) as { version: number }).version;
  } catch {
    return -1;
  }
}

// regression: this test once failed under load with "18 !== 20": each child was given only the
// versions left up to 1,000, so a child the (starved) test process was slow to kill finished its
// work and exited before the kill. Now a child under fire always has more to write than it can
// finish, every kill must be the SIGKILL that ended its child, and a last child, never killed,
// writes the rest.
Deno.test("writePrivateFileAtomic() leaves a parseable committed version after 20 SIGKILLs mid-rewrite, then completes 1,000 versions", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  const file = `${root}/state/record.json`;
  const spawnRewriter = (from: number, count: number) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", CHILD, "rewrite", root, file, String(from), String(count)],
      stdout: "null",
      stderr: "null",
    }).spawn();
  const committed = () => {
    const text = Deno.readTextFileSync(file);
    const value = JSON.parse(text) as { version: number };
    assert.equal(text, versionContent(value.version), "the file equals one committed version");
    return value.version;
  };
  let next = 0;
  for (let kill = 1; kill <= 20; kill++) {
    // Far more versions than it can write before it is killed, however slow this process is.
    const proc = spawnRewriter(next, 1_000_000);
    // Kill once this child is busy rewriting (it has committed a version past `next`), at a
    // random moment of its writing, so kills land mid-write rather than during start-up.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && currentVersion(file) < next) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, Math.random() * 40));
    proc.kill("SIGKILL");
    const status = await proc.status;
    assert.equal(status.signal, "SIGKILL", `kill ${kill} ended its child`);
    next = committed() + 1;
  }
  const last = Math.max(next + 1, 1000);
  const status = await spawnRewriter(next, last - next).status;
  assert.ok(status.success, "the last child, never killed, finishes");
  assert.equal(committed(), last - 1);
  const leftovers = [...Deno.readDirSync(`${root}/state`)].map((e) => e.name).filter((n) =>
    n.endsWith(".tmp")
  );
  assert.deepEqual(leftovers, []);
});

Deno.test("ensurePrivateDir() with a CheckedDirs set looks at a directory once; without one, every time", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  const checked = new CheckedDirs();
  ensurePrivateDir(root, `${root}/a`, checked);
  Deno.chmodSync(`${root}/a`, 0o755);
  assert.deepEqual(ensurePrivateDir(root, `${root}/a`, checked), []);
  assert.equal(mode(`${root}/a`), 0o755, "remembered as checked: not looked at again");
  assert.deepEqual(ensurePrivateDir(root, `${root}/a`), [`${root}/a`]);
  assert.equal(mode(`${root}/a`), 0o700);
});

Deno.test("OpenLogs keeps one handle per path and reopens a log replaced behind its back", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/log.jsonl`;
  using logs = new OpenLogs(dir.path);
  logs.append(file, "one");
  Deno.removeSync(file);
  // The handle is checked against the path at most every 250 ms.
  await new Promise((resolve) => setTimeout(resolve, 300));
  logs.append(file, "two");
  assert.equal(Deno.readTextFileSync(file), "two\n");
});

Deno.test("OpenLogs from 8 processes × 2,000 lines up to 64 KiB gives 16,000 intact lines", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/log.jsonl`;
  await Promise.all(
    Array.from(
      { length: 8 },
      (_, worker) => child(["append", dir.path, file, String(worker), "2000"]),
    ),
  );
  const lines = Deno.readTextFileSync(file).split("\n");
  assert.equal(lines.pop(), "", "the file ends with a newline");
  assert.equal(lines.length, 16_000);
  const seen = new Set<string>();
  for (const line of lines) {
    const [worker, index] = line.split(":").map(Number);
    assert.equal(line, appendLine(worker, index), "each line is intact");
    seen.add(`${worker}:${index}`);
  }
  assert.equal(seen.size, 16_000);
});

Deno.test("PrivateLog.append() repairs a torn tail first and keeps its bytes in a .torn file", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/events.jsonl`;
  Deno.writeTextFileSync(file, '{"a":1}\n{"b":');
  appendPrivateLine(dir.path, file, '{"c":3}');
  assert.equal(Deno.readTextFileSync(file), '{"a":1}\n{"c":3}\n');
  assert.equal(Deno.readTextFileSync(`${file}.torn`), '{"b":\n');
  assert.equal(mode(`${file}.torn`), 0o600);
});

Deno.test("PrivateLog.appendWith() sees lines other writers appended since its last append", async () => {
  await using dir = await tempDir();
  const file = `${dir.path}/events.jsonl`;
  using ours = PrivateLog.open(dir.path, file);
  ours.append("one");
  appendPrivateLine(dir.path, file, "two");
  let seen = "";
  ours.appendWith((tail) => {
    seen = new TextDecoder().decode(tail.read(tail.knownSize, tail.size));
    return "three";
  });
  assert.equal(seen, "two\n");
  assert.equal(Deno.readTextFileSync(file), "one\ntwo\nthree\n");
});

Deno.test("readPrivateText() refuses a file others may write, or one in a directory they may write", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  writePrivateFileAtomic(root, `${root}/a/file.json`, "{}");
  assert.equal(readPrivateText(root, `${root}/a/file.json`), "{}");
  Deno.chmodSync(`${root}/a/file.json`, 0o620);
  assert.throws(
    () => readPrivateText(root, `${root}/a/file.json`),
    (error: unknown) =>
      error instanceof UntrustedFileError &&
      error.reason === "it is writable by its group (mode 0620)",
  );
  Deno.chmodSync(`${root}/a/file.json`, 0o600);
  Deno.chmodSync(`${root}/a`, 0o703);
  assert.equal(
    trustProblem(root, `${root}/a/file.json`),
    `its directory ${root}/a is writable by others (mode 0703)`,
  );
  assert.throws(() => PrivateLog.open(root, `${root}/a/file.json`), UntrustedFileError);
  // Writing replaces the file with one of ours and tightens the directory: then it is trusted.
  writePrivateFileAtomic(root, `${root}/a/file.json`, "[]");
  assert.equal(readPrivateText(root, `${root}/a/file.json`), "[]");
  assert.equal(trustProblem(root, `${root}/missing.json`), null);
});

// regression: the directories found trustworthy were remembered by the module, for every data
// root and every Store of the process alike, until a test called forgetCheckedDirs()
Deno.test("trustProblem() remembers trusted directories in the CheckedDirs it is given, and only there", async () => {
  await using dir = await tempDir();
  const root = dir.path;
  writePrivateFileAtomic(root, `${root}/a/file.json`, "{}");
  const checked = new CheckedDirs();
  assert.equal(trustProblem(root, `${root}/a/file.json`, checked), null);
  assert.ok(checked.trusted.has(`${root}/a`) && checked.trusted.has(root));
  Deno.chmodSync(`${root}/a`, 0o703);
  assert.equal(trustProblem(root, `${root}/a/file.json`, checked), null, "remembered as trusted");
  const widened = `its directory ${root}/a is writable by others (mode 0703)`;
  assert.equal(trustProblem(root, `${root}/a/file.json`, new CheckedDirs()), widened);
  assert.equal(trustProblem(root, `${root}/a/file.json`), widened);
  assert.throws(() => readPrivateText(root, `${root}/a/file.json`), UntrustedFileError);
});

Deno.test({
  name: "ensurePrivateDir() refuses a directory another user owns instead of tightening it",
  ignore: Deno.uid() !== 0,
  async fn() {
    await using dir = await tempDir();
    Deno.mkdirSync(`${dir.path}/theirs`);
    Deno.chmodSync(`${dir.path}/theirs`, 0o777);
    Deno.chownSync(`${dir.path}/theirs`, 65534, 65534);
    assert.throws(
      () => ensurePrivateDir(dir.path, `${dir.path}/theirs/x`),
      (error: unknown) =>
        error instanceof UntrustedFileError && /owned by uid 65534/.test(error.reason),
    );
    assert.equal(Deno.statSync(`${dir.path}/theirs`).mode! & 0o777, 0o777);
  },
});
