// The driver for an agent spec, ready to start: each driver's module is loaded only when its kind
// runs. The built-in loop's model is checked here, before any run is recorded, so a bad --model
// fails without leaving a failed run behind; `replay:last` is pinned to its run now, since once
// this turn's run exists "last" is itself.
import { importLazily } from "../core/lazy_import.ts";
import type { Settings } from "../core/mod.ts";
import { type AgentSpec, type Driver, driverNameOf } from "../drivers/driver.ts";
import { createDriver } from "../drivers/registry.ts";
import type { AgentFacts, RunEvent, Store } from "../store/mod.ts";
import { loadSqlite } from "../core/sqlite.ts";

export interface PreparedAgent {
  driver: Driver;
  /** The spec as the driver will see it (a replay model pinned to its run id). */
  agent: AgentSpec;
}

export async function prepareAgent(
  store: Store,
  settings: Settings,
  agent: AgentSpec,
): Promise<PreparedAgent> {
  if (agent.kind !== "loop") {
    return { driver: await createDriver(driverNameOf(agent), settings), agent };
  }
  const loop = await importLazily<typeof import("../drivers/loop/mod.ts")>("drivers/loop/mod.ts");
  const { checkModelSpec } = await importLazily<typeof import("../model/mod.ts")>("model/mod.ts");
  const { recordingLoader } = await importLazily<typeof import("../session/replay.ts")>(
    "session/replay.ts",
  );
  let pinned = agent;
  if (agent.model?.startsWith("replay:") && agent.model.length > "replay:".length) {
    pinned = {
      ...agent,
      model: `replay:${store.resolveRunId(agent.model.slice("replay:".length))}`,
    };
  }
  const loadRecording = recordingLoader(store);
  await checkModelSpec(pinned.model, settings, { baseUrl: pinned.baseUrl, loadRecording });
  return { driver: loop.createLoopDriver({ resolve: { loadRecording } }), agent: pinned };
}

/** The model and arguments a harness run was given of its own (run.started's `agent.perRun`). */
export function perRunOfEvents(events: readonly RunEvent[]): NonNullable<AgentFacts["perRun"]> {
  const started = events.find((event) => event.type === "run.started");
  return started?.type === "run.started" ? started.payload.agent?.perRun ?? {} : {};
}

/**
 * A harness turn on a context that names no model nor arguments of its own keeps those the
 * context's last turn of that driver was given (`--model`, `--arg`): a conversation does not
 * change its model, nor lose a flag it needs, by a flag left out. Any given, and none is kept.
 */
export async function continuedAgent(
  store: Store,
  agent: AgentSpec,
  contextId: string | null,
): Promise<AgentSpec> {
  if (agent.kind !== "harness" || contextId === null) return agent;
  if (agent.model || (agent.args && agent.args.length > 0)) return agent;
  const session = store.contexts.session(contextId, agent.driver);
  if (session === null) return agent;
  await loadSqlite();
  const last = store.listRuns({ sessionId: session.session_id, limit: 1 })[0];
  if (last === undefined) return agent;
  const { model, args } = perRunOfEvents(store.readEvents(last.id).events);
  if (!model && !(args && args.length > 0)) return agent;
  return { ...agent, ...(model ? { model } : {}), ...(args?.length ? { args } : {}) };
}
