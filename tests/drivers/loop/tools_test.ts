import assert from "node:assert/strict";
import { createToolbox } from "../../../lib/drivers/loop/tools.ts";
import { withTempDir } from "./_helpers.ts";

const signal = new AbortController().signal;
let callCount = 0;
const call = (name: string, args: unknown) => ({ id: `c${++callCount}`, name, args });

Deno.test("createToolbox() refuses paths with '..' that leave the working directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/work`);
    await Deno.writeTextFile(`${dir}/secret.txt`, "secret");
    const tools = await createToolbox(`${dir}/work`);
    const read = await tools.run(call("read_file", { path: "../secret.txt" }), signal);
    assert.deepEqual(read, {
      ok: false,
      error: 'Cannot use "../secret.txt": it resolves outside the working directory',
    });
    const write = await tools.run(call("write_file", { path: "a/../../x", content: "x" }), signal);
    assert.deepEqual(write.ok, false);
    assert.deepEqual(await exists(`${dir}/x`), false);
    // a '..' that stays inside is fine
    await Deno.writeTextFile(`${dir}/work/in.txt`, "inside");
    const inside = await tools.run(call("read_file", { path: "sub/../in.txt" }), signal);
    assert.deepEqual(inside, { ok: true, result: "inside" });
  });
});

Deno.test("createToolbox() refuses absolute paths outside the working directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/work`);
    const tools = await createToolbox(`${dir}/work`);
    const read = await tools.run(call("read_file", { path: "/etc/hostname" }), signal);
    assert.deepEqual(read, {
      ok: false,
      error: 'Cannot use "/etc/hostname": it resolves outside the working directory',
    });
    const list = await tools.run(call("list_files", { path: dir }), signal);
    assert.deepEqual(list.ok, false);
    // an absolute path inside it is the same file as the relative one
    await Deno.writeTextFile(`${dir}/work/a.txt`, "A");
    const inside = await tools.run(call("read_file", { path: `${dir}/work/a.txt` }), signal);
    assert.deepEqual(inside, { ok: true, result: "A" });
  });
});

Deno.test("createToolbox() refuses symbolic links that lead out of the working directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/work`);
    await Deno.mkdir(`${dir}/outside`);
    await Deno.writeTextFile(`${dir}/outside/secret.txt`, "secret");
    await Deno.symlink(`${dir}/outside/secret.txt`, `${dir}/work/link.txt`);
    await Deno.symlink(`${dir}/outside`, `${dir}/work/out`);
    await Deno.symlink(`${dir}/nowhere.txt`, `${dir}/work/dangling.txt`);
    const tools = await createToolbox(`${dir}/work`);

    const read = await tools.run(call("read_file", { path: "link.txt" }), signal);
    assert.deepEqual(read, {
      ok: false,
      error: 'Cannot use "link.txt": a symbolic link leads outside the working directory',
    });
    const writeThrough = await tools.run(
      call("write_file", { path: "out/new.txt", content: "x" }),
      signal,
    );
    assert.deepEqual(writeThrough.ok, false);
    assert.deepEqual(await exists(`${dir}/outside/new.txt`), false);
    const dangling = await tools.run(
      call("write_file", { path: "dangling.txt", content: "x" }),
      signal,
    );
    assert.deepEqual(dangling, {
      ok: false,
      error: 'Cannot use "dangling.txt": it is a symbolic link to nothing',
    });
    assert.deepEqual(await exists(`${dir}/nowhere.txt`), false);
    const list = await tools.run(call("list_files", { path: "out" }), signal);
    assert.deepEqual(list.ok, false);
  });
});

Deno.test("createToolbox() follows symbolic links that stay inside the working directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/docs`);
    await Deno.writeTextFile(`${dir}/docs/a.md`, "alpha");
    await Deno.symlink(`${dir}/docs`, `${dir}/d`);
    const tools = await createToolbox(dir);
    assert.deepEqual(await tools.run(call("read_file", { path: "d/a.md" }), signal), {
      ok: true,
      result: "alpha",
    });
  });
});

