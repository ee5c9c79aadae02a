// The sandbox refuses crisply: a program or host outside the binary's lists is exit 4 at once with
// one line that names it and how to grant it, never retried; `sh` is on the run list only when
// asked for, and the loop offers run_command only then; doctor shows the sandbox in force.
import assert from "node:assert/strict";
import { permissionFlags, sandboxFromEnv } from "../../scripts/permissions.ts";
import { reins, tempDir } from "../support/reins.ts";

const GRANT_TAIL = "when you build reins (deno task compile) or start it (deno task reins)";

Deno.test("regression: --exec of a program outside the run list is exit 4 with one line naming it", async () => {
  await using dir = await tempDir();
  const result = await reins(["run", "--driver", "command", "--exec", "/bin/ls", "hi"], {
    home: dir.path,
  });
  assert.equal(result.code, 4, result.stderr);
  assert.equal(
    result.stderr,
    `reins: The sandbox refused to run "/bin/ls": grant it with REINS_ALLOW_RUN=/bin/ls ${GRANT_TAIL}\n`,
  );
  assert.equal(result.stdout, "");
  // The run that was refused is recorded as failed, with the same reason.
  const shown = JSON.parse((await reins(["show", "last", "--json"], { home: dir.path })).stdout);
  assert.equal(shown.record.status, "failed");
  assert.match(shown.record.terminalReason, /The sandbox refused to run "\/bin\/ls"/);
});

Deno.test("regression: sh is not on the run list unless REINS_ALLOW_RUN names it", async () => {
  await using dir = await tempDir();
  const args = ["run", "--driver", "command", "--exec", "sh -c 'echo anything'", "--json", "hi"];
  const refused = await reins(args, { home: dir.path });
  assert.equal(refused.code, 4, refused.stderr);
  assert.match(
    refused.stderr,
    /^reins: The sandbox refused to run "sh": grant it with REINS_ALLOW_RUN=sh /,
  );
  const { error } = JSON.parse(refused.stdout);
  assert.deepEqual(Object.keys(error), ["code", "message", "hint"]);
  assert.equal(error.code, "sandbox");

  const allowed = await reins(args, { home: dir.path, allowRun: ["sh"] });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.equal(JSON.parse(allowed.stdout).result, "anything");

  // The flags the build bakes: sh only when REINS_ALLOW_RUN says so.
  const runFlag = (env: Record<string, string>) =>
    permissionFlags(sandboxFromEnv({ HOME: "/home/u", ...env })).find((flag) =>
      flag.startsWith("--allow-run=")
    );
  assert.equal(runFlag({}), "--allow-run=claude,codex,gemini,opencode,kill,ps,/usr/bin/setsid");
  assert.equal(
    runFlag({ REINS_ALLOW_RUN: "sh" }),
    "--allow-run=claude,codex,gemini,opencode,kill,ps,sh,/usr/bin/setsid",
  );
});

Deno.test("regression: the loop offers run_command only when sh may run", async () => {
  await using dir = await tempDir();
  const script = `${dir.path}/script.json`;
  await Deno.writeTextFile(
    script,
    JSON.stringify([
      { toolCalls: [{ id: "c1", name: "run_command", args: { command: "echo hi" } }] },
      { text: "done" },
    ]),
  );
  const toolsOf = async (allowRun: string[]) => {
    const result = await reins(["run", "--model", `mock:${script}`, "--json", "go"], {
      home: dir.path,
      allowRun,
    });
    assert.equal(result.code, 0, result.stderr);
    const shown = JSON.parse(
      (await reins(["show", JSON.parse(result.stdout).runId, "--json"], { home: dir.path })).stdout,
    );
    const requested = shown.events.find((e: { type: string }) => e.type === "model.requested");
    const completed = shown.events.find((e: { type: string }) => e.type === "tool.completed");
    return { toolCount: requested.payload.toolCount, tool: completed.payload };
  };
  const without = await toolsOf([]);
  const withShell = await toolsOf(["sh"]);
  assert.equal(withShell.toolCount, without.toolCount + 1);
  assert.equal(without.tool.ok, false);
  assert.match(without.tool.error, /^Unknown tool "run_command": the tools are /);
  assert.doesNotMatch(without.tool.error, /are .*run_command/);
  assert.equal(withShell.tool.ok, true);
});

