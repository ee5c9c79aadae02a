// The line reins prints when a signal stops a run names the way to kill it now: Ctrl-C again for
// SIGINT (a person at a terminal), SIGTERM again for SIGTERM (a process manager, `kill`), who may
// have no terminal to press Ctrl-C in.
import assert from "node:assert/strict";
import { spawnReins, tempDir } from "../support/reins.ts";

async function stoppingLine(signal: "SIGINT" | "SIGTERM"): Promise<{ code: number; line: string }> {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  const script = `${dir.path}/agent.sh`;
  const started = `${dir.path}/started`;
  await Deno.writeTextFile(script, `echo started\ntouch ${started}\nsleep 300 &\nwait\n`);
  const child = spawnReins(["run", "--driver", "command", "--exec", `sh ${script}`, "go"], {
    home,
    cwd: dir.path,
    allowRun: ["sh"],
  });
  const stderr = new Response(child.stderr).text();
  const stdout = new Response(child.stdout).text();
  for (let tries = 0; !exists(started); tries++) {
    if (tries > 800) throw new Error("the agent never started");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child.kill(signal);
  const { code } = await child.status;
  await stdout;
  const line = (await stderr).split("\n").find((text) => text.includes("stopping run")) ?? "";
  return { code, line };
}

Deno.test("regression: reins run stopped by SIGTERM says to send SIGTERM again, not to press Ctrl-C", async () => {
  const { code, line } = await stoppingLine("SIGTERM");
  assert.equal(code, 1);
  assert.match(line, /\(SIGTERM\); send SIGTERM again \(kill -TERM \d+\) to kill it now$/);
  assert.doesNotMatch(line, /Ctrl-C/);
});

Deno.test("reins run stopped by SIGINT says to press Ctrl-C again", async () => {
  const { code, line } = await stoppingLine("SIGINT");
  assert.equal(code, 1);
  assert.match(line, /\(SIGINT\); press Ctrl-C again to kill it now$/);
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
