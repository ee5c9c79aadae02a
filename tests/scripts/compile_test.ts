// `deno task compile` says what the binary bakes in, and offline says in one line that it needs
// DENORT_BIN instead of passing on the download's DNS error. "Offline" is made certain by a proxy
// that hangs up, so the test means the same wherever it runs.
import assert from "node:assert/strict";
import { tempDir } from "../support/reins.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const cachedRuntime = (() => {
  try {
    const dir = `${DENO_DIR}/dl/release/v${Deno.version.deno}`;
    return [...Deno.readDirSync(dir)].some((entry) => entry.name.startsWith("denort"));
  } catch {
    return false;
  }
})();

/**
 * A proxy that hangs up on every connection. Held for the whole test, so that no other test's
 * listener can be handed its port meanwhile (a closed "dead" port would be reused).
 */
function hangingUpProxy(): { url: string } & Disposable {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) conn.close();
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    [Symbol.dispose]: () => listener.close(),
  };
}

Deno.test({
  name:
    "regression: deno task compile prints the sandbox it bakes and, offline, one line about DENORT_BIN",
  // With denort in Deno's cache the build would succeed: nothing to test offline then.
  ignore: cachedRuntime || Deno.env.get("DENORT_BIN") !== undefined,
  async fn() {
    await using dir = await tempDir();
    using hangingUp = hangingUpProxy();
    const proxy = hangingUp.url;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--no-prompt", `${REPO}scripts/compile.ts`],
      cwd: dir.path,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: dir.path,
        DENO_DIR,
        REINS_HOME: `${dir.path}/data`,
        REINS_ALLOW_NET: "models.example:8443",
        REINS_ALLOW_RUN: "sh,/opt/agent",
        HTTPS_PROXY: proxy,
        HTTP_PROXY: proxy,
        NO_COLOR: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.notEqual(output.code, 0, stderr);
    const lines = stderr.trimEnd().split("\n");
    assert.match(lines[0], /^deno task compile: .*dist\/reins will have this sandbox/);
    assert.equal(
      lines[1],
      `  data root    ${dir.path}/data (baked in: --home and REINS_HOME elsewhere are refused)`,
    );
    assert.equal(
      lines[2],
      "  working dir  the directory reins is started in, and below it (--cwd elsewhere is refused)",
    );
    assert.equal(
      lines[3],
      "  net          127.0.0.1, localhost, [::1], api.openai.com, api.anthropic.com, chatgpt.com, " +
        "generativelanguage.googleapis.com, cloudcode-pa.googleapis.com, opencode.ai, " +
        "models.example:8443",
    );
    assert.match(
      lines[4],
      /^ {2}read only {4}.*\/\.codex, .*\/opencode \(the harnesses' own config\)$/,
    );
    assert.match(
      lines[5],
      /^ {2}run {10}claude, codex, gemini, opencode, kill, ps, sh, \/opt\/agent, \/usr\/bin\/setsid \(with sh/,
    );
    assert.match(lines[6], /agents start through \/usr\/bin\/setsid/);
    assert.match(lines[7], /Deno cannot confine a program it starts/);
    assert.equal(
      lines.at(-1),
      `deno task compile: cannot download Deno's runtime (denort ${Deno.version.deno}) from ` +
        "dl.deno.land; offline, set DENORT_BIN to a denort binary of that version and run again",
    );
    assert.doesNotMatch(stderr, /dns error|Connection refused|Caused by/);
  },
});
