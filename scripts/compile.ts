// `deno task compile`: builds dist/reins with exactly the sandbox of scripts/permissions.ts.
// `deno compile` downloads its runtime (denort) unless DENORT_BIN points at one; offline and
// without it, this fails with Deno's own message.
import { permissionFlags, sandboxFromEnv } from "./permissions.ts";

const flags = permissionFlags(sandboxFromEnv(Deno.env.toObject(), "."));
const root = new URL("..", import.meta.url).pathname;
const args = ["compile", ...flags, "--output", `${root}dist/reins`, `${root}main.ts`];
console.error(`deno ${args.join(" ")}`);
const status = await new Deno.Command(Deno.execPath(), {
  args,
  stdout: "inherit",
  stderr: "inherit",
})
  .spawn().status;
Deno.exit(status.code);
