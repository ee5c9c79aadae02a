import assert from "node:assert/strict";
import { modelFacts } from "../../lib/model/model_facts.ts";

Deno.test("modelFacts() names OpenAI's model for openai:MODEL, reached over the network", () => {
  assert.deepEqual(modelFacts("openai:gpt-4o-mini"), {
    provider: "openai",
    model: "gpt-4o-mini",
    inputExcludesCache: false,
    inProcess: false,
  });
});

Deno.test("modelFacts() gives the kind of a model answering inside reins as its model, provider reins", () => {
  const inReins = (model: string) => ({
    provider: "reins",
    model,
    inputExcludesCache: false,
    inProcess: true,
  });
  assert.deepEqual(modelFacts(null), inReins("demo"));
  assert.deepEqual(modelFacts(""), inReins("demo"));
  assert.deepEqual(modelFacts("demo"), inReins("demo"));
  assert.deepEqual(modelFacts("mock:/work/script.json"), inReins("mock"));
  assert.deepEqual(modelFacts("replay:0195f000-0000-7000-8000-000000000001"), inReins("replay"));
});
