// A scenario's copy of its workdir: files, directories with their modes, and links kept as links
// (their text, never followed), under --allow-all and under a sandbox's path-scoped permissions,
// where Deno makes no symbolic link; what cannot be copied is refused naming the link.
import assert from "node:assert/strict";
import { tempDir } from "../support/reins.ts";

const REPO = new URL("../../", import.meta.url).pathname;

/** copyTree(from, to) in a child Deno with `permissions`: what it said, and the copy's links. */
async function copyIn(dir: string, permissions: string[]) {
  const script = `${dir}/copy.ts`;
  await Deno.writeTextFile(
    script,
    [
      `import { copyTree } from ${JSON.stringify(`${REPO}lib/suite/workdir.ts`)};`,
      "try {",
      "  await copyTree(Deno.args[0], Deno.args[1]);",
      "  console.log(JSON.stringify({ ok: true }));",
      "} catch (error) {",
      "  console.log(JSON.stringify({ code: error.code, message: error.message }));",
      "}",
    ].join("\n"),
  );
  await Deno.mkdir(`${dir}/copy`);
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--config",
      `${REPO}deno.json`,
      ...permissions,
      script,
      `${dir}/src`,
      `${dir}/copy`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  assert.ok(output.success, new TextDecoder().decode(output.stderr) + text);
  return JSON.parse(text) as { ok?: true; code?: string; message?: string };
}

async function linkedTree(dir: string): Promise<void> {
  await Deno.mkdir(`${dir}/src/sub`, { recursive: true, mode: 0o750 });
  await Deno.chmod(`${dir}/src/sub`, 0o750);
  await Deno.writeTextFile(`${dir}/src/orders.csv`, "1234\n");
  await Deno.symlink("orders.csv", `${dir}/src/link`);
  await Deno.symlink("../orders.csv", `${dir}/src/sub/up`);
  await Deno.symlink("nowhere", `${dir}/src/dangling`);
  await Deno.symlink("loop", `${dir}/src/loop`);
  await Deno.symlink("/etc", `${dir}/src/outside`);
}

async function linksOf(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of ["link", "sub/up", "dangling", "loop", "outside"]) {
    assert.ok(Deno.lstatSync(`${root}/${name}`).isSymlink, `${name} is a link`);
    out[name] = await Deno.readLink(`${root}/${name}`);
  }
  return out;
}

const EXPECTED = {
  link: "orders.csv",
  "sub/up": "../orders.csv",
  dangling: "nowhere",
  loop: "loop",
  outside: "/etc",
};

Deno.test("regression: copyTree() copies a workdir's links as links under path-scoped permissions (the sandbox), as under --allow-all", async () => {
  for (
    const permissions of [
      ["--allow-all"],
      (dir: string) => [`--allow-read=${dir},${REPO}`, `--allow-write=${dir}`],
    ]
  ) {
    await using dir = await tempDir();
    await linkedTree(dir.path);
    const flags = typeof permissions === "function" ? permissions(dir.path) : permissions;
    assert.deepEqual(await copyIn(dir.path, flags), { ok: true });
    assert.deepEqual(await linksOf(`${dir.path}/copy`), EXPECTED);
    assert.equal(Deno.readTextFileSync(`${dir.path}/copy/orders.csv`), "1234\n");
    assert.equal(Deno.lstatSync(`${dir.path}/copy/orders.csv`).isSymlink, false);
    assert.equal(Deno.statSync(`${dir.path}/copy/sub`).mode! & 0o777, 0o750);
    // Removing the copy's link leaves the workdir's.
    await Deno.remove(`${dir.path}/copy/link`);
    assert.equal(await Deno.readLink(`${dir.path}/src/link`), "orders.csv");
  }
});

Deno.test("copyTree() refuses a link it cannot copy naming it (exit 4): a workdir the sandbox only reads", async () => {
  await using dir = await tempDir();
  await linkedTree(dir.path);
  const said = await copyIn(dir.path, [
    `--allow-read=${dir.path},${REPO}`,
    `--allow-write=${dir.path}/copy`,
  ]);
  assert.equal(said.code, "sandbox");
  assert.match(
    said.message!,
    new RegExp(
      `^Cannot copy the link ${dir.path}/src/(link|dangling|loop|outside|sub/up) \\(→ [^)]+\\) into a scenario's working directory: `,
    ),
  );
});
