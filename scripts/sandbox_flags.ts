// `deno run -A scripts/sandbox_flags.ts --start DIR --keep all|"I J …" [--entry PATH
// --config-file FILE --sums TEXT] -- ARGS…`: what scripts/reins.sh runs main.ts with for the command line ARGS started
// in DIR — on the first line the REINS_SANDBOX value (what the sandbox was built from, for a
// refusal's message), then one permission flag a line (invocation.ts). It sees only the words of
// ARGS that --keep names (1-based; the rest name nothing: reins.sh keys its cache on the same
// words) and only SANDBOX_ENV; with --entry it stores the flags in reins.sh's cache when they may
// be (launcher_cache.ts). Nothing here runs reins itself.
import { sourceRunFlags } from "./permissions.ts";
import { invocationSandbox, SANDBOX_ENV, type SandboxEnv } from "./invocation.ts";
import { storeEntry } from "./launcher_cache.ts";

function usage(message: string): never {
  console.error(`scripts/sandbox_flags.ts: ${message} (it is run by scripts/reins.sh)`);
  Deno.exit(2);
}

const options = new Map<string, string>();
const given = Deno.args;
let at = 0;
for (; at < given.length && given[at] !== "--"; at += 2) {
  if (!["--start", "--keep", "--entry", "--config-file", "--sums"].includes(given[at])) {
    usage(`unknown option ${JSON.stringify(given[at])}`);
  }
  if (at + 1 >= given.length) usage(`${given[at]} needs a value`);
  options.set(given[at], given[at + 1]);
}
const words = given.slice(at + 1);
const start = options.get("--start") ?? usage("--start DIR is missing");
const keep = options.get("--keep") ?? "all";
const kept = keep === "all" ? null : new Set(keep.split(" ").filter(Boolean).map(Number));
const args = kept === null ? words : words.filter((_, i) => kept.has(i + 1));
const env: SandboxEnv = {};
for (const name of SANDBOX_ENV) {
  const value = Deno.env.get(name);
  if (value !== undefined) env[name] = value;
}

const invocation = await invocationSandbox(args, env, start);
const { sandbox, home, homeFrom, dirs } = invocation;
const origin = JSON.stringify({ by: "launcher", home, homeFrom, dirs });
const flags = sourceRunFlags(sandbox);
const entry = options.get("--entry");
if (entry !== undefined && invocation.cacheable) {
  try {
    await storeEntry(
      { entry, sums: options.get("--sums") ?? "", config: options.get("--config-file") ?? "" },
      { config: invocation.config, startDir: start, origin, flags },
    );
  } catch {
    // A cache that cannot be written costs the next start a Deno more, nothing else.
  }
}
console.log([origin, ...flags].join("\n"));
