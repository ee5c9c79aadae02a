import assert from "node:assert/strict";
import { reins, tempDir } from "../support/reins.ts";
import { VERSION } from "../../lib/core/version.ts";
import { COMMANDS } from "../../lib/cli/commands.ts";
import { DRIVER_NAMES } from "../../lib/core/config.ts";

Deno.test("reins --version prints the version of deno.json", async () => {
  await using home = await tempDir();
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(VERSION, config.version);
  const result = await reins(["--version"], { home: home.path });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `reins ${VERSION}\n`);
  const json = await reins(["--version", "--json"], { home: home.path });
  assert.deepEqual(JSON.parse(json.stdout), { version: VERSION, deno: Deno.version.deno });
});

Deno.test("reins --help lists the commands and exits 0", async () => {
  await using home = await tempDir();
  const result = await reins(["--help"], { home: home.path });
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^reins .* runs, records, resumes and reports agent sessions/);
  assert.match(result.stdout, /\n {2}doctor +check the data root/);
});

// regression: `reins --help` ran to 97 columns, wider than the terminal a new user starts in.
Deno.test("reins --help fits one screen of 24 lines of 80 columns and names every command", async () => {
  await using home = await tempDir();
  const result = await reins(["--help"], { home: home.path });
  const lines = result.stdout.trimEnd().split("\n");
  assert.ok(lines.length <= 24, `${lines.length} lines`);
  for (const line of lines) assert.ok([...line].length <= 80, `${[...line].length}: ${line}`);
  for (const { name } of COMMANDS) assert.match(result.stdout, new RegExp(`\n  ${name} `));
});

Deno.test("reins with no command prints the help on stderr and exits 2", async () => {
  await using home = await tempDir();
  const result = await reins([], { home: home.path });
  assert.equal(result.code, 2);
  assert.equal(result.stdout, "");
  assert.match(result.stderr, /Commands:/);
});

Deno.test("reins help doctor and reins doctor --help print the command's help", async () => {
  await using home = await tempDir();
  const a = await reins(["help", "doctor"], { home: home.path });
  const b = await reins(["doctor", "--help"], { home: home.path });
  assert.equal(a.code, 0);
  assert.equal(a.stdout, b.stdout);
  assert.match(a.stdout, /^Usage: reins doctor \[--repair\]\n/);
  assert.match(a.stdout, /--json +machine-readable output on stdout/);
});

Deno.test("regression: reins help run --json and reins run --help --json print the command's usage as JSON", async () => {
  await using home = await tempDir();
  const a = await reins(["help", "run", "--json"], { home: home.path });
  const b = await reins(["run", "--help", "--json"], { home: home.path });
  const text = await reins(["help", "run"], { home: home.path });
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(a.stdout, b.stdout);
  const help = JSON.parse(a.stdout);
  assert.equal(help.command, "run");
  assert.match(help.usage, /^reins run /);
  assert.equal(text.stdout.split("\n")[0], `Usage: ${help.usage.split("\n")[0]}`);
  const driver = help.flags.find((flag: { name: string }) => flag.name === "--driver");
  assert.deepEqual(driver.choices, [...DRIVER_NAMES]);
  assert.equal(driver.global, false);
  const json = help.flags.find((flag: { name: string }) => flag.name === "--json");
  assert.deepEqual(json, {
    name: "--json",
    short: null,
    type: "boolean",
    value: null,
    description: "machine-readable output on stdout",
    global: true,
  });
  // Every flag the text lists is in the data, and no other.
  const listed = [...text.stdout.matchAll(/^ {2}(?:-\w, | {4})(--[\w-]+)/gm)].map((m) => m[1]);
  assert.deepEqual(help.flags.map((flag: { name: string }) => flag.name), listed);
});

Deno.test("reins --help --json lists the commands as JSON", async () => {
  await using home = await tempDir();
  const result = await reins(["--help", "--json"], { home: home.path });
  assert.equal(result.code, 0);
  const help = JSON.parse(result.stdout);
  assert.equal(help.version, VERSION);
  assert.deepEqual(
    help.commands.map((c: { name: string }) => c.name),
    COMMANDS.map((c) => c.name),
  );
  assert.deepEqual(JSON.parse((await reins(["help", "--json"], { home: home.path })).stdout), help);
});

