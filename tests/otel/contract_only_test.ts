// What reads runs for other systems (the trace export, the platform) reads reins's event contract
// only: a harness's own lines, kept as an event's `native`, are its driver's business.
import assert from "node:assert/strict";

const LIB = new URL("../../lib/", import.meta.url);

Deno.test("nothing in lib/otel or lib/platform reads an event's native line", async () => {
  const offenders: string[] = [];
  for (const room of ["otel", "platform"]) {
    for await (const entry of Deno.readDir(new URL(`${room}/`, LIB))) {
      if (!entry.name.endsWith(".ts")) continue;
      const text = await Deno.readTextFile(new URL(`${room}/${entry.name}`, LIB));
      for (const [index, line] of text.split("\n").entries()) {
        if (/\.native\b|\bnative\s*[:}]|\["native"\]/.test(line) && !line.trim().startsWith("//")) {
          offenders.push(`lib/${room}/${entry.name}:${index + 1}: ${line.trim()}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
});
