// invocationSandbox(): the sandbox the launcher builds for one command line, as given.
import assert from "node:assert/strict";
import { flagValues, invocationSandbox, SANDBOX_ENV } from "../../scripts/invocation.ts";
import { harnessConfigPaths, permissionFlags } from "../../scripts/permissions.ts";
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
  const { sandbox, home, homeFrom, dirs } = await invocationSandbox(
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
  // Written where read, but the harnesses' own config, which is read only (the gateway's upstreams).
  const readOnly = harnessConfigPaths({ HOME: "/home/me" });
  assert.deepEqual(flag(flags, "write"), read.filter((path) => !readOnly.includes(path)));
  const run = flag(flags, "run");
  assert.ok(run.includes("/opt/codex") && run.includes("/opt/my agent"), run.join(","));
  assert.ok(flag(flags, "net").includes("models.internal:8080"));
});

Deno.test("invocationSandbox() takes the data root from --home, else REINS_HOME, else ~/.reins", async () => {
  const of = async (args: string[], env: Record<string, string>) => {
    const { home, homeFrom } = await invocationSandbox(args, env, "/start");
    return [home, homeFrom];
  };
  assert.deepEqual(await of(["runs", "--home=/d"], { HOME: "/h", REINS_HOME: "/r" }), [
    "/d",
    "--home",
  ]);
  assert.deepEqual(await of(["runs"], { HOME: "/h", REINS_HOME: "rel" }), [
    "/start/rel",
    "REINS_HOME",
  ]);
  assert.deepEqual(await of(["runs"], { HOME: "/h" }), ["/h/.reins", "HOME"]);
});

