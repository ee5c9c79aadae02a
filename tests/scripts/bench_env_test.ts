// The benchmarks' child Denos under a temporary HOME (scripts/bench/_lib.ts): they must find their
// npm packages in this run's cache, since the temporary HOME has an empty one and none of the
// real HOME's registry settings. --cached-only stands for a registry the child cannot reach.
import assert from "node:assert/strict";
import { cacheModules, withDenoCache } from "../../scripts/bench/_lib.ts";
import { tempDir } from "../support/reins.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

async function serveHelp(env: Record<string, string>) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--cached-only",
      "--quiet",
      "--config",
      CONFIG,
      "--allow-all",
      MAIN,
      "serve",
      "--help",
    ],
    env,
    clearEnv: true,
    stdin: "null",
  }).output();
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

// regression: `deno task bench`'s serve part started reins with HOME set to a temporary directory
// and no DENO_DIR, so the child's cache was empty ("Failed caching npm package")
Deno.test("withDenoCache() lets a bench's reins child under a temporary HOME start from cached packages", async () => {
  await using dir = await tempDir();
  await cacheModules(CONFIG, MAIN);
  const env = { HOME: dir.path, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1" };
  const bare = await serveHelp(env);
  assert.notEqual(bare.code, 0, "a temporary HOME's own cache should be empty");
  assert.match(bare.stderr, /Failed caching npm package|cached-only/);
  const cached = await serveHelp(withDenoCache(env));
  assert.equal(cached.code, 0, cached.stderr);
});
