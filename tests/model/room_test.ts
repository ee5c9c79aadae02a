// The model room sits below whatever calls a model: the built-in loop, a suite's judge and its
// simulated user import it, and nothing in it imports them (types included).
import assert from "node:assert/strict";
import { moduleGraph } from "../support/module_graph.ts";

Deno.test("lib/model/ imports nothing of drivers/, suite/, turn/, serve/ or cli/", async () => {
  const graph = await moduleGraph("lib/model/mod.ts");
  const above = [...graph.keys()].filter((path) =>
    /^lib\/(drivers|suite|turn|serve|cli)\//.test(path)
  );
  assert.deepEqual(above, []);
  assert.ok(graph.has("lib/model/resolve_model.ts"), [...graph.keys()].join("\n"));
});
