// The driver for an agent spec, ready to start: each driver's module is loaded only when its kind
// runs. The built-in loop's model is checked here, before any run is recorded, so a bad --model
// fails without leaving a failed run behind; `replay:last` is pinned to its run now, since once
// this turn's run exists "last" is itself.
import { importLazily } from "../core/lazy_import.ts";
import type { Settings } from "../core/mod.ts";
import { type AgentSpec, type Driver, driverNameOf } from "../drivers/driver.ts";
import { createDriver } from "../drivers/registry.ts";
import type { Store } from "../store/mod.ts";

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
