// `deno task reins …`: runs main.ts from a checkout under the same sandbox the binary gets, with
// the working directory the task was started from.
import { sandboxFromEnv, sourceRunFlags } from "./permissions.ts";

const cwd = Deno.env.get("INIT_CWD") ?? Deno.cwd();
const main = new URL("../main.ts", import.meta.url).pathname;
const flags = sourceRunFlags(sandboxFromEnv(Deno.env.toObject(), cwd));
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "--quiet", ...flags, main, ...Deno.args],
  cwd,
}).spawn();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => child.kill(signal));
}
Deno.exit((await child.status).code);
