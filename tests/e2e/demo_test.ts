// `deno task demo`: the main job on the built-in model, as a person would run it.
import assert from "node:assert/strict";

const REPO = new URL("../../", import.meta.url).pathname;

Deno.test("deno task demo runs two turns on one context and shows the last run", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "demo"],
    cwd: REPO,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  assert.match(stdout, /\$ reins run --context demo 'Look around this project/);
  assert.match(
    stdout,
    /Last time you asked “Look around this project and write down what you find\.”/,
  );
  assert.match(stdout, /\$ reins contexts\nCONTEXT +SESSION/);
  assert.match(stdout, /\$ reins show last\n/);
  const home = /The data root \(runs, events, contexts\): (\S+)/.exec(stdout)?.[1];
  assert.ok(home, stdout);
  const runs = [...Deno.readDirSync(`${home}/runs`)].filter((e) => e.isDirectory);
  assert.equal(runs.length, 2);
  const project = /The project the agent worked in: (\S+)/.exec(stdout)![1];
  assert.match(await Deno.readTextFile(`${project}/NOTES.md`), /^# Notes/);
  await Deno.remove(home.replace(/\/home$/, ""), { recursive: true });
});
