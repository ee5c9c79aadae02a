import assert from "node:assert/strict";
import { createToolbox } from "../../../lib/drivers/loop/tools.ts";
import { looksBinary, readHead, utf8CutPoint } from "../../../lib/drivers/loop/read_head.ts";
import { withTempDir } from "./_helpers.ts";

const signal = new AbortController().signal;
let callCount = 0;
const read = (path: string) => ({ id: `r${++callCount}`, name: "read_file", args: { path } });

Deno.test("readHead() reads a file of exactly the limit whole and cuts one a byte longer", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/ten.txt`, "0123456789");
    await Deno.writeTextFile(`${dir}/eleven.txt`, "0123456789a");
    await Deno.writeTextFile(`${dir}/empty.txt`, "");
    const ten = await readHead(`${dir}/ten.txt`, 10);
    assert.deepEqual({ text: new TextDecoder().decode(ten.bytes), size: ten.size, cut: ten.cut }, {
      text: "0123456789",
      size: 10,
      cut: false,
    });
    const eleven = await readHead(`${dir}/eleven.txt`, 10);
    assert.deepEqual(
      { text: new TextDecoder().decode(eleven.bytes), size: eleven.size, cut: eleven.cut },
      { text: "0123456789", size: 11, cut: true },
    );
    const empty = await readHead(`${dir}/empty.txt`, 10);
    assert.deepEqual({ length: empty.bytes.length, size: empty.size, cut: empty.cut }, {
      length: 0,
      size: 0,
      cut: false,
    });
  });
});

Deno.test("readHead() keeps at most the limit of a file far longer than it", async () => {
  await withTempDir(async (dir) => {
    // A sparse file of 1 GiB whose first 1 MiB is text: nothing past the limit is read.
    const file = await Deno.open(`${dir}/huge.log`, { write: true, create: true });
    await file.write(new TextEncoder().encode("line of text\n".repeat(80_000)));
    await file.truncate(1024 ** 3);
    file.close();
    const head = await readHead(`${dir}/huge.log`, 64 * 1024);
    assert.deepEqual({ length: head.bytes.length, size: head.size, cut: head.cut }, {
      length: 64 * 1024,
      size: 1024 ** 3,
      cut: true,
    });
    // The buffer read into is the limit and one byte, not the file's size.
    assert.equal(head.bytes.buffer.byteLength, 64 * 1024 + 1);
  });
});

Deno.test("utf8CutPoint() never splits a character", () => {
  const bytes = new TextEncoder().encode("aé€😀b"); // 1 + 2 + 3 + 4 + 1 bytes
  const cuts = Array.from({ length: bytes.length + 1 }, (_, end) => utf8CutPoint(bytes, end));
  assert.deepEqual(cuts, [0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11]);
  // bytes that are not UTF-8 (a run of continuation bytes) are cut where asked
  assert.equal(utf8CutPoint(new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80]), 4), 4);
});

Deno.test("looksBinary() is a NUL byte in the first 8000 bytes", () => {
  assert.equal(looksBinary(new TextEncoder().encode("plain text\n")), false);
  assert.equal(looksBinary(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00])), true);
  const late = new Uint8Array(9000).fill(0x61);
  late[8500] = 0;
  assert.equal(looksBinary(late), false);
});

Deno.test("read_file cuts a long file between characters and says it was cut", async () => {
  // regression: the cut fell inside a character, which reached the model as U+FFFD
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/accents.txt`, "é".repeat(10)); // 20 bytes
    const tools = await createToolbox(dir, { maxReadBytes: 7 });
    assert.deepEqual(await tools.run(read("accents.txt"), signal), {
      ok: true,
      result: "ééé\n[… truncated: showing 6 of 20 bytes]",
    });
  });
});

Deno.test("read_file refuses a FIFO at once instead of waiting for a writer", async () => {
  // regression: read_file opened a FIFO of the working directory and waited for ever
  await withTempDir(async (dir) => {
    const made = await new Deno.Command("mkfifo", { args: [`${dir}/pipe`] }).output();
    assert.equal(made.success, true, "mkfifo failed");
    const tools = await createToolbox(dir);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((resolve) => {
      timer = setTimeout(() => resolve("hung"), 5_000);
    });
    const outcome = await Promise.race([tools.run(read("pipe"), signal), hung]);
    clearTimeout(timer);
    if (outcome === "hung") {
      // Let the stuck open go (a writer comes and leaves) so the test ends, failing.
      const writer = await Deno.open(`${dir}/pipe`, { write: true });
      writer.close();
    }
    assert.deepEqual(outcome, {
      ok: false,
      error: 'Cannot read "pipe": it is not a regular file (a FIFO, a socket or a device)',
    });
  });
});

Deno.test("read_file refuses a binary file, saying its size", async () => {
  // regression: a binary file reached the model as text full of NUL and replacement characters
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/app.bin`, new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2]));
    const tools = await createToolbox(dir);
    assert.deepEqual(await tools.run(read("app.bin"), signal), {
      ok: false,
      error: 'Cannot read "app.bin": it is a binary file (8 bytes, a NUL byte near its start); ' +
        "read_file shows text files",
    });
    // a directory is refused as before
    await Deno.mkdir(`${dir}/sub`);
    assert.deepEqual(await tools.run(read("sub"), signal), {
      ok: false,
      error: 'Cannot read "sub": it is a directory',
    });
  });
});

Deno.test("read_file of a 1 GiB file keeps the reading process's peak memory far below the file", async () => {
  // regression: read_file read the whole file and then cut it (a 2 GiB file cost 4.3 GB); the
  // reading runs in a child of its own so that its peak resident size (VmHWM) is its own. The
  // bound (300 MB, the issue's) is a third of the file: no timing, nothing near the edge.
  await withTempDir(async (dir) => {
    const file = await Deno.open(`${dir}/huge.log`, { write: true, create: true });
    await file.write(new TextEncoder().encode("line of text\n".repeat(80_000)));
    await file.truncate(1024 ** 3);
    file.close();
    const tools = new URL("../../../lib/drivers/loop/tools.ts", import.meta.url).href;
    const script = `
      const { createToolbox } = await import(${JSON.stringify(tools)});
      const box = await createToolbox(${JSON.stringify(dir)});
      const out = await box.run({ id: "c", name: "read_file", args: { path: "huge.log" } },
        new AbortController().signal);
      const status = await Deno.readTextFile("/proc/self/status");
      console.log(JSON.stringify({ out, peakKiB: Number(/^VmHWM:\\s+(\\d+) kB$/m.exec(status)[1]) }));
    `;
    const config = new URL("../../../deno.json", import.meta.url).pathname;
    const child = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--config", config, script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(child.success, true, new TextDecoder().decode(child.stderr));
    const { out, peakKiB } = JSON.parse(new TextDecoder().decode(child.stdout));
    assert.equal(out.ok, true);
    assert.match(out.result, /\n\[… truncated: showing 65536 of 1073741824 bytes\]$/);
    assert.ok(peakKiB < 300 * 1024, `peak ${peakKiB} KiB`);
  });
});
