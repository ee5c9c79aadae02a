// `reins run --driver codex --model M --arg X`: the run's own model and arguments reach the CLI
// (a real child: a shell script standing in for Codex that writes down its argv), are kept on
// run.started, and a later turn of the context that names neither keeps them — as a resumed
// conversation must; a flag that does not go with the driver is refused before any run exists.
import assert from "node:assert/strict";
import { reins, type ReinsOptions, tempDir } from "../support/reins.ts";

// Codex's lines for one turn (INTEROP.md), its argv written down one argument a line, the turn
// numbered by how many times it ran.
const FAKE_CODEX = (log: string) =>
  `#!/bin/sh
n=$(ls "${log}" 2>/dev/null | wc -l)
for a in "$@"; do printf '%s\\n' "$a"; done > "${log}/argv.$n"
cat > /dev/null
echo '{"type":"thread.started","thread_id":"thread-1"}'
echo '{"type":"turn.started"}'
echo '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"done"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}'
`;

async function bench() {
  const dir = await tempDir();
  const log = `${dir.path}/argv`;
  await Deno.mkdir(log);
  const program = `${dir.path}/codex`;
  await Deno.writeTextFile(program, FAKE_CODEX(log));
  await Deno.chmod(program, 0o755);
  const options: ReinsOptions = {
    home: `${dir.path}/home`,
    cwd: dir.path,
    env: { REINS_CODEX_BIN: program },
    allowRun: [program, "sh"],
    allowPaths: [log],
  };
  await Deno.mkdir(options.home);
  const argv = async (n: number) =>
    (await Deno.readTextFile(`${log}/argv.${n}`)).trimEnd().split("\n");
  return { dir, options, argv };
}

const valueOf = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

Deno.test("reins run --driver codex --model M --arg X passes both, and a later turn of the context keeps them", async () => {
  const { dir, options, argv } = await bench();
  await using _ = dir;
  const run = async (args: string[]) => {
    const result = await reins(
      ["run", "--driver", "codex", "--no-gateway", "--context", "c1", "--json", ...args, "go"],
      options,
    );
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as { runId: string };
  };
  const first = await run(["--model", "gpt-5-mini", "--arg=--ephemeral", "--arg", "extra"]);
  const one = await argv(0);
  assert.equal(valueOf(one, "-m"), "gpt-5-mini");
  assert.ok(
    one.indexOf("--ephemeral") >= 0 && one.indexOf("extra") === one.indexOf("--ephemeral") + 1,
  );
  assert.equal(one[1], "--json", "a new thread: codex exec --json …");

  const second = await run([]);
  const two = await argv(1);
  assert.deepEqual(two.slice(0, 2), ["exec", "resume"]);
  assert.equal(valueOf(two, "-m"), "gpt-5-mini", "the context's model is kept");
  assert.ok(two.includes("--ephemeral") && two.includes("extra"), two.join(" "));
  assert.deepEqual(two.slice(-2), ["thread-1", "-"]);

  // Named again, the run's own win; nothing of the turn before is kept then.
  await run(["--model", "gpt-5"]);
  const three = await argv(2);
  assert.equal(valueOf(three, "-m"), "gpt-5");
  assert.ok(!three.includes("extra"), three.join(" "));

  for (
    const [runId, perRun] of [
      [first.runId, { model: "gpt-5-mini", args: ["--ephemeral", "extra"] }],
      [second.runId, { model: "gpt-5-mini", args: ["--ephemeral", "extra"] }],
    ] as const
  ) {
    const shown = await reins(["show", runId, "--json"], options);
    assert.equal(shown.code, 0, shown.stderr);
    const started = (JSON.parse(shown.stdout).events as {
      type: string;
      payload: { agent: { perRun: unknown; model: string } };
    }[])
      .find((event) => event.type === "run.started")!;
    assert.deepEqual(started.payload.agent.perRun, perRun);
    assert.equal(started.payload.agent.model, "gpt-5-mini");
  }
});

Deno.test("reins run --model names a model reins has no price for: one line says its cost stays unknown", async () => {
  const { dir, options } = await bench();
  await using _ = dir;
  const result = await reins(
    ["run", "--driver", "codex", "--no-gateway", "--model", "gpt-9-nobody", "go"],
    options,
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stderr, /no price is known for the model "gpt-9-nobody"/);
  const priced = await reins(
    ["run", "--driver", "codex", "--no-gateway", "--model", "gpt-5-mini", "go"],
    options,
  );
  assert.doesNotMatch(priced.stderr, /no price is known/);
});

Deno.test("reins run refuses --model and --arg where the driver takes none, and opencode's model without a provider", async () => {
  await using dir = await tempDir();
  const options: ReinsOptions = { home: dir.path };
  const cases: [string[], RegExp][] = [
    [
      ["--driver", "command", "--exec", "true", "--model", "m"],
      /--model does not go with --driver command/,
    ],
    [["--arg", "x"], /--arg goes with a harness driver/],
    [["--driver", "command", "--exec", "true", "--arg", "x"], /--arg goes with a harness driver/],
    [
      ["--driver", "opencode", "--model", "gpt-5"],
      /--model for opencode takes PROVIDER\/MODEL: got "gpt-5"/,
    ],
  ];
  for (const [args, message] of cases) {
    const result = await reins(["run", ...args, "hello"], options);
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
  const runs = await reins(["runs", "--json"], options);
  assert.deepEqual(JSON.parse(runs.stdout), [], "no run was left behind");
});
