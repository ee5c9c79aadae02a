// `deno task compile`: builds dist/reins with exactly the sandbox of scripts/permissions.ts.
// `deno compile` downloads its runtime (denort) unless DENORT_BIN points at one; offline and
// without it, this fails with Deno's own message.
import { permissionFlags, sandboxFromEnv } from "./permissions.ts";

const flags = permissionFlags(sandboxFromEnv(Deno.env.toObject(), "."));
const root = new URL("..", import.meta.url).pathname;
// Modules reins imports lazily (lib/core/lazy_import.ts) are not in main.ts's static graph: the
// binary gets all of lib/.
const args = [
  "compile",
  ...flags,
  "--include",
  `${root}lib/`,
  "--output",
  `${root}dist/reins`,
  `${root}main.ts`,
];
console.error(`deno ${args.join(" ")}`);
const status = await new Deno.Command(Deno.execPath(), {
  args,
  stdout: "inherit",
  stderr: "inherit",
})
  .spawn().status;
Deno.exit(status.code);