Deno.test("invocationSandbox() grants reins suite's files and reins export's collector", async () => {
  const { sandbox } = await invocationSandbox(
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
  for (const path of ["/start/suites/shop.yaml", "/start/here/out", "/plans/p.json"]) {
    assert.ok(read.includes(path), `${path} in ${read}`);
  }
  assert.ok(!read.includes("/start/here/2"), "a flag's value is not a file");
  const exported = await invocationSandbox(
    ["export", "otel", "last", "--endpoint", "https://otel.example:4318"],
    { HOME: "/h" },
    "/s",
  );
  assert.ok(flag(permissionFlags(exported.sandbox), "net").includes("otel.example:4318"));
});

// regression: `reins suite plan suite.yaml --out /elsewhere/plan.json` was refused (exit 4): the
// launcher granted the plan file, and reins writes it beside, then renames it over.
Deno.test("regression: invocationSandbox() grants the folders of --out and --junit, where they are written and renamed", async () => {
  const { sandbox } = await invocationSandbox(
    ["suite", "plan", "s.yaml", "--shards", "2", "--out", "/elsewhere/plan.json"],
    { HOME: "/h" },
    "/start",
  );
  const flags = permissionFlags(sandbox);
  assert.ok(flag(flags, "write").includes("/elsewhere"), flag(flags, "write").join(","));
  assert.ok(!flag(flags, "write").includes("/"), "not the root for a file in it");
  const merged = await invocationSandbox(
    ["suite", "merge", "shard-1/a", "--junit=../reports/junit.xml"],
    { HOME: "/h" },
    "/start/here",
  );
  const read = flag(permissionFlags(merged.sandbox), "read");
  assert.ok(read.includes("/start/reports") && read.includes("/start/here/shard-1/a"), read.join());
});

// regression: --exec was split by a regular expression of its own, so a program the command
// driver runs was not the one granted ("/opt/my\" for --exec '/opt/my\ agent').
Deno.test("regression: invocationSandbox() grants --exec's program as the command driver splits it", async () => {
  const { sandbox } = await invocationSandbox(
    ["run", "--driver", "command", "--exec", "/opt/my\\ agent --flag", "hi"],
    { HOME: "/h" },
    "/s",
  );
  const run = flag(permissionFlags(sandbox), "run");
  assert.ok(run.includes("/opt/my agent"), run.join(","));
});

/** A suite that names a file or program of each kind, outside the directory reins starts in. */
async function suiteNamingEverything(dir: string): Promise<string> {
  await Deno.mkdir(`${dir}/suite/agents`, { recursive: true });
  await Deno.mkdir(`${dir}/suite/shop`);
  await Deno.mkdir(`${dir}/suite/mocks`);
  await Deno.writeTextFile(`${dir}/suite/agents/shop.sh`, "#!/bin/sh\necho hi\n", { mode: 0o755 });
  for (const name of ["judge.json", "user.json", "loop.json"]) {
    await Deno.writeTextFile(`${dir}/suite/mocks/${name}`, "[]");
  }
  const file = `${dir}/suite/suite.yaml`;
  await Deno.writeTextFile(
    file,
    [
      "suite: everything",
      "driver: command",
      "exec: ./agents/shop.sh --fast",
      "workdir: ./shop",
      "scenarios:",
      "  - key: scripted",
      "    turns: [hi]",
      "    setup: ['git init -q']",
      "    checks:",
      "      - { judge: { model: 'mock:mocks/judge.json', rubric: r, baseUrl: 'https://judge.example:8443/v1' } }",
      "  - key: simulated",
      "    user: { model: 'mock:mocks/user.json', baseUrl: 'https://users.example/v1' }",
      "    checks: [{ command: 'true' }]",
      "  - key: loop",
      "    driver: loop",
      "    model: mock:mocks/loop.json",
      "    turns: [hi]",
      "",
    ].join("\n"),
  );
  return file;
}

// regression: the files a suite names (its workdir, mock: models, exec: agent) and the sh its
// setup and command checks run through were refused when reins started elsewhere, so the README's
// own `reins suite run examples/suite/suite.yaml` stopped at "refused to run sh".
Deno.test("regression: invocationSandbox() grants what a suite file names: its workdir, mock files, exec agent, sh and hosts", async () => {
  await using dir = await tempDir();
  await suiteNamingEverything(dir.path);
  await Deno.mkdir(`${dir.path}/start`);
  const invocation = await invocationSandbox(
    ["--home", "../home", "suite", "run", "../suite/suite.yaml", "--jobs", "2"],
    { HOME: "/h" },
    `${dir.path}/start`,
  );
  const flags = permissionFlags(invocation.sandbox);
  const read = flag(flags, "read");
  for (
    const path of [
      "suite/suite.yaml",
      "suite/shop",
      "suite/mocks/judge.json",
      "suite/mocks/user.json",
      "suite/mocks/loop.json",
    ]
  ) {
    assert.ok(read.includes(`${dir.path}/${path}`), `${path} in ${read}`);
  }
  const run = flag(flags, "run");
  assert.ok(run.includes(`${dir.path}/suite/agents/shop.sh`) && run.includes("sh"), run.join());
  const net = flag(flags, "net");
  assert.ok(net.includes("judge.example:8443") && net.includes("users.example:443"), net.join());
  // What a suite names is not in the launcher's cache key: such a sandbox is never cached.
  assert.equal(invocation.cacheable, false);
  assert.equal((await invocationSandbox(["runs"], { HOME: "/h" }, "/s")).cacheable, true);
});

Deno.test("invocationSandbox() grants an unusable suite file alone, for reins to say what is wrong with it", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/bad.yaml`, "suite: [unclosed\n");
  const { sandbox } = await invocationSandbox(
    ["suite", "validate", "bad.yaml"],
    { HOME: "/h" },
    dir.path,
  );
  const flags = permissionFlags(sandbox);
  assert.ok(flag(flags, "read").includes(`${dir.path}/bad.yaml`));
  assert.deepEqual(flag(flags, "run"), [
    "claude",
    "codex",
    "gemini",
    "opencode",
    "kill",
    "ps",
    "/usr/bin/setsid",
  ]);
});

Deno.test("invocationSandbox() reads no variable but SANDBOX_ENV, the ones the launcher keys its cache on", async () => {
  const read = new Set<string>();
  const env = new Proxy({ HOME: "/h", REINS_ALLOW_RUN: "jq" } as Record<string, string>, {
    get(target, name) {
      if (typeof name === "string") read.add(name);
      return target[name as string];
    },
  });
  await invocationSandbox(["run", "--home", "/d", "hi"], env, "/s");
  const others = [...read].filter((name) => !(SANDBOX_ENV as readonly string[]).includes(name));
  assert.deepEqual(others, []);
  assert.ok(read.has("REINS_ALLOW_RUN") && read.has("REINS_CONFIG"), [...read].join());
});

Deno.test("invocationSandbox() lists what confining needs with the trampoline: --confine, confine.enabled, doctor", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/data`);
  await Deno.writeTextFile(
    `${dir.path}/data/config.json`,
    JSON.stringify({ confine: { enabled: true } }),
  );
  const confining = [
    { args: ["run", "--home", `${dir.path}/none`, "--confine", "hi"] },
    { args: ["run", "--home", `${dir.path}/data`, "hi"] },
    { args: ["doctor", "--home", `${dir.path}/none`] },
  ];
  for (const { args } of confining) {
    const { sandbox } = await invocationSandbox(args, { HOME: "/h" }, dir.path);
    const run = flag(permissionFlags(sandbox), "run");
    // bubblewrap is started through setsid (a session and group leader, no fork of reins) by env
    // (which makes it ignore SIGINT and SIGTERM); socat and ls set the sandbox up.
    for (const program of ["bwrap", "env", "socat", "ls", "/usr/bin/setsid"]) {
      assert.ok(run.includes(program), `${args.join(" ")}: ${program} not in ${run.join(",")}`);
    }
  }
  const { sandbox } = await invocationSandbox(
    ["run", "--home", `${dir.path}/none`, "hi"],
    { HOME: "/h" },
    dir.path,
  );
  const run = flag(permissionFlags(sandbox), "run");
  for (const program of ["bwrap", "env", "socat", "ls"]) assert.ok(!run.includes(program), program);
});
