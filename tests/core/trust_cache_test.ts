// What the data root remembers having checked (lib/core/trust.ts, CheckedDirs): a cache, bounded,
// so a long-lived process (a server, a long suite) does not keep every run's and every context's
// directory it ever made.
import assert from "node:assert/strict";
import { RecentPaths } from "../../lib/core/trust.ts";
import { tempDir } from "../support/reins.ts";

Deno.test("RecentPaths keeps the most recently used paths, at most its bound", () => {
  const paths = new RecentPaths(3);
  for (const path of ["/a", "/b", "/c"]) paths.add(path);
  assert.ok(paths.has("/a"), "a hit makes /a the newest");
  paths.add("/d");
  assert.equal(paths.size, 3);
  assert.ok(!paths.has("/b"), "the least recently used goes first");
  assert.ok(paths.has("/a") && paths.has("/c") && paths.has("/d"));
  paths.add("/c");
  assert.equal(paths.size, 3, "adding one it has does not grow it");
  assert.ok(paths.delete("/c"));
  assert.ok(!paths.has("/c"));
  assert.equal(paths.size, 2);
});

// regression: every directory a DataRoot made went into a Set for the life of the process
// (~250 B a context: a server grew by each conversation it ever had)
Deno.test("a data root that makes 20,000 directories does not keep them all in memory", async () => {
  await using dir = await tempDir();
  const dataRoot = new URL("../../lib/store/data_root.ts", import.meta.url).href;
  const script = `
    import { DataRoot } from ${JSON.stringify(dataRoot)};
    const root = new DataRoot(${JSON.stringify(`${dir.path}/home`)});
    const contexts = root.layout.contexts();
    root.ensureDir(contexts);
    const heap = async () => {
      for (let i = 0; i < 3; i++) {
        (globalThis as unknown as { gc(): void }).gc();
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      return Deno.memoryUsage().heapUsed;
    };
    for (let i = 0; i < 2000; i++) if (!root.makeDir(contexts + "/warm-" + i)) throw new Error("not made");
    const before = await heap();
    for (let i = 0; i < 20000; i++) if (!root.makeDir(contexts + "/context-" + i)) throw new Error("not made");
    const grown = Math.round((await heap() - before) / 1024);
    // The root in use after the read, or its whole memory would be collected before it.
    root.ensureDir(contexts);
    console.log(grown);
    Deno.exit(0);
  `;
  await Deno.writeTextFile(`${dir.path}/make.ts`, script);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", `${dir.path}/make.ts`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const grownKiB = Number(new TextDecoder().decode(output.stdout).trim());
  assert.ok(grownKiB < 1024, `20,000 directories made kept ${grownKiB} KiB`);
});
