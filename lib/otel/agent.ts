// Who ran a run, in the GenAI conventions' terms: the agent (the harness), the provider
// (`gen_ai.provider.name`, one of the conventions' well-known values where one applies), the
// model asked for, and how the harness counts input tokens. Taken from the run's record and
// events, including the harness's own lines kept as `native`; nothing is looked up elsewhere.
import type { RunEvent, RunRecord } from "../store/contracts.ts";

export interface AgentFacts {
  /** `gen_ai.agent.name`: the harness (`claude-code`, `codex`, `reins` for the built-in loop…). */
  name: string;
  /** `gen_ai.agent.version`, when the harness said it. */
  version: string | null;
  /** `gen_ai.provider.name`. */
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

type Line = Record<string, unknown>;

function obj(value: unknown): Line {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Line : {};
}

function str(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** The first string a function finds in the events' payloads or natives. */
function firstOf(events: readonly RunEvent[], pick: (event: RunEvent) => unknown): string | null {
  for (const event of events) {
    const found = str(pick(event));
    if (found !== null) return found;
  }
  return null;
}

/** The loop's model as recorded (`openai:gpt-4o`, `demo`, `mock:/path`, `replay:RUN`). */
function loopFacts(spec: string | null): AgentFacts {
  const base = {
    name: "reins",
    version: null,
    inputExcludesCache: false,
  };
  if (spec?.startsWith("openai:")) {
    return { ...base, provider: "openai", requestModel: spec.slice(7) || null, inProcess: false };
  }
  // demo, mock:FILE and replay:RUN answer from reins itself: the spec's kind is the model.
  const kind = spec === null ? null : spec.split(":")[0];
  return { ...base, provider: "reins", requestModel: kind, inProcess: true };
}

/** opencode's `-m PROVIDER/MODEL`, in the conventions' provider names where they have one. */
const OPENCODE_PROVIDERS: Record<string, string> = {
  anthropic: "anthropic",
  openai: "openai",
  google: "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  "amazon-bedrock": "aws.bedrock",
  azure: "azure.ai.openai",
  mistral: "mistral_ai",
  groq: "groq",
  deepseek: "deepseek",
  xai: "x_ai",
  perplexity: "perplexity",
  cohere: "cohere",
};

/** The facts of a run's agent. */
export function agentOf(record: RunRecord, events: readonly RunEvent[]): AgentFacts {
  const started = events.find((event) => event.type === "run.started");
  const recordedModel = str(obj(started?.payload).model);
  switch (record.harness) {
    case "reins": {
      const spec = recordedModel ??
        firstOf(events, (e) => e.type === "model.requested" ? obj(e.payload).model : null);
      return loopFacts(spec);
    }
    case "claude-code": {
      // system/init names the model the session uses; each assistant message the one that answered.
      const init = firstOf(
        events,
        (e) => obj(e.native).subtype === "init" ? obj(e.native).model : null,
      );
      const answered = firstOf(events, (e) => obj(obj(e.native).message).model);
      return {
        name: record.harness,
        version: firstOf(events, (e) => obj(e.native).claude_code_version),
        provider: "anthropic",
        requestModel: recordedModel ?? init ?? answered,
        inputExcludesCache: true,
        inProcess: false,
      };
    }
    case "codex":
      return {
        name: record.harness,
        version: null,
        provider: "openai",
        requestModel: recordedModel,
        inputExcludesCache: false,
        inProcess: false,
      };
    case "gemini-cli":
      return {
        name: record.harness,
        version: null,
        provider: "gcp.gemini",
        requestModel: recordedModel ??
          firstOf(events, (e) => obj(e.native).type === "init" ? obj(e.native).model : null),
        inputExcludesCache: false,
        inProcess: false,
      };
    case "opencode": {
      const slash = recordedModel?.indexOf("/") ?? -1;
      const prefix = recordedModel !== null && slash > 0 ? recordedModel.slice(0, slash) : null;
      return {
        name: record.harness,
        version: null,
        provider: prefix === null ? "opencode" : OPENCODE_PROVIDERS[prefix] ?? prefix,
        requestModel: recordedModel !== null && slash > 0
          ? recordedModel.slice(slash + 1)
          : recordedModel,
        inputExcludesCache: true,
        inProcess: false,
      };
    }
    default:
      // The command driver, or a harness newer than this table: reins cannot know the provider,
      // and says which agent it was instead (a custom value, as the conventions allow).
      return {
        name: record.harness,
        version: null,
        provider: record.harness,
        requestModel: recordedModel,
        inputExcludesCache: false,
        inProcess: false,
      };
  }
}
