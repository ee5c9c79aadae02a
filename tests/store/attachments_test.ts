// attachFile(): a run's copy of a file, private and hashed, ready for an attachment.added event,
// and the content type it is recorded with.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { attachFile, contentTypeFor } from "../../lib/store/attachments.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { NotFoundError, UsageError } from "../../lib/core/errors.ts";
import { PAYLOADS } from "../../lib/store/contracts.ts";
import { tempDir } from "../support/reins.ts";

const RUN = "01940000-0000-7000-8000-000000000001";

Deno.test("attachFile() copies the file 0600 into the run's attachments and hashes it", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using root = new DataRoot(home);
  const source = `${dir.path}/call.wav`;
  const bytes = new Uint8Array(3_000_000).map((_, i) => i % 251);
  await Deno.writeFile(source, bytes, { mode: 0o644 });
  const payload = await attachFile(root, RUN, source);
  assert.deepEqual(payload, {
    name: "call.wav",
    path: "attachments/call.wav",
    contentType: "audio/wav",
    bytes: 3_000_000,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  });
  PAYLOADS["attachment.added"].parse(payload);
  const copy = `${home}/runs/${RUN}/attachments/call.wav`;
  assert.deepEqual(await Deno.readFile(copy), bytes);
  assert.deepEqual((await Deno.stat(copy)).mode! & 0o777, 0o600);
  assert.deepEqual((await Deno.stat(`${home}/runs/${RUN}/attachments`)).mode! & 0o777, 0o700);
  assert.deepEqual([...Deno.readDirSync(`${home}/runs/${RUN}/attachments`)].length, 1);
});

Deno.test("attachFile() numbers a second file of the same name and never overwrites", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using root = new DataRoot(home);
  await Deno.writeTextFile(`${dir.path}/a.json`, "1");
  const first = await attachFile(root, RUN, `${dir.path}/a.json`);
  await Deno.writeTextFile(`${dir.path}/a.json`, "22");
  const second = await attachFile(root, RUN, `${dir.path}/a.json`);
  assert.deepEqual([first.path, second.path], ["attachments/a.json", "attachments/a-2.json"]);
  assert.deepEqual(second.name, "a.json");
  assert.deepEqual(await Deno.readTextFile(`${home}/runs/${RUN}/attachments/a.json`), "1");
});

Deno.test("attachFile() stores an unsafe name under a safe one and keeps the name for the platform", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using root = new DataRoot(home);
  const name = '..rec "1"\nnaïve.wav';
  await Deno.writeTextFile(`${dir.path}/${name}`, "x");
  const payload = await attachFile(root, RUN, `${dir.path}/${name}`);
  assert.deepEqual(payload.name, name);
  assert.deepEqual(payload.path, "attachments/rec_1_naive.wav");
});

Deno.test("attachFile() refuses a missing file, a directory and an unsafe run id", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  using root = new DataRoot(home);
  await assert.rejects(() => attachFile(root, RUN, `${dir.path}/nope.wav`), NotFoundError);
  await assert.rejects(() => attachFile(root, RUN, dir.path), UsageError);
  await Deno.writeTextFile(`${dir.path}/a.wav`, "x");
  await assert.rejects(() => attachFile(root, "../escape", `${dir.path}/a.wav`), UsageError);
});

Deno.test("contentTypeFor() maps recording extensions and defaults to octet-stream", () => {
  const cases: [string, string][] = [
    ["call.wav", "audio/wav"],
    ["CALL.MP3", "audio/mpeg"],
    ["a.ogg", "audio/ogg"],
    ["a.webm", "audio/webm"],
    ["a.m4a", "audio/mp4"],
    ["a.flac", "audio/flac"],
    ["events.json", "application/json"],
    ["events.jsonl", "application/jsonl"],
    ["notes.txt", "application/octet-stream"],
    ["noext", "application/octet-stream"],
  ];
  for (const [name, type] of cases) assert.deepEqual(contentTypeFor(name), type, name);
});
