// What a `--model SPEC` says of the model behind it, in the words a run records of its agent
// (AgentFacts, docs/events.md): `openai:MODEL` is OpenAI's MODEL, reached over the network; the
// demo, `mock:FILE` and `replay:RUN` models answer inside reins, and their kind is the model. Reads
// the spec only: no file, no endpoint, and no check that the spec is one reins can use.
import type { AgentFacts } from "../store/mod.ts";
import { DEMO_MODEL_NAME } from "./demo_model.ts";

/** The facts of the model a spec names (null or "": the demo model). */
export function modelFacts(spec: string | null): AgentFacts {
  const given = spec === null || spec === "" ? DEMO_MODEL_NAME : spec;
  const colon = given.indexOf(":");
  const kind = colon < 0 ? given : given.slice(0, colon);
  if (kind === "openai") {
    const model = given.slice(colon + 1);
    return {
      provider: "openai",
      ...(model === "" ? {} : { model }),
      inputExcludesCache: false,
      inProcess: false,
    };
  }
  return { provider: "reins", model: kind, inputExcludesCache: false, inProcess: true };
}
