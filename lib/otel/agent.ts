// Who ran a run, in the GenAI conventions' terms: the agent (the harness), the provider
// (`gen_ai.provider.name`), the model asked for, how the harness counts input tokens and whether
// the model answers inside reins. Read from what the drivers recorded in reins's own events —
// `agent` on run.started and session.linked, the model calls' `modelCall` (docs/events.md) —
// never from a harness's own lines (`native`), and with no table of harnesses here: what a run
// recorded by an older reins lacks stays unknown (docs/otel.md).
import type { AgentFacts as RecordedFacts, RunEvent, RunRecord } from "../store/mod.ts";
import { modelFacts } from "../model/model_facts.ts";

export interface AgentFacts {
  /** `gen_ai.agent.name`: the harness (`claude-code`, `codex`, `reins` for the built-in loop…). */
  name: string;
  /** `gen_ai.agent.version`, when the harness said it. */
  version: string | null;
  /** `gen_ai.provider.name`: the recorded provider, else the harness's name. */
  provider: string;
  /** `gen_ai.request.model`, when known. */
  requestModel: string | null;
  /**
   * Whether the harness's input count leaves cache reads and writes out (Anthropic's
   * accounting, which opencode also uses), so they are added to make `gen_ai.usage.input_tokens`.
   */
  inputExcludesCache: boolean;
  /** Whether the model answers inside reins's process (the loop's demo, mock and replay models). */
  inProcess: boolean;
}

/** Copies into `facts` each field of `more` that `facts` does not have yet. */
function fillIn(facts: RecordedFacts, more: RecordedFacts | undefined): void {
  if (more === undefined) return;
  for (const [key, value] of Object.entries(more)) {
    if (value !== undefined && value !== null && facts[key] === undefined) facts[key] = value;
  }
}

/** The facts of a run's agent. */
export function agentOf(record: RunRecord, events: readonly RunEvent[]): AgentFacts {
  const scan = new AgentScan();
  for (const event of events) scan.add(event);
  return scan.facts(record);
}

/** agentOf() taken event by event, for a reader that sees the events once and holds none. */
export class AgentScan {
  readonly #recorded: RecordedFacts = {};
  /** The loop's `--model` spec, as its model.requested events name it. */
  #spec: string | null = null;
  /** The model that answered the first model call the harness reported. */
  #answered: string | null = null;

  add(event: RunEvent): void {
    // Only the events that carry facts matter here, so this picks types rather than switching.
    if (event.type === "run.started" || event.type === "session.linked") {
      fillIn(this.#recorded, event.payload.agent);
    } else if (event.type === "model.requested") {
      const model = (event.payload as { model?: unknown }).model;
      if (this.#spec === null && typeof model === "string" && model !== "") this.#spec = model;
    } else if (event.type === "message.completed" || event.type === "tool.started") {
      this.#answered ??= event.payload.modelCall?.model ?? null;
    }
  }

  /** The facts, once every event is in. */
  facts(record: RunRecord): AgentFacts {
    const recorded: RecordedFacts = { ...this.#recorded };
    const spec = this.#spec;
    // A loop run an older reins recorded has no agent facts, but names its model by spec: the
    // spec says what run.started's agent now would (lib/model/model_facts.ts).
    if (record.harness === "reins" && recorded.provider === undefined) {
      fillIn(recorded, spec === null ? { provider: "reins", inProcess: true } : modelFacts(spec));
    }
    return {
      name: record.harness,
      version: recorded.version ?? null,
      // Without a recorded provider (the command driver, a run of an older reins) reins says which
      // agent it was instead, a custom value as the conventions allow.
      provider: recorded.provider ?? record.harness,
      requestModel: recorded.model ?? this.#answered,
      inputExcludesCache: recorded.inputExcludesCache ?? false,
      inProcess: recorded.inProcess ?? false,
    };
  }
}
