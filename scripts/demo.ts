// `deno task demo`: the main job on the built-in model. Until `reins run` lands it shows the
// command line and the doctor's report of a scratch data root, and says what is coming.
import { permissionFlags, sandboxFromEnv } from "./permissions.ts";

const main = new URL("../main.ts", import.meta.url).pathname;
const home = await Deno.makeTempDir({ prefix: "reins-demo-" });
const env = { ...Deno.env.toObject(), REINS_HOME: home };
const flags = permissionFlags(sandboxFromEnv(env, Deno.cwd()));
async function reins(...args: string[]): Promise<number> {
  console.log(`\n$ reins ${args.join(" ")}`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...flags, main, ...args],
    env,
  }).spawn().status;
  return status.code;
}
await reins("--help");
await reins("doctor");
console.log(`\nData root of this demo: ${home}`);
console.log(
  "Running a turn on the built-in model comes with `reins run` (issue: running sessions).",
);
