import { openStore } from "../lib/store/store.ts";
import { loadSettings } from "../lib/core/config.ts";
import { runTurn } from "../lib/turn/run_turn.ts";
const home = await Deno.makeTempDir();
const settings = loadSettings({ REINS_HOME: home, HOME: home });
const med = (x: number[]) => [...x].sort((a, b) => a - b)[x.length >> 1].toFixed(2);
const t = {
  open: [] as number[],
  create: [] as number[],
  turn: [] as number[],
  spawn: [] as number[],
  append: [] as number[],
  settleW: [] as number[],
};
for (let i = 0; i < 40; i++) {
  let s = performance.now();
  const store = openStore(home);
  t.open.push(performance.now() - s);
  s = performance.now();
  const w = store.createRun({
    sessionId: "s",
    contextId: null,
    harness: "h",
    driver: "d",
    trigger: "cli",
    cwd: home,
    goal: "g",
  });
  t.create.push(performance.now() - s);
  s = performance.now();
  w.append({ type: "heartbeat", payload: { iteration: 1 } });
  t.append.push(performance.now() - s);
  s = performance.now();
  w.append({ type: "completed", payload: { reason: null, result: null, exitCode: 0 } });
  t.settleW.push(performance.now() - s);
  w.close();
  s = performance.now();
  await new Deno.Command("true").output();
  t.spawn.push(performance.now() - s);
  s = performance.now();
  await runTurn(store, settings, {
    agent: { kind: "command", exec: "true", idleTimeoutSeconds: null },
    prompt: "p",
    cwd: home,
    contextId: null,
    approval: "auto",
    budget: {},
    timeoutSeconds: null,
    parentRunId: null,
    trigger: "cli",
  }, { stop: new AbortController().signal, kill: new AbortController().signal });
  t.turn.push(performance.now() - s);
  store.close();
}
console.error(Object.entries(t).map(([k, v]) => `${k} ${med(v)}`).join(" | "));
