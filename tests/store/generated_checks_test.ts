// The generated validators in the tree are what the zod schemas give today: a schema changed
// without `deno task gen` fails here (and the generator itself is held to zod by
// tests/store/schema_codegen_test.ts).
import assert from "node:assert/strict";
import { generate, TARGETS } from "../../scripts/gen_checks.ts";
import { EVENT_TYPES, RUN_RECORD_FIELDS } from "../../lib/store/contracts.ts";
import { EVENT_TYPE_NAMES, RECORD_FIELDS } from "../../lib/store/contract_checks.ts";

const ROOT = new URL("../../", import.meta.url);

for (const target of TARGETS) {
  Deno.test(`${target.path} is what scripts/gen_checks.ts makes of the schemas`, () => {
    const current = Deno.readTextFileSync(new URL(target.path, ROOT));
    assert.ok(current === generate(target), `${target.path} is stale: run deno task gen`);
  });
}

Deno.test("the generated names of event types and record fields are the schemas' own", () => {
  assert.deepEqual([...EVENT_TYPE_NAMES], EVENT_TYPES);
  assert.deepEqual([...RECORD_FIELDS], RUN_RECORD_FIELDS);
});
