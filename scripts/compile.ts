// `deno task compile`: builds dist/reins with exactly the sandbox of scripts/permissions.ts, and
// says first what that sandbox bakes in (the binary keeps what this build saw). `deno compile`
// downloads its runtime (denort) unless DENORT_BIN points at one: offline and without it, this
// says so in one line instead of passing on the download's error.
import {
  BINARY_V8_FLAGS,
  describeSandbox,
  permissionFlags,
  sandboxFromEnv,
} from "./permissions.ts";
import { configuredPrograms } from "./invocation.ts";
import { buildBundle } from "./bundle.ts";

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
const output = `${root}dist/reins`;
// The binary runs reins's bundle (scripts/bundle.ts): its entry, and the chunks it imports lazily,
// which are not in the entry's static graph — hence --include of the bundle's directory. Its
// refusals name the data root it was built for (lib/core/sandbox.ts).
const bundleDir = await Deno.makeTempDir({ prefix: "reins-compile-bundle-" });
const entry = await buildBundle({
  outdir: bundleDir,
  origin: {
    by: "compile",
    home: sandbox.home,
    homeFrom: env.REINS_HOME ? "REINS_HOME" : "HOME",
    dirs: [],
  },
});
const args = [
  "compile",
  BINARY_V8_FLAGS,
  ...flags,
  "--config",
  `${root}deno.json`,
  "--include",
  bundleDir,
  "--output",
  output,
  entry,
];
console.error(
  [
    `deno task compile: ${output} will have this sandbox (from the environment of this build):`,
    ...describeSandbox(sandbox).map((line) => `  ${line}`),
    `deno ${args.join(" ")}`,
  ].join("\n"),
);

const child = new Deno.Command(Deno.execPath(), {
  args,
  stdout: "inherit",
  stderr: "piped",
}).spawn();
const [status, stderr] = await Promise.all([
  child.status,
  new Response(child.stderr).text(),
]);
await Deno.remove(bundleDir, { recursive: true }).catch(() => {});
if (status.success) {
  await Deno.stderr.write(new TextEncoder().encode(stderr));
  Deno.exit(0);
}
const plain = stderr.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "");
// What deno compile says when it cannot fetch denort: "Setting up base binary" and a request
// that failed (a DNS error offline, a refused connection behind a dead proxy).
if (
  /Setting up base binary|denort/.test(plain) &&
  /error sending request|dns error|Connect/.test(plain)
) {
  console.error(
    `deno task compile: cannot download Deno's runtime (denort ${Deno.version.deno}) from ` +
      "dl.deno.land; offline, set DENORT_BIN to a denort binary of that version and run again",
  );
} else {
  await Deno.stderr.write(new TextEncoder().encode(stderr));
}
Deno.exit(status.code || 1);