Deno.test("regression: a model host outside the net list is exit 4 at once, not retried", async () => {
  await using dir = await tempDir();
  const result = await reins(
    ["run", "--model", "openai:gpt-test", "--base-url", "http://model.invalid:8080/v1", "hi"],
    { home: dir.path, env: { OPENAI_API_KEY: "sk-test-not-used-0000000000" } },
  );
  assert.equal(result.code, 4, result.stderr);
  assert.equal(
    result.stderr,
    "reins: The sandbox refused to connect to model.invalid:8080: grant it with " +
      "REINS_ALLOW_NET=model.invalid:8080 (or name it in OPENAI_BASE_URL, HARNESS_PLATFORM_URL or " +
      `OTEL_EXPORTER_OTLP_ENDPOINT) ${GRANT_TAIL}\n`,
  );
  const shown = JSON.parse((await reins(["show", "last", "--json"], { home: dir.path })).stdout);
  // One attempt: a retried refusal said "(after 4 attempts)".
  assert.doesNotMatch(shown.record.terminalReason, /attempt/);
  assert.equal(
    shown.events.filter((e: { type: string }) => e.type === "model.requested").length,
    1,
  );
});

Deno.test("reins doctor shows the sandbox it runs under", async () => {
  await using dir = await tempDir();
  const plain = await reins(["doctor"], { home: dir.path });
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(
    plain.stdout,
    /\nsandbox {6}read: data root yes, working dir yes, anywhere no; write: data root yes, working dir yes, anywhere no\n/,
  );
  // The tests' sandbox lists loopback only (the build's adds the model and platform hosts).
  assert.match(plain.stdout, /\n {13}net: loopback yes, api\.openai\.com no, anywhere no\n/);
  // A harness program not on PATH cannot be granted (Deno resolves the names it allows).
  assert.match(
    plain.stdout,
    /\n {13}run: claude (yes|no), codex (yes|no), gemini (yes|no), opencode (yes|no), kill yes, ps yes, sh no, anything no \(the loop's run_command tool is off\)\n/,
  );
  // How agents start: through the trampoline the run list names, not by a fork of reins.
  assert.match(plain.stdout, /\nagents {7}start through \/usr\/bin\/setsid \(no fork of reins\)\n/);
  const withShell = await reins(["doctor", "--json"], { home: dir.path, allowRun: ["sh"] });
  const { sandbox, agentStart } = JSON.parse(withShell.stdout);
  assert.equal(agentStart.via, "trampoline");
  assert.equal(sandbox.run.shell, true);
  assert.equal(sandbox.run.anything, false);
  assert.equal(sandbox.sys.uid, true);
});

Deno.test("the sandbox no longer grants the temp dir: reins keeps its temp files in the data root", () => {
  const flags = permissionFlags(sandboxFromEnv({ HOME: "/home/u", TMPDIR: "/var/tmp" }, "/w"));
  // Read: the two, and the harnesses' own config (read only), never the temp dir.
  assert.ok(
    flags.includes("--allow-read=/home/u/.reins,/w,/home/u/.codex,/home/u/.config/opencode"),
    flags.join(" "),
  );
  assert.ok(flags.includes("--allow-write=/home/u/.reins,/w"), flags.join(" "));
});

// regression: Deno's refusal of a link names no path ("Deno.symlink() requires unscoped
// --allow-read and --allow-write permissions"), so reins said "The sandbox refused some access to
// a resource: scripts/permissions.ts does not grant it" and left the reader to guess which.
Deno.test("regression: a link the sandbox will not recreate is named, with where it points", async () => {
  await using dir = await tempDir();
  const work = `${dir.path}/work`;
  await Deno.mkdir(work);
  await Deno.mkdir(`${dir.path}/outside`);
  await Deno.writeTextFile(`${dir.path}/outside/secret.txt`, "not granted\n");
  await Deno.writeTextFile(`${work}/notes.txt`, "hello\n");
  // It points out of the paths the sandbox grants.
  await Deno.symlink("../outside/secret.txt", `${work}/secret`);
  const home = `${dir.path}/home`;
  const ran = await reins(["run", "--json", "list the files"], { home, cwd: work });
  assert.equal(ran.code, 0, ran.stderr);
  // Replayed, its recorded working directory is restored from the snapshot, links included.
  const replayed = await reins(["replay", "last"], { home, cwd: work });
  assert.equal(replayed.code, 4, replayed.stderr);
  const lines = replayed.stderr.trimEnd().split("\n");
  assert.match(
    lines[0],
    new RegExp(
      `^reins: The sandbox refused to recreate the symbolic link "${work}/secret" \\(pointing to ` +
        `"\\.\\./outside/secret\\.txt"\\) as "${home}/tmp/[^"]+/secret": Deno lets a program make ` +
        "links only with read and write access everywhere, which reins never has$",
    ),
  );
  assert.equal(lines[1], `hint: replace "${work}/secret" with what it points to, or remove it`);
});
