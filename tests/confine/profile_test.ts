import assert from "node:assert/strict";
import { confinedCommand, type ConfineFacts, INSIDE } from "../../lib/confine/profile.ts";
import { isAllowed, parseAllowedHost } from "../../lib/confine/allow_host.ts";

const FACTS: ConfineFacts = {
  dataRoot: "/srv/reins",
  hidden: [
    { path: "/home/me/.ssh", kind: "dir" },
    { path: "/home/me/.netrc", kind: "file" },
    { path: "/tmp/secret", kind: "dir" },
  ],
  binds: [{
    source: "/srv/reins/contexts/c/harness/claude/.claude",
    target: ".claude",
    readOnly: false,
  }],
  keepEnv: ["PATH", "LC_*"],
  inherited: null,
  network: { socketDir: "/srv/reins/tmp/net-1", gatewayPort: 4100, proxyPort: 3128 },
};

/** The bubblewrap arguments between `bwrap` and `--`. */
function bwrapArgs(args: string[]): string[] {
  return args.slice(args.indexOf("bwrap") + 1, args.indexOf("--"));
}

Deno.test("confinedCommand() hides the data root and secrets after binding the working directory", () => {
  const command = confinedCommand(
    { program: "claude", args: ["-p", "hi"], cwd: "/home/me/repo", env: { A: "1" } },
    FACTS,
  );
  assert.equal(command.program, "env");
  assert.deepEqual(command.args.slice(0, 3), [
    "--ignore-signal=INT",
    "--ignore-signal=TERM",
    "bwrap",
  ]);
  const args = bwrapArgs(command.args).join(" ");
  assert.ok(
    args.startsWith("--unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc"),
  );
  assert.ok(!args.includes("--new-session"));
  const cwdAt = args.indexOf("--bind /home/me/repo /home/me/repo");
  const rootAt = args.indexOf("--tmpfs /srv/reins --remount-ro /srv/reins");
  assert.ok(cwdAt > 0 && rootAt > cwdAt, args);
  assert.ok(args.includes("--tmpfs /home/me/.ssh --remount-ro /home/me/.ssh"));
  assert.ok(args.includes("--ro-bind /dev/null /home/me/.netrc"));
  // Under the private /tmp already: nothing to hide.
  assert.ok(!args.includes("/tmp/secret"));
  assert.ok(
    args.includes(`--bind /srv/reins/contexts/c/harness/claude/.claude ${INSIDE.home}/.claude`),
  );
  assert.ok(args.includes(`--ro-bind /srv/reins/tmp/net-1 ${INSIDE.sockets}`));
  const tail = command.args.slice(command.args.indexOf("--") + 1);
  assert.deepEqual(tail.slice(0, 4), ["env", "--default-signal=INT,TERM", "sh", "-c"]);
  assert.deepEqual(tail.slice(5), ["reins-confine", "4100", "3128", "claude", "-p", "hi"]);
  assert.equal(command.env.HOME, INSIDE.home);
  assert.equal(command.env.HTTPS_PROXY, "http://127.0.0.1:3128");
  assert.equal(command.env.REINS_CONFINE_KEEP.split(" ").includes("A"), true);
  assert.equal(command.env.REINS_CONFINE_KEEP.split(" ").includes("LC_*"), true);
});

Deno.test("confinedCommand() mounts the data root first when the working directory is inside it", () => {
  const command = confinedCommand(
    { program: "sh", args: [], cwd: "/srv/reins/tmp/suite-1/work", env: {} },
    FACTS,
  );
  const args = bwrapArgs(command.args).join(" ");
  const cwdAt = args.indexOf("--bind /srv/reins/tmp/suite-1/work /srv/reins/tmp/suite-1/work");
  const rootAt = args.indexOf("--tmpfs /srv/reins ");
  assert.ok(rootAt > 0 && cwdAt > rootAt, args);
  // Read-only only once the working directory's mount point is made in it.
  assert.ok(args.indexOf("--remount-ro /srv/reins") > cwdAt, args);
});

Deno.test("confinedCommand() points ~/ values at the sandbox's home", () => {
  const command = confinedCommand(
    { program: "x", args: [], cwd: "/w", env: { CLAUDE_CONFIG_DIR: "~/.claude" } },
    { ...FACTS, network: null },
  );
  assert.equal(command.env.CLAUDE_CONFIG_DIR, `${INSIDE.home}/.claude`);
  assert.equal(command.env.HTTPS_PROXY, undefined);
  const tail = command.args.slice(command.args.indexOf("--") + 1);
  assert.deepEqual(tail.slice(5, 8), ["reins-confine", "0", "0"]);
});

Deno.test("parseAllowedHost() takes HOST and HOST:PORT and refuses the rest", () => {
  assert.deepEqual(parseAllowedHost("Example.com"), { host: "example.com", port: null });
  assert.deepEqual(parseAllowedHost("example.com:443"), { host: "example.com", port: 443 });
  assert.deepEqual(parseAllowedHost("[::1]:8080"), { host: "::1", port: 8080 });
  assert.throws(() => parseAllowedHost("https://example.com"), /expected HOST or HOST:PORT/);
  assert.throws(() => parseAllowedHost("example.com:0"), /port 0 is not 1-65535/);
  assert.throws(() => parseAllowedHost(""), /expected HOST/);
});

Deno.test("isAllowed() matches host names exactly, and the port when one is given", () => {
  const allowed = [parseAllowedHost("pypi.org:443"), parseAllowedHost("files.example")];
  assert.equal(isAllowed(allowed, "PyPI.org", 443), true);
  assert.equal(isAllowed(allowed, "pypi.org", 80), false);
  assert.equal(isAllowed(allowed, "evil.pypi.org", 443), false);
  assert.equal(isAllowed(allowed, "files.example", 8443), true);
});

Deno.test("confinedCommand() trims reins's environment itself when it may read it whole", () => {
  const command = confinedCommand(
    { program: "x", args: [], cwd: "/w", env: { REINS_PROMPT: "hi" } },
    {
      ...FACTS,
      inherited: {
        PATH: "/usr/bin",
        LC_ALL: "C",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer secret",
        HARNESS_PLATFORM_API_KEY: "platform-secret",
      },
    },
  );
  assert.equal(command.clearEnv, true);
  assert.equal(command.env.REINS_CONFINE_KEEP, undefined);
  assert.equal(command.env.PATH, "/usr/bin");
  assert.equal(command.env.LC_ALL, "C");
  assert.equal(command.env.REINS_PROMPT, "hi");
  assert.equal(command.env.OTEL_EXPORTER_OTLP_HEADERS, undefined);
  assert.equal(command.env.HARNESS_PLATFORM_API_KEY, undefined);
});
