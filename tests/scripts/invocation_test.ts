// invocationSandbox(): the sandbox the launcher builds for one command line, as given.
import assert from "node:assert/strict";
import { flagValues, invocationSandbox } from "../../scripts/invocation.ts";
import { permissionFlags } from "../../scripts/permissions.ts";
import { tempDir } from "../support/reins.ts";

const flag = (flags: string[], name: string) =>
  flags.find((f) => f.startsWith(`--allow-${name}=`))?.slice(`--allow-${name}=`.length).split(
    ",",
  ) ??
    [];

Deno.test("flagValues() reads --NAME VALUE and --NAME=VALUE, up to --", () => {
  assert.deepEqual(
    flagValues(["--home", "a", "run", "--home=b", "--", "--home", "c"], "home"),
    ["a", "b"],
  );
  assert.deepEqual(flagValues(["run", "--home"], "home"), []);
});

Deno.test("invocationSandbox() grants what the command line names, resolved from where reins starts", async () => {
  await using dir = await tempDir();
  const start = `${dir.path}/start`;
  const config = `${dir.path}/data/config.json`;
  await Deno.mkdir(`${dir.path}/data`);
  await Deno.writeTextFile(
    config,
    JSON.stringify({ drivers: { codex: { program: "/opt/codex" } } }),
  );
  const { sandbox, home, homeFrom, dirs } = invocationSandbox(
    [
      "--home",
      "../data",
      "run",
      "--cwd",
      "/srv/project",
      "--attach",
      "call.wav",
      "--model",
      "mock:../script.json",
      "--exec",
      "'/opt/my agent' --flag",
      "--base-url",
      "http://models.internal:8080/v1",
      "prompt",
    ],
    { HOME: "/home/me" },
    start,
  );
  assert.deepEqual([home, homeFrom], [`${dir.path}/data`, "--home"]);
  assert.deepEqual(dirs, [start, "/srv/project"]);
  const flags = permissionFlags(sandbox);
  const read = flag(flags, "read");
  for (
    const path of [home, start, "/srv/project", `${start}/call.wav`, `${dir.path}/script.json`]
  ) {
    assert.ok(read.includes(path), `${path} in ${read}`);
  }
  assert.deepEqual(flag(flags, "write"), read);
  const run = flag(flags, "run");
  assert.ok(run.includes("/opt/codex") && run.includes("/opt/my agent"), run.join(","));
  assert.ok(flag(flags, "net").includes("models.internal:8080"));
});

Deno.test("invocationSandbox() takes the data root from --home, else REINS_HOME, else ~/.reins", () => {
  const of = (args: string[], env: Record<string, string>) => {
    const { home, homeFrom } = invocationSandbox(args, env, "/start");
    return [home, homeFrom];
  };
  assert.deepEqual(of(["runs", "--home=/d"], { HOME: "/h", REINS_HOME: "/r" }), ["/d", "--home"]);
  assert.deepEqual(of(["runs"], { HOME: "/h", REINS_HOME: "rel" }), ["/start/rel", "REINS_HOME"]);
  assert.deepEqual(of(["runs"], { HOME: "/h" }), ["/h/.reins", "HOME"]);
});

Deno.test("invocationSandbox() grants reins suite's files and reins export's collector", () => {
  const { sandbox } = invocationSandbox(
    [
      "suite",
      "run",
      "../suites/shop.yaml",
      "--jobs",
      "2",
      "--junit",
      "out/j.xml",
      "--plan",
      "/plans/p.json",
    ],
    { HOME: "/h" },
    "/start/here",
  );
  const read = flag(permissionFlags(sandbox), "read");
  for (const path of ["/start/suites/shop.yaml", "/start/here/out/j.xml", "/plans/p.json"]) {
    assert.ok(read.includes(path), `${path} in ${read}`);
  }
  assert.ok(!read.includes("/start/here/2"), "a flag's value is not a file");
  const exported = invocationSandbox(
    ["export", "otel", "last", "--endpoint", "https://otel.example:4318"],
    { HOME: "/h" },
    "/s",
  );
  assert.ok(flag(permissionFlags(exported.sandbox), "net").includes("otel.example:4318"));
});