Deno.test("reins dcotor exits 2 and suggests the nearest command", async () => {
  await using home = await tempDir();
  const result = await reins(["dcotor"], { home: home.path });
  assert.equal(result.code, 2);
  assert.equal(
    result.stderr,
    "reins: Unknown command 'dcotor'\nhint: did you mean 'reins doctor'? (see reins --help)\n",
  );
});

Deno.test("reins doctor --jsn exits 2 and suggests --json", async () => {
  await using home = await tempDir();
  const result = await reins(["doctor", "--jsn"], { home: home.path });
  assert.equal(result.code, 2);
  assert.match(
    result.stderr,
    /^reins: Unknown flag --jsn for 'reins doctor'\nhint: did you mean --json\?/,
  );
});

Deno.test("reins doctor --json --bogus prints only a JSON error on stdout", async () => {
  await using home = await tempDir();
  const result = await reins(["doctor", "--json", "--bogus"], { home: home.path });
  assert.equal(result.code, 2);
  const body = JSON.parse(result.stdout);
  assert.deepEqual(Object.keys(body.error), ["code", "message", "hint"]);
  assert.equal(body.error.code, "usage");
  assert.equal(body.error.message, "Unknown flag --bogus for 'reins doctor'");
});

Deno.test("reins doctor under the sandbox exits 4 when it must read a file outside the allowed paths", async () => {
  await using home = await tempDir();
  await using elsewhere = await tempDir("reins-outside-");
  // A config file outside the data root and the working directory (the temp dir is no longer in
  // the sandbox either).
  const result = await reins(["doctor"], {
    home: home.path,
    env: { REINS_CONFIG: `${elsewhere.path}/config.json` },
  });
  assert.equal(result.code, 4, result.stderr);
  assert.equal(
    result.stderr,
    `reins: The sandbox refused to read "${elsewhere.path}/config.json": reins touches only its ` +
      "data root and the directory it was started in (set REINS_HOME when you build reins " +
      "(deno task compile) or start it (deno task reins), or start it in a directory that holds " +
      "the path)\n",
  );
});

Deno.test("reins doctor --json reports the data root it created, its mode and no secrets", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/data`;
  const result = await reins(["doctor", "--json"], {
    home,
    cwd: dir.path,
    env: {
      HARNESS_PLATFORM_URL: "https://platform.example",
      HARNESS_PLATFORM_API_KEY: "key-123",
      HARNESS_PLATFORM_SECRET_KEY: "secret-456",
    },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.ok(!result.stdout.includes("key-123") && !result.stdout.includes("secret-456"));
  const report = JSON.parse(result.stdout);
  assert.equal(report.dataRoot.path, home);
  assert.equal(report.dataRoot.existed, false);
  assert.equal(report.dataRoot.mode, "0700");
  assert.equal(report.platform.apiKeySet, true);
  assert.equal(report.permissions.readAnywhere, "denied");
  assert.equal(report.permissions.writeDataRoot, "granted");
  assert.deepEqual(report.programs.map((p: { driver: string }) => p.driver), [
    "claude",
    "codex",
    "gemini",
    "opencode",
  ]);
});

Deno.test("reins doctor reports a data root that was made 0755, and --repair tightens it", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/data`;
  Deno.mkdirSync(home);
  Deno.chmodSync(home, 0o755);
  const looked = JSON.parse((await reins(["doctor", "--json"], { home, cwd: dir.path })).stdout);
  assert.deepEqual(looked.dataRoot.findings, [
    { path: home, kind: "readable", isDirectory: true, reason: "others may read it (mode 0755)" },
  ]);
  assert.deepEqual(looked.dataRoot.tightened, []);
  assert.equal(Deno.statSync(home).mode! & 0o777, 0o755);
  const result = await reins(["doctor", "--repair", "--json"], { home, cwd: dir.path });
  const report = JSON.parse(result.stdout);
  assert.deepEqual(report.dataRoot.tightened, [home]);
  assert.deepEqual(report.dataRoot.findings, []);
  assert.equal(Deno.statSync(home).mode! & 0o777, 0o700);
});

// regression: a data root that is a file surfaced as "Unexpected error … a bug in reins".
Deno.test("reins run with a data root that is a file exits 6 and says why", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.writeTextFile(home, "not a directory");
  const result = await reins(["run", "hi"], { home, cwd: dir.path, env: { HOME: dir.path } });
  assert.equal(result.code, 6, result.stderr);
  assert.match(result.stderr, /^reins: Cannot use ".*\/home": it is not a directory\nhint: /);
  assert.equal(await Deno.readTextFile(home), "not a directory");
});
