import assert from "node:assert/strict";
import { OpenLogs, PrivateLog } from "../../lib/core/private_log.ts";
import { tempDir } from "../support/reins.ts";
import { appendLine } from "../fixtures/private_files_child.ts";
import { appendPrivateLine, child, mode } from "./_private_files.ts";

Deno.test("PrivateLog.open() tightens an existing 0644 log", async () => {
  await using dir = await tempDir();
  Deno.writeTextFileSync(`${dir.path}/log.jsonl`, "a\n");
  Deno.chmodSync(`${dir.path}/log.jsonl`, 0o644);
  appendPrivateLine(dir.path, `${dir.path}/log.jsonl`, "b");
  assert.equal(mode(`${dir.path}/log.jsonl`), 0o600);
  assert.equal(Deno.readTextFileSync(`${dir.path}/log.jsonl`), "a\nb\n");
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
