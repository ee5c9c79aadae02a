// `deno run -A scripts/sandbox_flags.ts ARGS…`: what scripts/reins.sh runs main.ts with for the
// command line ARGS, started in the current directory — on the first line the REINS_SANDBOX
// value (what the sandbox was built from, for a refusal's message), then one permission flag a
// line (invocation.ts). Nothing here runs reins itself.
import { sourceRunFlags } from "./permissions.ts";
import { invocationSandbox, SANDBOX_ENV, type SandboxEnv } from "./invocation.ts";

const env: SandboxEnv = {};
for (const name of SANDBOX_ENV) {
  const value = Deno.env.get(name);
  if (value !== undefined) env[name] = value;
}
const { sandbox, home, homeFrom, dirs } = await invocationSandbox(Deno.args, env, Deno.cwd());
const origin = JSON.stringify({ by: "launcher", home, homeFrom, dirs });
console.log([origin, ...sourceRunFlags(sandbox)].join("\n"));