Deno.test("createToolbox() lists, writes and reads files", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir);
    assert.deepEqual(await tools.run(call("list_files", {}), signal), {
      ok: true,
      result: "(empty)",
    });
    const write = await tools.run(
      call("write_file", { path: "notes/today.md", content: "héllo\n" }),
      signal,
    );
    assert.deepEqual(write, { ok: true, result: "Wrote 7 bytes to notes/today.md" });
    await Deno.writeTextFile(`${dir}/b.txt`, "b");
    assert.deepEqual(await tools.run(call("list_files", { path: "." }), signal), {
      ok: true,
      result: "b.txt\nnotes/",
    });
    assert.deepEqual(await tools.run(call("list_files", { recursive: true }), signal), {
      ok: true,
      result: "b.txt\nnotes/\nnotes/today.md",
    });
    assert.deepEqual(await tools.run(call("read_file", { path: "notes/today.md" }), signal), {
      ok: true,
      result: "héllo\n",
    });
    assert.deepEqual(await tools.run(call("read_file", { path: "missing.md" }), signal), {
      ok: false,
      error: 'Cannot read "missing.md": no such file or directory',
    });
  });
});

Deno.test("createToolbox() truncates a read past maxReadBytes and says how long the file was", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/big.txt`, "x".repeat(100));
    const tools = await createToolbox(dir, { maxReadBytes: 10 });
    assert.deepEqual(await tools.run(call("read_file", { path: "big.txt" }), signal), {
      ok: true,
      result: "xxxxxxxxxx\n[… truncated: showing 10 of 100 bytes]",
    });
  });
});

Deno.test("createToolbox() gives the model an error for bad arguments and unknown tools", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir);
    assert.deepEqual(await tools.run(call("read_file", { path: 7 }), signal), {
      ok: false,
      error: "Invalid arguments for read_file: Invalid input: expected string, received number " +
        "at args.path",
    });
    assert.deepEqual(
      await tools.run(call("read_file", '{"path": "a.txt"'), signal).then((r) => r.ok),
      false,
    );
    const unknown = await tools.run(call("delete_everything", {}), signal);
    assert.deepEqual(unknown, {
      ok: false,
      error: 'Unknown tool "delete_everything": the tools are list_files, read_file, ' +
        "write_file, run_command",
    });
    // arguments sent as JSON text are taken
    await Deno.writeTextFile(`${dir}/a.txt`, "A");
    assert.deepEqual(await tools.run(call("read_file", '{"path":"a.txt"}'), signal), {
      ok: true,
      result: "A",
    });
  });
});

Deno.test("createToolbox() describes each tool with a JSON schema of its arguments", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir);
    assert.deepEqual(tools.specs.map((spec) => spec.name), [
      "list_files",
      "read_file",
      "write_file",
      "run_command",
    ]);
    const write = tools.specs.find((spec) => spec.name === "write_file")!;
    assert.deepEqual(write.parameters.type, "object");
    assert.deepEqual(write.parameters.required, ["path", "content"]);
    assert.ok(!("$schema" in write.parameters));
  });
});

Deno.test("createToolbox() runs commands in the working directory and returns their output", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir, { env: { REINS_TEST_VALUE: "v1" } });
    const result = await tools.run(
      call("run_command", { command: 'pwd; echo "$REINS_TEST_VALUE"; echo oops >&2' }),
      signal,
    );
    assert.deepEqual(result, {
      ok: true,
      result: { exitCode: 0, stdout: `${dir}\nv1\n`, stderr: "oops\n" },
    });
    const failing = await tools.run(call("run_command", { command: "echo no; exit 3" }), signal);
    assert.deepEqual(failing, {
      ok: false,
      error: "The command exited with code 3",
      result: { exitCode: 3, stdout: "no\n", stderr: "" },
    });
  });
});

Deno.test("createToolbox() stops a command at its timeout", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir, { commandTimeoutMs: 200 });
    const started = Date.now();
    const result = await tools.run(call("run_command", { command: "sleep 5" }), signal);
    assert.ok(Date.now() - started < 3_000, "the command was not stopped");
    assert.deepEqual(result.ok, false);
    assert.deepEqual(!result.ok && result.error, "The command timed out after 0.2 s");
  });
});

Deno.test("createToolbox() caps a command's output, keeping its head and tail", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir, { maxCommandOutputBytes: 20 });
    const result = await tools.run(
      call("run_command", { command: "printf 'aaaaaaaaaa%.0s' 1 2 3 4 5; printf zzzzzzzzzz" }),
      signal,
    );
    assert.ok(result.ok);
    const { stdout } = result.result as { stdout: string };
    assert.deepEqual(stdout, "aaaaaaaaaa\n[… 40 bytes omitted …]\nzzzzzzzzzz");
  });
});

Deno.test("createToolbox() kills a command when the signal aborts", async () => {
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const result = await tools.run(call("run_command", { command: "sleep 10" }), controller.signal);
    assert.ok(Date.now() - started < 3_000, "the command outlived the abort");
    assert.deepEqual(result.ok, false);
    assert.match(!result.ok ? result.error : "", /killed by SIGTERM/);
  });
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("createToolbox() stops the processes a command started, not only its shell", async () => {
  // regression: killing `sh -c` alone left `sleep` running, holding the pipes open
  await withTempDir(async (dir) => {
    const tools = await createToolbox(dir, { commandTimeoutMs: 200 });
    const marker = `reins-test-${crypto.randomUUID()}`;
    const result = await tools.run(
      call("run_command", { command: `sh -c 'sleep 7; echo ${marker}' && echo after` }),
      signal,
    );
    assert.equal(result.ok, false);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ps = await new Deno.Command("ps", { args: ["-eo", "args"] }).output();
    const running = new TextDecoder().decode(ps.stdout).split("\n").filter((line) =>
      line.includes(marker)
    );
    assert.deepEqual(running, []);
  });
});

Deno.test("createToolbox() lists at most maxListEntries, first by name, and counts the rest", async () => {
  await withTempDir(async (dir) => {
    for (let i = 29; i >= 0; i--) {
      await Deno.writeTextFile(`${dir}/f${String(i).padStart(2, "0")}`, "");
    }
    const tools = await createToolbox(dir, { maxListEntries: 5 });
    assert.deepEqual(await tools.run(call("list_files", {}), signal), {
      ok: true,
      result: "f00\nf01\nf02\nf03\nf04\n[… 25 more entries not shown]",
    });
  });
});

Deno.test("createToolbox() enters no directory once list_files has shown its limit", async () => {
  // regression: a recursive listing walked the whole tree (a million files held in memory and
  // read one by one) to show its first thousand entries
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/a`);
    await Deno.mkdir(`${dir}/z/deep`, { recursive: true });
    for (const name of ["1", "2", "3"]) await Deno.writeTextFile(`${dir}/a/${name}`, "");
    for (let i = 0; i < 50; i++) await Deno.writeTextFile(`${dir}/z/deep/${i}`, "");
    await Deno.writeTextFile(`${dir}/b.txt`, "");
    const tools = await createToolbox(dir, { maxListEntries: 4 });
    assert.deepEqual(await tools.run(call("list_files", { recursive: true }), signal), {
      ok: true,
      result: "a/\na/1\na/2\na/3\n" +
        "[… at least 2 more entries not shown (directories past the limit were not read)]",
    });
    // a directory left out of a directory's first entries is not read either, and says so
    await Deno.writeTextFile(`${dir}/0.txt`, "");
    const two = await createToolbox(dir, { maxListEntries: 2 });
    assert.deepEqual(await two.run(call("list_files", { path: "a", recursive: true }), signal), {
      ok: true,
      result: "1\n2\n[… 1 more entries not shown]",
    });
    assert.deepEqual(await two.run(call("list_files", { recursive: true }), signal), {
      ok: true,
      result: "0.txt\na/\n" +
        "[… at least 5 more entries not shown (directories past the limit were not read)]",
    });
    // within the limit the whole tree is shown, as before
    const all = await createToolbox(dir, { maxListEntries: 100 });
    const listed = await all.run(call("list_files", { path: "z", recursive: true }), signal);
    assert.equal(listed.ok && (listed.result as string).split("\n").length, 51);
  });
});
