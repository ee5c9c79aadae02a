// .gitignore rules as git applies them: a table of the cases gitignore(5) describes, and real
// git (`git check-ignore`) as the oracle for generated trees and patterns.
import assert from "node:assert/strict";
import fc from "fast-check";
import { IgnoreRules, parseIgnoreFile, parseIgnoreLine } from "../../lib/snapshot/gitignore.ts";
import { walkTree } from "../../lib/snapshot/walk.ts";
import { tempDir } from "../support/reins.ts";

function ignoredBy(text: string, path: string, isDir = false): boolean {
  const rules = new IgnoreRules();
  rules.add("", parseIgnoreFile(text));
  return rules.ignores(path, isDir);
}

Deno.test("parseIgnoreLine() skips blank lines and comments, and unescapes # and !", () => {
  assert.equal(parseIgnoreLine(""), null);
  assert.equal(parseIgnoreLine("   "), null);
  assert.equal(parseIgnoreLine("# a comment"), null);
  assert.ok(parseIgnoreLine("\\#hash")!.regex.test("#hash"));
  assert.ok(parseIgnoreLine("\\!bang")!.regex.test("!bang"));
  assert.equal(parseIgnoreLine("!keep.log")!.negated, true);
  assert.equal(parseIgnoreLine("build/")!.dirOnly, true);
  assert.ok(parseIgnoreLine("trailing\\ ")!.regex.test("trailing "));
  assert.ok(parseIgnoreLine("spaces   ")!.regex.test("spaces"));
});

Deno.test("IgnoreRules.ignores() follows gitignore(5)", () => {
  const cases: [string, string, boolean, boolean][] = [
    ["*.log", "debug.log", false, true],
    ["*.log", "logs/debug.log", false, true],
    ["*.log", "debug.log.txt", false, false],
    ["/build", "build", true, true],
    ["/build", "src/build", true, false],
    ["build/", "build", true, true],
    ["build/", "build", false, false],
    ["build/", "src/build", true, true],
    ["doc/frotz", "doc/frotz", true, true],
    ["doc/frotz", "a/doc/frotz", true, false],
    ["**/foo", "foo", false, true],
    ["**/foo", "a/b/foo", false, true],
    ["foo/**", "foo/a/b", false, true],
    ["foo/**", "foo", true, false],
    ["a/**/b", "a/b", false, true],
    ["a/**/b", "a/x/y/b", false, true],
    ["a/**/b", "xa/b", false, false],
    ["?.txt", "a.txt", false, true],
    ["?.txt", "ab.txt", false, false],
    ["[abc].md", "b.md", false, true],
    ["[!abc].md", "b.md", false, false],
    ["[!abc].md", "d.md", false, true],
    ["[a-c]x", "bx", false, true],
    ["*", "anything/at/all", false, true],
    ["a*b", "a/b", false, false],
    ["\\*literal", "*literal", false, true],
    ["\\*literal", "xliteral", false, false],
  ];
  for (const [pattern, path, isDir, expected] of cases) {
    assert.equal(ignoredBy(pattern, path, isDir), expected, `${pattern} vs ${path}`);
  }
});

Deno.test("IgnoreRules.ignores(): the last match wins, and a deeper file overrides", () => {
  assert.equal(ignoredBy("*.log\n!keep.log", "keep.log"), false);
  assert.equal(ignoredBy("!keep.log\n*.log", "keep.log"), true);
  const rules = new IgnoreRules();
  rules.add("", parseIgnoreFile("*.tmp\n"));
  rules.add("sub", parseIgnoreFile("!x.tmp\n/only-here\n"));
  assert.equal(rules.ignores("sub/x.tmp", false), false);
  assert.equal(rules.ignores("x.tmp", false), true);
  assert.equal(rules.ignores("sub/only-here", false), true);
  assert.equal(rules.ignores("sub/deeper/only-here", false), false);
  assert.equal(rules.ignores("other/only-here", false), false);
});

const GIT = (() => {
  try {
    return new Deno.Command("git", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

async function git(cwd: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("git", {
    args,
    cwd,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: cwd, GIT_CONFIG_GLOBAL: "/dev/null" },
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const output = await child.output();
  return new TextDecoder().decode(output.stdout);
}

const segment = fc.constantFrom("a", "b", "ab", "x.log", "y.tmp", "build", "keep.log", "c.md");
const pattern = fc.oneof(
  fc.constantFrom(
    "*.log",
    "!keep.log",
    "build/",
    "/build",
    "**/b",
    "a/**",
    "a/**/c.md",
    "?b",
    "[ax].log",
    "[!a]*",
    "b/",
    "/a/b",
    "*.tmp",
    "!y.tmp",
    "ab",
  ),
  fc.tuple(segment, segment).map(([x, y]) => `${x}/${y}`),
);

Deno.test({
  name: "walkTree() leaves out exactly what git check-ignore says is ignored",
  ignore: !GIT,
  async fn() {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.array(segment, { minLength: 1, maxLength: 3 }), {
          minLength: 1,
          maxLength: 12,
          selector: (parts) => parts.join("/"),
        }),
        fc.array(pattern, { maxLength: 6 }),
        fc.array(pattern, { maxLength: 3 }),
        async (files, rootRules, subRules) => {
          await using dir = await tempDir("reins-gitignore-");
          const root = dir.path;
          const made: string[] = [];
          for (const parts of files) {
            const path = parts.join("/");
            // A path that is a prefix of another must be a directory, not a file.
            if (files.some((other) => other.join("/").startsWith(`${path}/`))) continue;
            if (made.some((other) => path.startsWith(`${other}/`))) continue;
            await Deno.mkdir(`${root}/${parts.slice(0, -1).join("/")}`, { recursive: true });
            await Deno.writeTextFile(`${root}/${path}`, path);
            made.push(path);
          }
          await Deno.writeTextFile(`${root}/.gitignore`, rootRules.join("\n") + "\n");
          const sub = made.find((path) => path.includes("/"))?.split("/")[0];
          if (sub) {
            await Deno.writeTextFile(`${root}/${sub}/.gitignore`, subRules.join("\n") + "\n");
          }
          await git(root, ["init", "-q"]);
          const walk = await walkTree(root, { maxBytes: Infinity, maxEntries: Infinity });
          const kept = new Set(walk.entries.filter((e) => e.type === "file").map((e) => e.path));
          const ignored = new Set(
            (await git(root, ["check-ignore", "--stdin", "--no-index"], made.join("\n") + "\n"))
              .split("\n").filter(Boolean),
          );
          for (const path of made) {
            // A file under an ignored directory is out whatever its own rules say, as in git.
            const gitKeeps = !ignored.has(path) &&
              !path.split("/").slice(0, -1).some((_, i, all) =>
                ignored.has(all.slice(0, i + 1).join("/"))
              );
            assert.equal(
              kept.has(path),
              gitKeeps,
              `${path} with root rules ${JSON.stringify(rootRules)} and ${sub}/ rules ${
                JSON.stringify(subRules)
              }`,
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  },
});
