// `deno task compile`: builds dist/reins with exactly the sandbox of scripts/permissions.ts.
// `deno compile` downloads its runtime (denort) unless DENORT_BIN points at one; offline and
// without it, this fails with Deno's own message.
import { permissionFlags, sandboxFromEnv } from "./permissions.ts";
import { configuredPrograms } from "./invocation.ts";

const env = Deno.env.toObject();
const base = sandboxFromEnv(env, ".");
// The harness programs the data root's config file names (drivers.*.program) may run too.
const sandbox = {
  ...base,
  programs: [
    ...base.programs,
    ...configuredPrograms(env.REINS_CONFIG ?? `${base.home}/config.json`),
  ],
};
const flags = permissionFlags(sandbox);
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
