// A refusal names what the sandbox was built from: the launcher's data root and where it came
// from (--home, REINS_HOME, the default) and the directories it holds; a compiled binary's, the
// data root its build baked in. The binary is not built here (its runtime cannot be downloaded
// offline): the bundle `deno task compile` compiles, built for the same data root, runs under its
// flags.
import assert from "node:assert/strict";
import { buildBundle } from "../../scripts/bundle.ts";
import { bundleRunFlags, PROCESS_TOOLS } from "../../scripts/permissions.ts";
import { CONFIG, reins, tempDir } from "../support/reins.ts";

const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;

// regression: the hint of a refused path said to set "--cwd, --home or REINS_HOME", whichever was
// set already, and did not say what the sandbox held.
Deno.test("a refused path under the launcher names the data root, its flag and the directories it holds", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const elsewhere = `${dir.path}-elsewhere`;
  const origin = { by: "launcher", home, homeFrom: "--home", dirs: [dir.path, "/srv/work"] };
  const result = await reins(["--home", elsewhere, "runs"], {
    home,
    cwd: dir.path,
    env: { REINS_SANDBOX: JSON.stringify(origin) },
  });
  assert.equal(result.code, 4, result.stderr);
  assert.equal(
    result.stderr.split("\n")[0],
    `reins: The sandbox refused to read ${JSON.stringify(elsewhere)}: this reins may touch only ` +
      `its data root ${home} (--home) and ${dir.path} (where it started), /srv/work (--cwd): ` +
      "name the path on the command line — --cwd DIR for a working directory, --home DIR for a " +
      "data root, --attach FILE for a file — or start reins in a directory that holds it",
  );
  const json = await reins(["--home", elsewhere, "runs", "--json"], {
    home,
    cwd: dir.path,
    env: { REINS_SANDBOX: JSON.stringify({ ...origin, homeFrom: "HOME" }) },
  });
  assert.equal(JSON.parse(json.stdout).error.code, "sandbox");
  assert.match(JSON.parse(json.stdout).error.message, /\(the default ~\/\.reins\)/);
});

Deno.test("the compiled binary's entry names the data root its build baked in when --home is elsewhere", async () => {
  await using dir = await tempDir();
  const built = `${dir.path}/built-home`;
  const start = `${dir.path}/start`;
  await Deno.mkdir(start);
  // What `deno task compile` compiles: the bundle, built for this data root.
  const outdir = `${dir.path}/bundle`;
  const entry = await buildBundle({
    outdir,
    origin: { by: "compile", home: built, homeFrom: "REINS_HOME", dirs: [] },
  });
  // The flags the binary is compiled with: its V8 flags, its data root, and "." for where it is
  // started.
  const flags = bundleRunFlags(
    { home: built, cwd: ".", netHosts: [], programs: PROCESS_TOOLS },
    outdir,
  );
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--config",
      CONFIG,
      // The binary embeds its modules; run from the bundle, they are read.
      ...flags,
      entry,
      "--home",
      `${dir.path}/other`,
      "runs",
    ],
    cwd: start,
    clearEnv: true,
    // A REINS_SANDBOX in the environment does not override what the build baked in.
    env: {
      HOME: dir.path,
      DENO_DIR,
      NO_COLOR: "1",
      DENO_NO_UPDATE_CHECK: "1",
      REINS_SANDBOX: JSON.stringify({ by: "launcher", home: "/x", homeFrom: "--home", dirs: [] }),
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 4, stderr);
  assert.equal(
    stderr.split("\n")[0],
    `reins: The sandbox refused to read "${dir.path}/other": this binary was built (deno task ` +
      `compile) for the data root ${built} (REINS_HOME at the build) and may touch only that and ` +
      "the directory it is started in: start it in a directory that holds the path, or build it " +
      "again for another data root (REINS_HOME=DIR deno task compile)",
  );
});
