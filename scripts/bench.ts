// `deno task bench`: every scripts/bench/*.ts (but _lib.ts) in turn, or only those named on the
// command line (`deno task bench store platform`). Each prints its comparisons as it goes.
const dir = new URL("./bench/", import.meta.url);
const only = Deno.args;
const names = [...Deno.readDirSync(dir)]
  .map((entry) => entry.name)
  .filter((name) => name.endsWith(".ts") && !name.startsWith("_"))
  .map((name) => name.slice(0, -3))
  .filter((name) => only.length === 0 || only.includes(name))
  .sort();
let failed = 0;
for (const name of names) {
  console.log(`== ${name}`);
  try {
    const module = await import(new URL(`${name}.ts`, dir).href);
    await module.default();
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error instanceof Error ? error.stack : error}`);
  }
}
const { results } = await import("./bench/_lib.ts");
const missed = results.filter((result) => !result.met);
console.log(
  `\n${results.length} comparisons, ${missed.length} missed their goal${
    missed.map((result) => `\n  MISS ${result.name}`).join("")
  }\n${failed} benchmark files failed`,
);
Deno.exit(failed ? 1 : 0);
