// Outbox: the one outbox module the platform's reports and the OpenTelemetry exports are kept in,
// here with an entry schema of its own in a folder of its own, on real files.
import assert from "node:assert/strict";
import { z } from "zod";
import { newId } from "../../lib/core/ids.ts";
import { UntrustedFileError } from "../../lib/core/trust.ts";
import { DataRoot } from "../../lib/store/data_root.ts";
import { Outbox } from "../../lib/store/outbox.ts";
import { tempDir } from "../support/reins.ts";

const Note = z.object({ id: z.string(), updatedAt: z.string(), text: z.string().min(1) });
type Note = z.infer<typeof Note>;

const notes = new Outbox<Note>({
  place: {
    folder: (layout) => `${layout.outbox()}/notes`,
    entry: (layout, id) => `${layout.outbox()}/notes/${id}.json`,
    lock: (layout, id) => `${layout.outbox()}/notes/${id}.lock`,
  },
  schema: Note,
});

Deno.test("Outbox.write() keeps an entry 0600 in its folder, and read() gives it back checked", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const note: Note = { id: newId(), updatedAt: "", text: "hello" };
  notes.write(root, note);
  const path = `${dir.path}/outbox/notes/${note.id}.json`;
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  assert.equal(Deno.statSync(`${dir.path}/outbox/notes`).mode! & 0o777, 0o700);
  assert.notEqual(note.updatedAt, "", "updatedAt is stamped");
  assert.equal(Deno.readTextFileSync(path), `${JSON.stringify(note)}\n`);
  assert.deepEqual(notes.read(root, note.id), { ok: true, entry: note });
  assert.equal(notes.read(root, newId()), null, "a missing entry is null");
});

Deno.test("Outbox.read() says why an entry cannot be used, and refuses one others may write", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const id = newId();
  notes.write(root, { id, updatedAt: "", text: "x" });
  const path = `${dir.path}/outbox/notes/${id}.json`;
  Deno.writeTextFileSync(path, "{");
  const torn = notes.read(root, id);
  assert.ok(
    torn !== null && !torn.ok && /^it is not JSON: /.test(torn.reason),
    JSON.stringify(torn),
  );
  Deno.writeTextFileSync(path, JSON.stringify({ id, updatedAt: "now", text: "" }));
  const wrong = notes.read(root, id);
  assert.ok(wrong !== null && !wrong.ok && / at text$/.test(wrong.reason), JSON.stringify(wrong));
  Deno.chmodSync(path, 0o666);
  assert.throws(() => notes.read(root, id), UntrustedFileError);
  assert.throws(() => notes.read(root, "../x"), RangeError);
});

Deno.test("Outbox.ids() lists entries oldest first, leaving out lock, temp and foreign files", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  assert.deepEqual(notes.ids(root), [], "no folder yet: no entries");
  const ids = [newId(), newId(), newId()];
  for (const id of [ids[2], ids[0], ids[1]]) notes.write(root, { id, updatedAt: "", text: "x" });
  using _held = notes.lock(root, ids[0])!;
  Deno.writeTextFileSync(`${dir.path}/outbox/notes/.${ids[1]}.json.1.a.tmp`, "");
  Deno.writeTextFileSync(`${dir.path}/outbox/notes/not a name.json`, "{}");
  Deno.mkdirSync(`${dir.path}/outbox/notes/folder.json`);
  assert.deepEqual(notes.ids(root), ids);
});

Deno.test("Outbox.lock() is held by one taker at a time; remove() takes the entry and its lock file", async () => {
  await using dir = await tempDir();
  using root = new DataRoot(dir.path);
  const id = newId();
  notes.write(root, { id, updatedAt: "", text: "x" });
  const held = notes.lock(root, id);
  assert.ok(held !== null);
  assert.equal(notes.lock(root, id), null, "another taker waits for nothing");
  held[Symbol.dispose]();
  using again = notes.lock(root, id);
  assert.ok(again !== null, "free again once released");
  notes.remove(root, id);
  assert.deepEqual([...Deno.readDirSync(`${dir.path}/outbox/notes`)], []);
  notes.remove(root, id);
});
