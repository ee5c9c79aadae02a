// Scenario states for tests of the views (table, JUnit, merge): built through the state schema,
// so a state a test makes is one the runner could have written.
import type { CheckResult } from "../../lib/suite/results.ts";
import { pendingScenario, ScenarioState } from "../../lib/suite/state.ts";

export function checkResult(
  name: string,
  outcome: CheckResult["outcome"],
  fields: Partial<CheckResult> = {},
): CheckResult {
  return {
    name,
    kind: "file",
    outcome,
    met: outcome === "passed",
    checkpoint: true,
    detail: `${name} ${outcome}`,
    score: null,
    by: null,
    reason: null,
    ...fields,
  };
}

export function stateOf(
  key: string,
  status: ScenarioState["status"],
  fields: Partial<ScenarioState> = {},
  index = 0,
  repeat = 1,
): ScenarioState {
  const id = repeat === 1 ? key : `${key}.${repeat}`;
  return ScenarioState.parse({
    ...pendingScenario({ id, key, repeat, agent: null, index }, key),
    status,
    ...fields,
  });
}
